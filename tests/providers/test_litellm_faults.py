"""Broken connections over litellm's real HTTP path, and what the retry layer does with them.

The fake server really resets (RST, ``SO_LINGER`` 0) or closes (FIN) the TCP connection at each
point of an answer: before the status line, right after the headers, after N SSE events, part-way
through a JSON body. The rule under test:

* nothing handed to the caller yet (no text, no complete tool call): a *retryable*
  ``ProviderError``, and ``RetryingChatClient`` sends the request again (the server counts two);
* something already handed to the caller: a clear *non-retryable* ``ProviderError`` saying how much
  arrived and that the partial answer cannot be replayed, and exactly one request;
* never an empty answer marked "stop".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from loopkit.abstractions import (
    ChatMessage,
    ChatResponseUpdate,
    ChatRole,
    FunctionCallContent,
    response_from_updates,
)
from loopkit.errors import ProviderError
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from tests.fakes.fake_llm_server import Turn, WireFormat
from tests.providers.conftest import Wire

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TEXT = "Hello there, friend."

#: SSE events the fake server sends before the first text delta (OpenAI: the role chunk;
#: Anthropic: message_start, content_block_start, ping), so a cut there delivers nothing.
BEFORE_CONTENT: dict[WireFormat, int] = {"openai": 1, "anthropic": 3}
#: Events up to and including the second text delta.
AFTER_TWO_DELTAS: dict[WireFormat, int] = {"openai": 3, "anthropic": 5}
#: A slice end that drops the finish reason and everything after it (OpenAI: finish chunk, usage
#: chunk, [DONE]; Anthropic: message_delta, message_stop).
WITHOUT_FINISH: dict[WireFormat, int] = {"openai": -3, "anthropic": -2}


def ask() -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, "Say hello.")]


@dataclass(frozen=True)
class Fault:
    """One way the server breaks an answer, and what loopkit must make of it."""

    id: str
    turn: Callable[[WireFormat], Turn]
    #: True: a retryable error (and one retry); False: a non-retryable error (no retry).
    retryable: bool


STREAM_FAULTS = [
    Fault("reset-before-headers", lambda f: Turn.reply(TEXT).reset_before_headers(), True),
    Fault(
        "close-before-headers", lambda f: Turn.reply(TEXT).reset_before_headers(reset=False), True
    ),
    Fault("reset-after-headers", lambda f: Turn.reply(TEXT).cut_after(0), True),
    Fault("close-after-headers", lambda f: Turn.reply(TEXT).cut_after(0, reset=False), True),
    Fault("reset-before-content", lambda f: Turn.reply(TEXT).cut_after(BEFORE_CONTENT[f]), True),
    Fault(
        "close-before-content",
        lambda f: Turn.reply(TEXT).cut_after(BEFORE_CONTENT[f], reset=False),
        True,
    ),
    # A tool call is handed over only once its arguments are complete: cut inside them, nothing
    # reached the caller.
    Fault(
        "reset-inside-tool-arguments",
        lambda f: Turn.tool_call("lookup", {"key": "alpha", "limit": 2}).cut_after(3),
        True,
    ),
    Fault("reset-after-text", lambda f: Turn.reply(TEXT).cut_after(AFTER_TWO_DELTAS[f]), False),
    Fault(
        "close-after-text",
        lambda f: Turn.reply(TEXT).cut_after(AFTER_TWO_DELTAS[f], reset=False),
        False,
    ),
    Fault(
        "ends-without-finish-reason",
        lambda f: Turn.reply(TEXT).cut_after(WITHOUT_FINISH[f], reset=False),
        False,
    ),
    # The provider reports an error inside the stream (Anthropic's mid-answer overload).
    Fault(
        "error-event-before-content",
        lambda f: Turn.reply(TEXT).error_event_after(BEFORE_CONTENT[f]),
        True,
    ),
    Fault(
        "error-event-after-text",
        lambda f: Turn.reply(TEXT).error_event_after(AFTER_TWO_DELTAS[f]),
        False,
    ),
]

BODY_FAULTS = [
    Fault("reset-before-headers", lambda f: Turn.reply(TEXT).reset_before_headers(), True),
    Fault(
        "close-before-headers", lambda f: Turn.reply(TEXT).reset_before_headers(reset=False), True
    ),
    Fault("truncated-body-close", lambda f: Turn.reply(TEXT).truncated(40), True),
    Fault("truncated-body-reset", lambda f: Turn.reply(TEXT).truncated(40, reset=True), True),
    Fault("headers-then-reset", lambda f: Turn.reply(TEXT).truncated(0, reset=True), True),
    # Without a Content-Length the body ends with the connection: the client sees EOF inside
    # the JSON, which is a cut (retryable), not a server that speaks something else.
    Fault(
        "truncated-json-close-delimited",
        lambda f: Turn.reply(TEXT).truncated(40, announce_length=False),
        True,
    ),
    Fault(
        "empty-body-close-delimited",
        lambda f: Turn.reply(TEXT).truncated(0, announce_length=False),
        True,
    ),
    Fault("not-json-at-all", lambda f: Turn.malformed(), False),
]


async def stream_until_error(
    client: Any,
) -> tuple[list[ChatResponseUpdate], ProviderError | None]:
    updates: list[ChatResponseUpdate] = []
    try:
        async for update in client.get_streaming_response(ask()):
            updates.append(update)
    except ProviderError as e:
        return updates, e
    return updates, None


@pytest.mark.parametrize("fault", STREAM_FAULTS, ids=[f.id for f in STREAM_FAULTS])
async def test_stream_fault_is_classified(wire: Wire, fault: Fault) -> None:
    wire.server.enqueue(fault.turn(wire.format))
    updates, error = await stream_until_error(wire.client())
    assert error is not None, (
        f"a broken stream must raise, got {len(updates)} updates: "
        f"{response_from_updates(updates).text!r} finish={response_from_updates(updates).finish_reason}"
    )
    assert error.retryable is fault.retryable, str(error)
    assert error.status_code is None
    assert wire.model in str(error)
    delivered = "".join(u.text for u in updates)
    if fault.retryable:
        # Nothing reached the caller: the request can simply be sent again.
        assert updates == []
        assert "retryable" in str(error)
    else:
        assert delivered and TEXT.startswith(delivered)
        assert f"{len(delivered)} characters" in str(error)
        assert "cannot be replayed" in str(error)
        assert "not retryable" in str(error)


@pytest.mark.parametrize("fault", STREAM_FAULTS, ids=[f.id for f in STREAM_FAULTS])
async def test_retries_resend_exactly_the_retryable_stream_faults(
    wire: Wire, fault: Fault, recorded_sleep: tuple[list[float], Any]
) -> None:
    waits, sleep = recorded_sleep
    wire.server.enqueue(fault.turn(wire.format), Turn.reply("Recovered."))
    client = RetryingChatClient(wire.client(), RetryPolicy(initial_delay=0), sleep=sleep)
    updates, error = await stream_until_error(client)
    if fault.retryable:
        assert error is None
        folded = response_from_updates(updates)
        assert folded.text == "Recovered."
        assert folded.finish_reason == "stop"
        assert len(wire.server.requests) == 2
        assert client.retries == 1 and len(waits) == 1
    else:
        assert error is not None and error.retryable is False
        assert len(wire.server.requests) == 1
        assert client.retries == 0 and waits == []


@pytest.mark.parametrize("fault", BODY_FAULTS, ids=[f.id for f in BODY_FAULTS])
async def test_non_streaming_fault_is_classified_and_retried_only_when_retryable(
    wire: Wire, fault: Fault, recorded_sleep: tuple[list[float], Any]
) -> None:
    wire.server.enqueue(fault.turn(wire.format))
    with pytest.raises(ProviderError) as caught:
        await wire.client().get_response(ask())
    assert caught.value.retryable is fault.retryable, str(caught.value)
    assert wire.model in str(caught.value)

    waits, sleep = recorded_sleep
    wire.server.requests.clear()
    wire.server.enqueue(fault.turn(wire.format), Turn.reply("Recovered."))
    client = RetryingChatClient(wire.client(), RetryPolicy(initial_delay=0), sleep=sleep)
    if fault.retryable:
        assert (await client.get_response(ask())).text == "Recovered."
        assert len(wire.server.requests) == 2
        assert len(waits) == 1
    else:
        with pytest.raises(ProviderError, match="malformed response body"):
            await client.get_response(ask())
        assert len(wire.server.requests) == 1
        assert waits == []


async def test_truncated_body_says_the_connection_broke(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.reply(TEXT).truncated(40, announce_length=False))
    with pytest.raises(ProviderError) as caught:
        await openai_wire.client().get_response(ask())
    message = str(caught.value)
    assert "cut off" in message and "retryable" in message
    assert "malformed" not in message


@pytest.mark.parametrize("events", [-1, -2], ids=["without-done-or-stop", "without-usage"])
async def test_stream_complete_but_for_its_terminator_is_a_normal_answer(
    wire: Wire, events: int
) -> None:
    """The finish reason arrived, so the answer is whole: a missing ``[DONE]`` /
    ``message_stop`` (or, for OpenAI, the usage chunk after the finish) is not an error."""
    if wire.format == "anthropic" and events == -2:
        pytest.skip("Anthropic sends its finish reason in the second-to-last event")
    wire.server.enqueue(Turn.reply(TEXT).cut_after(events, reset=False))
    updates, error = await stream_until_error(wire.client())
    assert error is None
    folded = response_from_updates(updates)
    assert folded.text == TEXT
    assert folded.finish_reason == "stop"


async def test_genuinely_empty_answer_is_not_mistaken_for_a_cut(wire: Wire) -> None:
    """An answer with no text that the provider really finished (finish reason and usage sent)
    stays an empty answer: the cut detection looks at what the provider sent, not at the text."""
    wire.server.enqueue(Turn.reply(""))
    updates, error = await stream_until_error(wire.client())
    assert error is None
    folded = response_from_updates(updates)
    assert folded.text == "" and folded.finish_reason == "stop"
    assert folded.usage is not None and folded.usage.output_tokens == 5


async def test_tool_call_cut_after_the_call_completed_is_not_retryable(
    openai_wire: Wire,
) -> None:
    """Two tool calls: the first is handed over when the second starts; a cut inside the second
    call's arguments therefore comes after delivery."""
    from tests.fakes.fake_llm_server import ScriptedToolCall

    turn = Turn.calls(
        ScriptedToolCall("lookup", {"key": "alpha"}, "call_1"),
        ScriptedToolCall("lookup", {"key": "beta"}, "call_2"),
    )
    # role, call 1 start + 3 argument pieces, call 2 start + 1 piece
    openai_wire.server.enqueue(turn.cut_after(7))
    updates, error = await stream_until_error(openai_wire.client())
    calls = [c for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    assert [c.call_id for c in calls] == ["call_1"]
    assert error is not None and error.retryable is False
    assert "1 tool call" in str(error)
