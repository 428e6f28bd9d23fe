"""Exact figures for the compaction tests: an additive estimator (10 a message plus its
characters), a model that reports exactly a multiple of it, and small conversation builders."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    TextContent,
    UsageContent,
    UsageDetails,
    tool,
)
from loopkit.errors import ProviderError
from loopkit.middleware.compaction import (
    DEFAULT_SUMMARY_PROMPT,
    CompactionChatClient,
    CompactionOptions,
)
from loopkit.run_context import RunEvent, run_scope


def chars(messages: Sequence[ChatMessage], options: ChatOptions | None = None, /) -> int:
    """An exact, additive estimate: 10 a message plus the characters of what it holds."""
    total = 0
    for m in messages:
        total += 10
        for c in m.contents:
            if isinstance(c, TextContent):
                total += len(c.text)
            elif isinstance(c, FunctionCallContent):
                total += len(c.name) + len(json.dumps(c.arguments))
            elif isinstance(c, FunctionResultContent):
                total += len(c.result)
    if options is not None:
        for t in options.tools:
            total += len(t.name) + len(t.description) + len(json.dumps(t.parameters))
    return total


def units(messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> int:
    return sum(chars([m]) for m in messages) + (chars([], options) if options else 0)


@tool
def read(path: str) -> str:
    """Read a file from the repository, with line numbers, for review."""
    return path


@tool
def write(path: str, text: str, overwrite: bool = False) -> str:
    """Write a file."""
    return path


SYSTEM = ChatMessage.from_text(ChatRole.SYSTEM, "You review code.")
TASK = ChatMessage.from_text(ChatRole.USER, "Review the modules.")


def step(i: int, result: int = 1000, text: int = 0, tool: str = "read") -> list[ChatMessage]:
    call = FunctionCallContent(call_id=f"c{i}", name=tool, arguments={"n": i})
    contents: list[Any] = [TextContent(text="t" * text), call] if text else [call]
    return [
        ChatMessage(role=ChatRole.ASSISTANT, contents=contents),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[FunctionResultContent(call_id=f"c{i}", result="r" * result)],
        ),
    ]


def steps(first: int, count: int, **kw: Any) -> list[ChatMessage]:
    return [m for i in range(first, first + count) for m in step(i, **kw)]


def elided(messages: Sequence[ChatMessage]) -> list[str]:
    """The call ids whose results were elided."""
    return [
        r.call_id for m in messages for r in m.function_results if r.result.startswith("[elided:")
    ]


def summarised(messages: Sequence[ChatMessage]) -> bool:
    return any(m.text.startswith("Summary of the earlier conversation") for m in messages)


class Model:
    """Records requests (messages, options) and summary requests; reports an input of exactly
    ``scale`` times the request's estimate (none when ``scale`` is None); the summary comes with
    a usage of (50, 7) unless ``fail`` makes the summariser raise a ProviderError."""

    def __init__(
        self, scale: int | None = None, summary: str = "S.", fail: str | None = None
    ) -> None:
        self.scale = scale
        self.summary = summary
        self.fail = fail
        self.requests: list[list[ChatMessage]] = []
        self.options: list[ChatOptions | None] = []
        self.summaries: list[list[ChatMessage]] = []
        self.client = FunctionChatClient(self.reply)

    def usage(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        if self.scale is None:
            return None
        return UsageDetails(input_tokens=self.scale * units(messages, options), output_tokens=1)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        if messages[0].text == DEFAULT_SUMMARY_PROMPT:
            self.summaries.append(list(messages))
            if self.fail is not None:
                raise ProviderError(self.fail, retryable=False, status_code=400)
            return ChatResponse(
                messages=[ChatMessage.from_text(ChatRole.ASSISTANT, self.summary)],
                usage=UsageDetails(input_tokens=50, output_tokens=7),
            )
        self.requests.append(list(messages))
        self.options.append(options)
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok")],
            usage=self.usage(messages, options),
        )


def client_for(model: Model, **options: Any) -> CompactionChatClient:
    return CompactionChatClient(model.client, CompactionOptions(**options), estimator=chars)


async def send_all(
    client: CompactionChatClient, *requests: list[ChatMessage], options: ChatOptions | None = None
) -> list[list[RunEvent]]:
    """Send the requests in one run; the compaction events of each request."""
    per_request: list[list[RunEvent]] = []
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for messages in requests:
            before = len(events)
            await client.get_response(messages, options)
            per_request.append(events[before:])
    return per_request


class StreamingModel(Model):
    """Streams its answer; the usage comes in two updates (the input first, the output last),
    as Anthropic's stream reports it."""

    def streaming(self) -> Any:
        model = self

        class Client(FunctionChatClient):
            async def get_streaming_response(
                self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
            ) -> AsyncIterator[ChatResponseUpdate]:
                response = model.reply(messages, options)
                usage = response.usage
                if usage is not None:
                    first = UsageDetails(input_tokens=usage.input_tokens, output_tokens=0)
                    yield ChatResponseUpdate(contents=[UsageContent(usage=first)])
                yield ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text="ok")])
                if usage is not None:
                    last = UsageDetails(input_tokens=0, output_tokens=usage.output_tokens)
                    yield ChatResponseUpdate(contents=[UsageContent(usage=last)])

        return Client(lambda m, o: "unused")


async def stream_all(
    client: CompactionChatClient, *requests: list[ChatMessage], options: ChatOptions | None = None
) -> list[list[RunEvent]]:
    per_request: list[list[RunEvent]] = []
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for messages in requests:
            before = len(events)
            async for _ in client.get_streaming_response(messages, options):
                pass
            per_request.append(events[before:])
    return per_request
