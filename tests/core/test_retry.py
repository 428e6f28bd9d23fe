from __future__ import annotations

import pytest

from loopkit import ChatResponse, FunctionChatClient, ProviderError, RetryingChatClient, RetryPolicy

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
