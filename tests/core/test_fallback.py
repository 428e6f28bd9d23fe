"""FallbackChatClient: a provider error hands the request to the next client; nothing else does.

Most tests use FunctionChatClient models; the last ones use the real LiteLLMChatClient against
the fake model servers on 127.0.0.1 (a 401 or 400 from the first, 200 from the second).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from loopkit import (
    ChatClientBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    TextContent,
    ToolError,
    tool,
)
from loopkit.errors import BudgetExceededError, ProviderError
from loopkit.middleware.fallback import AllClientsFailedError, FallbackChatClient, client_label
from loopkit.middleware.retry import RetryingChatClient
from loopkit.run_context import RunEvent, run_scope
from tests.fakes.fake_llm_server import FakeLLMServer, Turn

SECRET = "sk-ant-api03-" + "Zq7vKp2LmN9xRt4W" * 3
HELLO = [ChatMessage.from_text(ChatRole.USER, "hello")]


def answering(text: str = "from the backup", model_id: str | None = "backup-model") -> Any:
    def reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)], model_id=model_id
        )

    return FunctionChatClient(reply, model_id=model_id or "function")


def failing(*errors: BaseException, model_id: str = "primary-model") -> FunctionChatClient:
    """Raises the given errors in turn (the last one again and again), then never answers."""
    queue = list(errors)

    def reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        raise queue.pop(0) if len(queue) > 1 else queue[0]

    return FunctionChatClient(reply, model_id=model_id)


def unauthorised() -> ProviderError:
    return ProviderError(
        f"openai rejected the API key (HTTP 401, not retryable): invalid key {SECRET}",
        retryable=False,
        status_code=401,
        provider="openai",
    )


def overloaded() -> ProviderError:
    return ProviderError("overloaded (HTTP 529, retryable)", retryable=True, status_code=529)


async def ask(
    client: Any, messages: list[ChatMessage] | None = None, options: ChatOptions | None = None
) -> tuple[ChatResponse, list[RunEvent]]:
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        response = await client.get_response(messages or HELLO, options)
    return response, events


async def test_a_provider_error_hands_the_request_to_the_next_client() -> None:
    primary, backup = failing(unauthorised()), answering()
    response, events = await ask(FallbackChatClient(primary, [backup]))
    assert response.text == "from the backup"
    assert response.model_id == "backup-model"  # says which one answered
    assert (primary.calls, backup.calls) == (1, 1)
    [event] = events
    assert event.type == "fallback"
    assert event.data["from_client"] == "primary-model"
    assert event.data["to_client"] == "backup-model"
    assert "rejected the API key (HTTP 401" in event.data["reason"]
    assert SECRET not in event.data["reason"]
    assert event.data["status_code"] == 401 and event.data["retryable"] is False


async def test_the_response_names_the_client_when_the_provider_does_not() -> None:
    client = FallbackChatClient(
        failing(unauthorised()), [answering(model_id=None)], names=["main", "local"]
    )
    response, events = await ask(client)
    assert response.model_id == "local"
    assert (events[0].data["from_client"], events[0].data["to_client"]) == ("main", "local")


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("a bug"),
        ToolError("a tool failed"),
        BudgetExceededError("budget spent", used=10, budget=5),
        asyncio.CancelledError(),
        ValueError("messages must contain at least one message"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_errors_that_are_not_provider_errors_are_never_swallowed(
    error: BaseException,
) -> None:
    primary, backup = failing(error), answering()
    with pytest.raises(type(error)):
        await ask(FallbackChatClient(primary, [backup]))
    assert backup.calls == 0


async def test_when_every_client_fails_the_error_names_each_failure() -> None:
    third = failing(overloaded(), model_id="third-model")
    client = FallbackChatClient(failing(unauthorised()), [failing(unauthorised()), third])
    with pytest.raises(AllClientsFailedError) as caught:
        await ask(client)
    error = caught.value
    assert isinstance(error, ProviderError)
    assert str(error).startswith("all 3 clients failed: primary-model#1: ")
    assert "primary-model#2: " in str(error) and "third-model: overloaded" in str(error)
    assert SECRET not in str(error)
    assert len(error.errors) == 3
    assert error.retryable is True and error.status_code == 529  # as the last failure


async def test_one_fallback_that_fails_too_raises_its_own_error() -> None:
    client = FallbackChatClient(failing(unauthorised()), [failing(overloaded())])
    with pytest.raises(AllClientsFailedError, match="all 2 clients failed"):
        await ask(client)


async def test_a_request_naming_a_model_names_it_for_the_primary_only() -> None:
    seen: list[str | None] = []

    def backup(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        seen.append(options.model_id if options else "no options")
        return "ok"

    client = FallbackChatClient(failing(unauthorised()), [FunctionChatClient(backup)])
    options = ChatOptions(model_id="openai/gpt-primary", temperature=0.2)
    await ask(client, options=options)
    assert seen == [None]
    assert options.model_id == "openai/gpt-primary"  # the caller's options are unchanged


class Streaming:
    """A streaming model: yields ``pieces`` then raises ``error`` (if any)."""

    def __init__(self, pieces: Sequence[str], error: BaseException | None = None) -> None:
        self.pieces, self.error, self.calls = list(pieces), error, 0

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        raise NotImplementedError

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self.calls += 1
        for piece in self.pieces:
            yield ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text=piece)])
        if self.error is not None:
            raise self.error


async def test_a_stream_falls_back_only_before_its_first_update() -> None:
    backup = Streaming(["from ", "the backup"])
    client = FallbackChatClient(Streaming([], unauthorised()), [backup], names=["a", "b"])
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        updates = [u async for u in client.get_streaming_response(HELLO)]
    assert "".join(u.text for u in updates) == "from the backup"
    assert {u.model_id for u in updates} == {"b"}
    assert [e.type for e in events] == ["fallback"]

    started = Streaming(["half an answer"], unauthorised())
    backup = Streaming(["never"])
    client = FallbackChatClient(started, [backup])
    received: list[str] = []
    with pytest.raises(ProviderError, match="HTTP 401"):
        async for update in client.get_streaming_response(HELLO):
            received.append(update.text)
    assert received == ["half an answer"] and backup.calls == 0


async def test_retries_below_the_fallback_retry_each_client_first() -> None:
    primary = failing(overloaded())
    backup_errors = [overloaded()]

    def backup_reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        if backup_errors:
            raise backup_errors.pop()
        return "from the backup"

    backup = FunctionChatClient(backup_reply, model_id="backup-model")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    client = (
        ChatClientBuilder(primary)
        .use_fallback([backup])
        .use_retries(max_attempts=3, initial_delay=0, sleep=sleep)
        .build()
    )
    assert isinstance(client, FallbackChatClient)
    assert isinstance(client.inner, RetryingChatClient) and client.inner.inner is primary
    [wrapped] = client.fallbacks
    assert isinstance(wrapped, RetryingChatClient) and wrapped.inner is backup
    response, events = await ask(client)
    assert response.text == "from the backup"
    assert primary.calls == 3  # all attempts on the primary first
    assert backup.calls == 2  # one retry on the backup
    assert len(waits) == 3
    # each retry is a run event too, before the hand-over and on the backup after it
    assert [e.type for e in events] == ["retry", "retry", "fallback", "retry"]
    [event] = [e for e in events if e.type == "fallback"]
    assert event.data["from_client"] == "primary-model" and "529" in event.data["reason"]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def tool_model(rounds: int) -> FunctionChatClient:
    """Calls ``lookup`` ``rounds`` times, then answers."""

    def reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatMessage:
        done = sum(len(m.function_results) for m in messages)
        if done < rounds:
            call = FunctionCallContent(call_id=f"c{done}", name="lookup", arguments={"key": "k"})
            return ChatMessage(role=ChatRole.ASSISTANT, contents=[call])
        return ChatMessage.from_text(ChatRole.ASSISTANT, f"done after {done} lookups")

    return FunctionChatClient(reply, model_id="backup-model")


@pytest.mark.parametrize("sticky", [True, False])
async def test_a_run_sticks_to_the_client_that_answered(sticky: bool) -> None:
    primary, backup = failing(unauthorised()), tool_model(rounds=2)
    client = (
        ChatClientBuilder(primary)
        .use_function_invocation()
        .use_fallback([backup], sticky=sticky)
        .build()
    )
    response, events = await ask(client, options=ChatOptions(tools=[lookup]))
    assert response.text == "done after 2 lookups"
    assert response.model_id == "backup-model"
    assert backup.calls == 3
    assert primary.calls == (1 if sticky else 3)
    assert len(events) == primary.calls
    # A second run starts with the primary again.
    await ask(client, options=ChatOptions(tools=[lookup]))
    assert primary.calls == 2 * (1 if sticky else 3)


def test_bad_arguments_get_clear_errors() -> None:
    model = answering()
    with pytest.raises(ValueError, match="fallbacks is empty"):
        FallbackChatClient(model, [])
    with pytest.raises(TypeError, match=r"fallbacks\[1\] is a str, not a chat client"):
        FallbackChatClient(model, [model, "openai/gpt-5"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a list of chat clients"):
        FallbackChatClient(model, model)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one name per client"):
        FallbackChatClient(model, [model], names=["only one"])


def test_clients_are_labelled_by_the_model_they_call() -> None:
    assert client_label(RetryingChatClient(answering(model_id="m1"))) == "m1"

    class Anonymous:
        pass

    assert client_label(Anonymous()) == "Anonymous"


# -- the real litellm provider against the fake servers ------------------------------------------

DUMMY_KEY = "sk-loopkit-test-0123456789abcdef"


@pytest.fixture
def servers() -> Any:
    with FakeLLMServer.openai() as first, FakeLLMServer.anthropic() as second:
        yield first, second


def litellm_pair(first: FakeLLMServer, second: FakeLLMServer) -> tuple[Any, Any]:
    from loopkit.providers.litellm import LiteLLMChatClient

    return (
        LiteLLMChatClient("openai/gpt-test", api_base=first.api_base, api_key=DUMMY_KEY),
        LiteLLMChatClient(
            "anthropic/claude-sonnet-4-5", api_base=second.api_base, api_key=DUMMY_KEY
        ),
    )


@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "authentication_error"), (400, "invalid_request_error")],
)
async def test_litellm_a_rejected_request_is_answered_by_the_next_provider(
    servers: tuple[FakeLLMServer, FakeLLMServer], status: int, kind: str
) -> None:
    first, second = servers
    first.enqueue(Turn.error(status, kind, f"no: {SECRET}"))
    second.enqueue(Turn.reply("Hello from Claude."))
    primary, backup = litellm_pair(first, second)
    client = ChatClientBuilder(primary).use_fallback([backup]).use_retries(max_attempts=3).build()
    response, events = await ask(client)
    assert response.text == "Hello from Claude."
    assert response.model_id is not None and "claude-sonnet-4-5" in response.model_id
    assert len(first.requests) == 1  # a 4xx is not retried
    assert len(second.requests) == 1
    [event] = events
    assert event.data["from_client"] == "openai/gpt-test"
    assert event.data["to_client"] == "anthropic/claude-sonnet-4-5"
    assert event.data["status_code"] == status and f"HTTP {status}" in event.data["reason"]
    assert SECRET not in event.data["reason"] and DUMMY_KEY not in event.data["reason"]


@pytest.mark.integration
@pytest.mark.timeout(120)
async def test_litellm_a_run_with_tools_continues_on_the_next_provider(
    servers: tuple[FakeLLMServer, FakeLLMServer],
) -> None:
    first, second = servers
    first.enqueue(Turn.error(401, "authentication_error", "invalid x-api-key"))
    second.enqueue(Turn.tool_call("lookup", {"key": "colour"}), Turn.reply("The value is known."))
    primary, backup = litellm_pair(first, second)
    client = ChatClientBuilder(primary).use_function_invocation().use_fallback([backup]).build()
    response, events = await ask(client, options=ChatOptions(tools=[lookup]))
    assert response.text == "The value is known."
    assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    assert response.messages[1].function_results[0].result == "value of colour"
    assert len(first.requests) == 1  # the run stayed on the provider that answered
    assert len(second.requests) == 2
    assert second.requests[1].body["messages"][-1]["content"][0]["content"] == "value of colour"
    assert [e.type for e in events] == ["fallback"]


@pytest.mark.integration
@pytest.mark.timeout(120)
async def test_litellm_a_stream_rejected_before_its_first_chunk_falls_back(
    servers: tuple[FakeLLMServer, FakeLLMServer],
) -> None:
    first, second = servers
    first.enqueue(Turn.error(401, "authentication_error", "invalid key"))
    second.enqueue(Turn.reply("Streamed from Claude."))
    primary, backup = litellm_pair(first, second)
    client = FallbackChatClient(primary, [backup])
    with run_scope():
        updates = [u async for u in client.get_streaming_response(HELLO)]
    assert "".join(u.text for u in updates) == "Streamed from Claude."
    assert any(u.model_id and "claude" in u.model_id for u in updates)
