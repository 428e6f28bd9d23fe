from __future__ import annotations

import logging

import pytest

from loopkit import (
    ChatClientBuilder,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    FunctionChatClient,
    ProviderError,
    RetryingChatClient,
    RetryPolicy,
    TextContent,
)

from .helpers import user


def flaky(*errors: ProviderError) -> FunctionChatClient:
    queue = list(errors)

    def reply(messages, options):
        if queue:
            raise queue.pop(0)
        return "ok"

    return FunctionChatClient(reply)


async def no_sleep_recorder(waits: list[float]):
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return sleep


async def test_transient_errors_are_retried_and_retry_after_is_honoured() -> None:
    waits: list[float] = []
    model = flaky(
        ProviderError("429", retryable=True, status_code=429, retry_after=2.5),
        ProviderError("529", retryable=True, status_code=529),
    )
    client = RetryingChatClient(
        model,
        RetryPolicy(max_attempts=4, initial_delay=0.1, max_delay=1),
        sleep=await no_sleep_recorder(waits),
    )
    response = await client.get_response(user())
    assert isinstance(response, ChatResponse) and response.text == "ok"
    assert model.calls == 3
    assert waits[0] == 2.5
    assert 0 <= waits[1] <= 1
    assert client.retries == 2


async def test_client_errors_are_not_retried() -> None:
    model = flaky(ProviderError("bad request", retryable=False, status_code=400))
    client = RetryingChatClient(model, sleep=await no_sleep_recorder([]))
    with pytest.raises(ProviderError, match="bad request"):
        await client.get_response(user())
    assert model.calls == 1


async def test_attempts_are_capped() -> None:
    errors = [ProviderError("500", retryable=True, status_code=500) for _ in range(10)]
    model = flaky(*errors)
    client = RetryingChatClient(
        model, RetryPolicy(max_attempts=3, initial_delay=0), sleep=await no_sleep_recorder([])
    )
    with pytest.raises(ProviderError, match="500"):
        await client.get_response(user())
    assert model.calls == 3


async def test_retry_after_beyond_the_cap_fails_at_once() -> None:
    model = flaky(ProviderError("429", retryable=True, status_code=429, retry_after=600))
    client = RetryingChatClient(
        model, RetryPolicy(max_retry_after=60), sleep=await no_sleep_recorder([])
    )
    with pytest.raises(ProviderError, match="429"):
        await client.get_response(user())
    assert model.calls == 1


async def test_streaming_is_retried_before_the_first_update() -> None:
    model = flaky(ProviderError("503", retryable=True, status_code=503))
    client = RetryingChatClient(
        model, RetryPolicy(initial_delay=0), sleep=await no_sleep_recorder([])
    )
    text = "".join([u.text async for u in client.get_streaming_response(user())])
    assert text == "ok" and model.calls == 2


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


class HalfStream:
    """Streams one text update, then fails with ``error`` (a stream that broke mid-way)."""

    def __init__(self, error: ProviderError) -> None:
        self.error = error
        self.calls = 0

    async def get_response(self, messages, options=None):  # type: ignore[no-untyped-def]
        raise AssertionError("streaming only")

    async def get_streaming_response(self, messages, options=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        yield ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text="Hel")])
        raise self.error


async def test_stream_failing_after_the_first_update_is_not_retried_nor_retryable() -> None:
    """What the caller already received cannot be taken back: the retry layer does not resend,
    and it marks the error not retryable so no layer above resends it either."""
    inner = HalfStream(ProviderError("connection reset", retryable=True, status_code=None))
    waits: list[float] = []
    client = RetryingChatClient(inner, sleep=await no_sleep_recorder(waits))
    received: list[str] = []
    with pytest.raises(ProviderError, match="connection reset") as caught:
        async for update in client.get_streaming_response(user()):
            received.append(update.text)
    assert received == ["Hel"]
    assert inner.calls == 1 and waits == [] and client.retries == 0
    assert caught.value.retryable is False
    assert "cannot be replayed" in str(caught.value)


async def test_non_retryable_stream_failure_after_the_first_update_passes_unchanged() -> None:
    error = ProviderError("bad", retryable=False, status_code=400)
    client = RetryingChatClient(HalfStream(error), sleep=await no_sleep_recorder([]))
    with pytest.raises(ProviderError) as caught:
        async for _ in client.get_streaming_response(user()):
            pass
    assert caught.value is error


async def test_builder_use_retries_passes_on_retry_and_sleep() -> None:
    model = flaky(ProviderError("overloaded", retryable=True, status_code=529, retry_after=1.5))
    seen: list[tuple[int, int | None, float]] = []
    waits: list[float] = []
    client = (
        ChatClientBuilder(model)
        .use_retries(
            RetryPolicy(initial_delay=0),
            on_retry=lambda attempt, error, delay: seen.append((attempt, error.status_code, delay)),
            sleep=await no_sleep_recorder(waits),
        )
        .build()
    )
    assert (await client.get_response(user())).text == "ok"
    assert seen == [(1, 529, 1.5)]
    assert waits == [1.5]


async def test_retry_warning_redacts_what_the_error_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-live-0123456789abcdefghij"
    model = flaky(ProviderError(f"rate limited for key {secret}", retryable=True, status_code=429))
    client = RetryingChatClient(
        model, RetryPolicy(initial_delay=0), sleep=await no_sleep_recorder([])
    )
    with caplog.at_level(logging.WARNING, logger="loopkit.retry"):
        await client.get_response(user())
    assert "rate limited for key" in caplog.text
    assert secret not in caplog.text


def test_use_retries_refuses_a_policy_and_policy_fields_together() -> None:
    # Before, the fields were silently dropped when a policy was given.
    with pytest.raises(TypeError, match="not both"):
        ChatClientBuilder(flaky()).use_retries(RetryPolicy(), max_attempts=9)
