"""Streaming over litellm's real HTTP path (SSE from the fake OpenAI and Anthropic servers)."""

from __future__ import annotations

import pytest

from loopkit.abstractions import (
    ChatMessage,
    ChatOptions,
    ChatResponseUpdate,
    ChatRole,
    FunctionCallContent,
    TextContent,
    UsageContent,
    response_from_updates,
    tool,
)
from loopkit.errors import ProviderError
from loopkit.middleware.function_invocation import FunctionInvokingChatClient
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from tests.fakes.fake_llm_server import ScriptedToolCall, ScriptedUsage, Turn
from tests.providers.conftest import Wire

pytestmark = pytest.mark.integration


@tool
def lookup(key: str, limit: int = 3) -> str:
    """Look a key up."""
    return f"{key}:{limit}"


def ask() -> list[ChatMessage]:
    return [
        ChatMessage.from_text(ChatRole.SYSTEM, "Be brief."),
        ChatMessage.from_text(ChatRole.USER, "Look up alpha and beta."),
    ]


async def collect(wire: Wire, **options: object) -> list[ChatResponseUpdate]:
    client = wire.client()
    return [u async for u in client.get_streaming_response(ask(), ChatOptions(**options))]  # type: ignore[arg-type]


async def test_stream_text_tool_calls_and_usage(wire: Wire) -> None:
    wire.server.enqueue(
        Turn(
            text="Looking both up now.",
            tool_calls=(
                ScriptedToolCall("lookup", {"key": "alpha", "limit": 2}, "call_a"),
                ScriptedToolCall("lookup", {"key": "beta"}, "call_b"),
            ),
            usage=ScriptedUsage(20, 9, cache_read_input_tokens=64, cache_creation_input_tokens=16),
            stream_pieces=4,
        )
    )
    updates = await collect(wire, tools=[lookup])

    request = wire.server.requests[0].body
    assert request["stream"] is True
    if wire.format == "openai":
        assert request["stream_options"] == {"include_usage": True}

    text_updates = [u for u in updates if any(isinstance(c, TextContent) for c in u.contents)]
    assert len(text_updates) >= 2  # really streamed, not one block
    assert "".join(u.text for u in updates) == "Looking both up now."

    calls = [c for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_a", "lookup", {"key": "alpha", "limit": 2}),
        ("call_b", "lookup", {"key": "beta"}),
    ]
    assert all(c.arguments_error is None for c in calls)

    usages = [c.usage for u in updates for c in u.contents if isinstance(c, UsageContent)]
    assert len(usages) == 1
    assert isinstance(updates[-1].contents[-1], UsageContent)  # usage comes last
    usage = usages[0]
    assert usage.input_tokens == 20 + 64 + 16
    assert usage.output_tokens == 9
    assert usage.cached_input_tokens == 64
    if wire.format == "anthropic":
        assert usage.cache_creation_input_tokens == 16

    folded = response_from_updates(updates)
    assert folded.finish_reason == "tool_calls"
    assert folded.text == "Looking both up now."
    assert [c.call_id for c in folded.function_calls] == ["call_a", "call_b"]


async def test_stream_plain_text(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply("Just words here."))
    updates = await collect(wire)
    folded = response_from_updates(updates)
    assert folded.text == "Just words here."
    assert folded.finish_reason == "stop"
    assert folded.function_calls == []
    assert folded.usage is not None and folded.usage.output_tokens == 5


async def test_streamed_invalid_arguments_become_arguments_error(wire: Wire) -> None:
    wire.server.enqueue(Turn.tool_call("lookup", '{"key": "alp', call_id="c9"))
    updates = await collect(wire, tools=[lookup])
    calls = [c for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    assert len(calls) == 1
    assert calls[0].arguments == {}
    assert calls[0].arguments_error is not None and "lookup" in calls[0].arguments_error


async def test_stream_error_before_first_update_is_classified_and_retried(
    wire: Wire, recorded_sleep: tuple[list[float], object]
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.rate_limited(retry_after=3), Turn.reply("streamed after retry"))
    client = RetryingChatClient(wire.client(), RetryPolicy(), sleep=sleep)  # type: ignore[arg-type]
    updates = [u async for u in client.get_streaming_response(ask())]
    assert response_from_updates(updates).text == "streamed after retry"
    assert waits == [3.0]


async def test_stream_client_error_is_not_retryable(wire: Wire) -> None:
    wire.server.enqueue(Turn.error(400, "invalid_request_error", "bad stream request"))
    with pytest.raises(ProviderError, match="bad stream request") as caught:
        await collect(wire)
    assert caught.value.retryable is False
    assert caught.value.status_code == 400


async def test_streaming_tool_loop_two_rounds(wire: Wire) -> None:
    wire.server.enqueue(
        Turn.tool_call("lookup", {"key": "alpha"}, call_id="call_1"), Turn.reply("alpha is 3.")
    )
    loop = FunctionInvokingChatClient(wire.client())
    updates = [u async for u in loop.get_streaming_response(ask(), ChatOptions(tools=[lookup]))]
    assert "alpha is 3." in "".join(u.text for u in updates)
    assert len(wire.server.requests) == 2
    second = wire.server.requests[1].body
    assert "alpha:3" in str(second["messages"])
