"""``LiteLLMChatClient(timeout=...)`` really bounds every phase of a request, over real HTTP.

A server that stalls (before it answers, inside a stream, or by trickling a body) or an address
whose TCP connect never completes must end in a retryable timeout ``ProviderError`` (or, for a
stream that already handed text over, a non-retryable one), never a hang. Each test has a generous
pytest-timeout as a hang guard only; no test measures how fast anything is.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopkit.abstractions import ChatMessage, ChatRole, response_from_updates
from loopkit.errors import ProviderError
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from loopkit.providers.litellm import LiteLLMChatClient
from tests.fakes.fake_llm_server import FakeLLMServer, Turn, unaccepting_listener
from tests.providers.conftest import DUMMY_KEY, MODELS, Wire
from tests.providers.test_litellm_faults import AFTER_TWO_DELTAS, BEFORE_CONTENT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TIMEOUT = 1.0
TEXT = "Hello there, friend."


@pytest.fixture(scope="module", autouse=True)
def _warm_litellm() -> None:
    """One request per wire format first: litellm's lazy set-up on a process's first request
    (about a second of imports) counts against the timeout, and would fail a request meant to
    succeed within 1 s."""

    async def warm() -> None:
        for fmt in ("openai", "anthropic"):
            with FakeLLMServer(fmt) as server:  # type: ignore[arg-type]
                server.enqueue(Turn.reply("warm"), Turn.reply("warm"))
                client = LiteLLMChatClient(MODELS[fmt], api_base=server.api_base, api_key="k")  # type: ignore[index]
                await client.get_response(ask())
                await consume(client)

    asyncio.run(warm())


def ask() -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, "Say hello.")]


async def consume(client: Any) -> list[Any]:
    return [u async for u in client.get_streaming_response(ask())]


async def test_stream_that_never_starts_times_out_retryably(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply(TEXT, delay=30))
    with pytest.raises(ProviderError, match=r"timed out after 1 s") as caught:
        await consume(wire.client(timeout=TIMEOUT))
    assert caught.value.retryable is True


async def test_stream_silent_before_content_times_out_retryably(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply(TEXT).stall_after(BEFORE_CONTENT[wire.format], 30))
    with pytest.raises(ProviderError, match=r"went silent for 1 s") as caught:
        await consume(wire.client(timeout=TIMEOUT))
    assert caught.value.retryable is True
    assert "nothing was handed over" in str(caught.value)


async def test_stream_silent_after_text_is_a_non_retryable_timeout(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply(TEXT).stall_after(AFTER_TWO_DELTAS[wire.format], 30))
    received: list[str] = []
    client = wire.client(timeout=TIMEOUT)
    with pytest.raises(ProviderError, match=r"went silent for 1 s") as caught:
        async for update in client.get_streaming_response(ask()):
            received.append(update.text)
    assert caught.value.retryable is False
    assert f"{len(''.join(received))} characters of text" in str(caught.value)


async def test_trickled_body_is_cut_at_the_timeout(wire: Wire) -> None:
    """Each piece comes sooner than the timeout, the whole body later: a per-read timeout alone
    would wait for all of it; the request's deadline does not."""
    wire.server.enqueue(Turn.reply(TEXT).trickled(pause=0.6, pieces=5))
    with pytest.raises(ProviderError, match=r"timed out after 1 s") as caught:
        await wire.client(timeout=TIMEOUT).get_response(ask())
    assert caught.value.retryable is True


async def test_a_stream_that_keeps_delivering_is_not_cut(wire: Wire) -> None:
    """The stream's timeout is between chunks, not for the whole answer."""
    # 7 (OpenAI) or 9 (Anthropic) events 0.3 s apart: 1.8 s or more in all, each gap < 1 s.
    wire.server.enqueue(Turn.reply("one two three four five six").trickled(pause=0.3))
    updates = await consume(wire.client(timeout=TIMEOUT))
    folded = response_from_updates(updates)
    assert folded.text == "one two three four five six"
    assert folded.finish_reason == "stop"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
async def test_connect_phase_times_out_retryably(fmt: str, stream: bool) -> None:
    with unaccepting_listener() as url:
        base = url + ("/v1" if fmt == "openai" else "")
        client = LiteLLMChatClient(MODELS[fmt], api_base=base, api_key=DUMMY_KEY, timeout=TIMEOUT)  # type: ignore[index]
        with pytest.raises(ProviderError, match=r"timed out after 1 s") as caught:
            if stream:
                await consume(client)
            else:
                await client.get_response(ask())
    assert caught.value.retryable is True
    assert caught.value.status_code is None


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_stalled_request_is_retried_and_the_retry_answers(
    wire: Wire, stream: bool, recorded_sleep: tuple[list[float], Any]
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(Turn.reply(TEXT, delay=30), Turn.reply("In time."))
    client = RetryingChatClient(
        wire.client(timeout=TIMEOUT), RetryPolicy(initial_delay=0), sleep=sleep
    )
    if stream:
        text = response_from_updates(await consume(client)).text
    else:
        text = (await client.get_response(ask())).text
    assert text == "In time."
    assert len(wire.server.requests) == 2
    assert len(waits) == 1
