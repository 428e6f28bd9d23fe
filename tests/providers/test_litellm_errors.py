"""Failures over litellm's real HTTP path: classification, Retry-After, and the retry middleware."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from loopkit.abstractions import ChatMessage, ChatRole
from loopkit.builder import ChatClientBuilder
from loopkit.errors import ProviderError
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from loopkit.providers.litellm import LiteLLMChatClient
from loopkit.providers.litellm_errors import classify, parse_retry_after, redact
from tests.fakes.fake_llm_server import Turn
from tests.ports import closed_port
from tests.providers.conftest import DUMMY_KEY, Wire

pytestmark = pytest.mark.integration

Sleep = tuple[list[float], Callable[[float], Any]]


def ask() -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, "hello")]


def retrying(wire: Wire, sleep: Callable[[float], Any], **policy: Any) -> RetryingChatClient:
    return RetryingChatClient(wire.client(), RetryPolicy(**policy), sleep=sleep)


async def test_429_with_retry_after_is_retried_after_that_wait(
    wire: Wire, recorded_sleep: Sleep
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.rate_limited(retry_after=7), Turn.reply("finally"))
    client = retrying(wire, sleep, initial_delay=0.01, max_delay=0.02)
    response = await client.get_response(ask())
    assert response.text == "finally"
    assert waits == [7.0]  # the server's Retry-After, not the (tiny) computed backoff
    assert client.retries == 1
    assert len(wire.server.requests) == 2


async def test_retry_after_as_http_date(openai_wire: Wire, recorded_sleep: Sleep) -> None:
    waits, sleep = recorded_sleep
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    openai_wire.server.enqueue(Turn.rate_limited(retry_after=when), Turn.reply("ok"))
    response = await retrying(openai_wire, sleep).get_response(ask())
    assert response.text == "ok"
    assert len(waits) == 1
    assert 25 <= waits[0] <= 31


@pytest.mark.parametrize(
    ("turn", "status"),
    [
        (Turn.error(500, "api_error", "internal"), 500),
        (Turn.overloaded(), 529),
        (Turn.error(503, "api_error", "unavailable"), 503),
    ],
    ids=["500", "529", "503"],
)
async def test_server_errors_are_retried(
    wire: Wire, recorded_sleep: Sleep, turn: Turn, status: int
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(turn, turn, Turn.reply("recovered"))
    seen: list[ProviderError] = []
    client = RetryingChatClient(
        wire.client(),
        RetryPolicy(initial_delay=0.5, max_delay=2.0),
        sleep=sleep,
        on_retry=lambda attempt, error, delay: seen.append(error),
    )
    response = await client.get_response(ask())
    assert response.text == "recovered"
    assert len(wire.server.requests) == 3
    assert len(waits) == 2
    assert all(0 <= w <= 2.0 for w in waits)
    assert [e.status_code for e in seen] == [status, status]
    assert all(e.retryable for e in seen)


async def test_retries_give_up_after_max_attempts(wire: Wire, recorded_sleep: Sleep) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(*[Turn.overloaded()] * 3)
    client = retrying(wire, sleep, max_attempts=3, initial_delay=0.1, max_delay=0.1)
    with pytest.raises(ProviderError, match="overloaded") as caught:
        await client.get_response(ask())
    assert caught.value.status_code == 529
    assert len(wire.server.requests) == 3
    assert len(waits) == 2


@pytest.mark.parametrize(
    ("status", "error_type", "phrase"),
    [
        (400, "invalid_request_error", "invalid"),
        (401, "authentication_error", "API key"),
        (403, "permission_error", "permission"),
        (404, "not_found_error", "not found"),
        (422, "invalid_request_error", "could not process"),
    ],
)
async def test_client_errors_are_not_retried(
    wire: Wire, recorded_sleep: Sleep, status: int, error_type: str, phrase: str
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.error(status, error_type, "you sent something wrong"))
    wire.server.enqueue(Turn.reply("must not be reached"))
    with pytest.raises(ProviderError) as caught:
        await retrying(wire, sleep).get_response(ask())
    error = caught.value
    assert error.retryable is False
    assert error.status_code == status
    assert phrase in str(error)
    assert "you sent something wrong" in str(error)
    assert wire.model in str(error)
    assert len(wire.server.requests) == 1  # exactly one request: no retry
    assert waits == []


async def test_malformed_body_is_a_clear_error(wire: Wire, recorded_sleep: Sleep) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.malformed(), Turn.reply("must not be reached"))
    with pytest.raises(ProviderError, match="malformed response body") as caught:
        await retrying(wire, sleep).get_response(ask())
    assert caught.value.retryable is False
    assert len(wire.server.requests) == 1
    assert waits == []


async def test_timeout_is_a_clear_retryable_error(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply("too late", delay=10))
    client = wire.client(timeout=0.5)
    with pytest.raises(ProviderError, match=r"timed out after 0\.5 s") as caught:
        await client.get_response(ask())
    assert caught.value.retryable is True
    assert caught.value.status_code is None


async def test_timeout_then_success_through_retries(wire: Wire, recorded_sleep: Sleep) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.reply("too late", delay=10), Turn.reply("in time"))
    client = RetryingChatClient(wire.client(timeout=0.5), RetryPolicy(initial_delay=0), sleep=sleep)
    response = await client.get_response(ask())
    assert response.text == "in time"
    assert len(wire.server.requests) == 2
    assert len(waits) == 1


@pytest.mark.parametrize("model", ["openai/gpt-test", "anthropic/claude-sonnet-4-5"])
async def test_connection_refused_is_retryable(model: str) -> None:
    with closed_port() as port:  # nothing listens there, and nobody else can meanwhile
        base = f"http://127.0.0.1:{port}" + ("/v1" if model.startswith("openai") else "")
        client = LiteLLMChatClient(model, api_base=base, api_key=DUMMY_KEY, timeout=5)
        with pytest.raises(ProviderError, match="could not be reached") as caught:
            await client.get_response(ask())
    assert caught.value.retryable is True


async def test_api_key_never_appears_in_errors(wire: Wire) -> None:
    wire.server.enqueue(
        Turn.error(401, "authentication_error", f"invalid x-api-key: {DUMMY_KEY}"),
        Turn.error(400, "invalid_request_error", f"Incorrect API key provided: {DUMMY_KEY}"),
    )
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            await wire.client().get_response(ask())
        assert DUMMY_KEY not in str(caught.value)
        assert DUMMY_KEY[-10:] not in str(caught.value)


async def test_builder_use_retries_wraps_the_client(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.rate_limited(retry_after=0), Turn.reply("ok"))
    client = ChatClientBuilder(openai_wire.client()).use_retries(initial_delay=0).build()
    assert isinstance(client, RetryingChatClient)
    assert (await client.get_response(ask())).text == "ok"
    assert len(openai_wire.server.requests) == 2


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"llm_provider-retry-after": "4"}) == 4.0
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 42, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(42, abs=1)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_redact_removes_keys() -> None:
    text = "key sk-abcdefghijkl, Authorization: Bearer abc.def-ghijkl, api_key='zz9988776655'"
    cleaned = redact(text + " custom-secret-value", ["custom-secret-value"])
    for secret in ("sk-abcdefghijkl", "abc.def-ghijkl", "zz9988776655", "custom-secret-value"):
        assert secret not in cleaned
    assert "Bearer [redacted]" in cleaned


@pytest.mark.parametrize(
    ("body", "retryable"),
    [
        ('{"id": "chatcmpl-1", "choices": [{"mess', True),  # ends inside a string
        ('{"id": "chatcmpl-1", "choices": [', True),  # ends where a value must come
        ('{"id": 1, "done": tr', True),  # ends inside a literal
        ("", True),  # nothing arrived
        ("<html>502 Bad Gateway</html>", False),  # another kind of document
        ('{"id": 1} and then more', False),  # complete JSON followed by garbage
        ('{"id": 1, "x": nope}', False),  # broken in the middle, not at the end
    ],
    ids=["string", "array", "literal", "empty", "html", "extra-data", "broken-middle"],
)
def test_json_cut_at_its_end_is_retryable_and_other_broken_bodies_are_not(
    body: str, retryable: bool
) -> None:
    import json

    try:
        json.loads(body)
    except json.JSONDecodeError as e:
        error = classify(e, model="openai/x", provider="openai")
    else:
        raise AssertionError(f"{body!r} parsed")
    assert error.retryable is retryable, str(error)
    assert ("cut off" in str(error)) is retryable
    assert ("malformed response body" in str(error)) is not retryable
    assert error.__cause__ is None
