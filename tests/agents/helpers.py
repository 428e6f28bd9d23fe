"""Small builders for agent tests: scripted replies as ``FunctionChatClient`` functions."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from typing import Any

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    TextContent,
    UsageDetails,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calls(*calls: tuple[str, dict[str, Any]], text: str = "", usage: int = 0) -> ChatResponse:
    """An assistant reply with optional text and function calls (ids from the tool name and
    arguments, so they are stable between runs)."""
    contents: list[Any] = [TextContent(text=text)] if text else []
    for name, args in calls:
        call_id = f"{name}-" + "-".join(f"{k}{v}" for k, v in sorted(args.items()))
        contents.append(FunctionCallContent(call_id=call_id, name=name, arguments=args))
    return ChatResponse(
        messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=contents)],
        usage=UsageDetails(input_tokens=usage, output_tokens=0) if usage else None,
        finish_reason="tool_calls" if calls else "stop",
        model_id="fn",
    )


def answer(text: str, usage: int = 0) -> ChatResponse:
    """A final text reply."""
    return calls(text=text, usage=usage)


class Replies:
    """Replies in order (a ``FunctionChatClient`` function) and records what each request got."""

    def __init__(self, *replies: ChatResponse | Exception) -> None:
        self.replies = list(replies)
        self.sent: list[list[ChatMessage]] = []
        self.options: list[ChatOptions | None] = []

    def __call__(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        self.sent.append(list(messages))
        self.options.append(options)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply.model_copy(deep=True)

    def client(self) -> FunctionChatClient:
        return FunctionChatClient(self)


def model_of(fn: Callable[[Sequence[ChatMessage], ChatOptions | None], Any]) -> FunctionChatClient:
    return FunctionChatClient(fn)


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]
