"""Compaction behaviour an outside reviewer changed without any test noticing (issue 21): an empty
summary is refused, the provider's token count calibrates only within a sane scale, and the
summary is asked with the run's model."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    TextContent,
    UsageDetails,
)
from loopkit.middleware.compaction import (
    DEFAULT_SUMMARY_PROMPT,
    CompactionChatClient,
    CompactionOptions,
    estimate_tokens,
)
from loopkit.run_context import RunEvent, run_scope

SUMMARY_HEADER = "Summary of the earlier conversation"


def conversation(steps: int, result_chars: int = 1000, text: str = "") -> list[ChatMessage]:
    """A system message, the task, then ``steps`` steps (a read_file call and its result)."""
    messages = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You review code."),
        ChatMessage.from_text(ChatRole.USER, "Review the modules."),
    ]
    for i in range(steps):
        call = FunctionCallContent(call_id=f"c{i}", name="read_file", arguments={"path": f"m{i}"})
        contents: list[Any] = [TextContent(text=text), call] if text else [call]
        messages.append(ChatMessage(role=ChatRole.ASSISTANT, contents=contents))
        result = FunctionResultContent(call_id=f"c{i}", result="r" * result_chars)
        messages.append(ChatMessage(role=ChatRole.TOOL, contents=[result]))
    return messages


class Model:
    """Records each request (messages and options); a summary request (the summariser's system
    prompt first) is answered with ``summary``, any other with "ok" and, when ``scale`` is set,
    a reported input of exactly ``scale`` times the middleware's own estimate of it."""

    def __init__(
        self,
        summary: str = "They read modules.",
        scale: Fraction | None = None,
        estimator: Any = None,
    ) -> None:
        self.summary = summary
        self.scale = scale
        self.estimator = estimator or estimate_tokens
        self.requests: list[tuple[list[ChatMessage], ChatOptions | None]] = []
        self.client = FunctionChatClient(self.reply)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        self.requests.append((list(messages), options))
        if messages and messages[0].text == DEFAULT_SUMMARY_PROMPT:
            text = self.summary
            usage = UsageDetails(input_tokens=50, output_tokens=7)
        else:
            text, usage = "ok", None
            if self.scale is not None:
                units = sum(self.estimator([m]) for m in messages)
                usage = UsageDetails(input_tokens=int(units * self.scale), output_tokens=1)
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)], usage=usage, model_id="m"
        )

    def summary_requests(self) -> list[tuple[list[ChatMessage], ChatOptions | None]]:
        return [r for r in self.requests if r[0][0].text == DEFAULT_SUMMARY_PROMPT]

    def run_requests(self) -> list[list[ChatMessage]]:
        return [r[0] for r in self.requests if r[0][0].text != DEFAULT_SUMMARY_PROMPT]


def summarised(messages: Sequence[ChatMessage]) -> bool:
    return any(m.text.startswith(SUMMARY_HEADER) for m in messages)


# Eliding alone cannot reach this target: the oldest steps must be summarised.
NEEDS_A_SUMMARY = CompactionOptions(trigger_tokens=4000, target_tokens=2000, keep_recent_steps=2)


async def send(
    client: CompactionChatClient, *requests: list[ChatMessage], options: ChatOptions | None = None
) -> list[RunEvent]:
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        for messages in requests:
            await client.get_response(messages, options)
    return [e for e in events if e.type == "compaction"]


# -- an empty summary ---------------------------------------------------------------------------


async def test_a_real_summary_replaces_the_oldest_steps() -> None:
    """The baseline of the next test: the same run with a summariser that writes something."""
    model = Model(summary="They read m0 to m7; nothing is open.")
    client = CompactionChatClient(model.client, NEEDS_A_SUMMARY)
    [event] = await send(client, conversation(10, text="x" * 1000))
    assert event.data["strategy"] in ("summary", "elide+summary")
    [sent] = model.run_requests()
    [summary] = [m for m in sent if summarised([m])]
    assert summary.text.endswith("\nThey read m0 to m7; nothing is open.")


@pytest.mark.parametrize("empty", ["", "  \n\t "])
async def test_an_empty_summary_is_refused_and_the_run_goes_on_eliding(empty: str) -> None:
    model = Model(summary=empty)
    client = CompactionChatClient(model.client, NEEDS_A_SUMMARY)
    messages = conversation(10, text="x" * 1000)
    [event] = await send(client, messages)
    assert event.data["strategy"] == "elide"
    assert event.data["summary_error"] == "the summariser answered with no text"
    assert "summary_input_tokens" not in event.data
    [sent] = model.run_requests()
    assert not summarised(sent)
    # nothing of the conversation was dropped for a summary that says nothing
    assert len(sent) == len(messages)
    assert [m.role for m in sent] == [m.role for m in messages]


async def test_after_an_empty_summary_the_next_compaction_asks_again() -> None:
    model = Model(summary="")
    client = CompactionChatClient(model.client, NEEDS_A_SUMMARY)
    first = conversation(10, text="x" * 1000)
    grown = first + conversation(14, text="x" * 1000)[len(first) :]
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        await client.get_response(first)
        model.summary = "Now a summary."
        await client.get_response(grown)
    assert len(model.summary_requests()) == 2
    assert summarised(model.run_requests()[-1])


# -- the provider's token scale -----------------------------------------------------------------


def five_units(messages: Sequence[ChatMessage], options: ChatOptions | None = None, /) -> int:
    """The default estimate times five: every request's estimate divides by five, so a
    provider reporting a fifth of it reports exactly a fifth."""
    return 5 * estimate_tokens(messages, options)


def units(messages: Sequence[ChatMessage]) -> int:
    return sum(five_units([m]) for m in messages)


@pytest.mark.parametrize(
    ("scale", "calibrates"),
    [
        (Fraction(5), True),  # the largest scale believed
        (Fraction(3), True),
        (Fraction(51, 10), False),  # a provider counting something else (or a fixed figure)
        (Fraction(100), False),
    ],
)
async def test_a_provider_counting_more_calibrates_only_up_to_five_times_the_estimate(
    scale: Fraction, calibrates: bool
) -> None:
    model = Model(scale=scale, estimator=five_units)
    messages = conversation(8)
    before = messages[:-2]
    # The trigger is above what the estimate says of the whole conversation, and below
    # three times it: only a believed provider figure makes the second request compact.
    trigger = units(messages) + 10
    assert units(before) < trigger < 3 * units(messages)
    options = CompactionOptions(
        trigger_tokens=trigger, target_tokens=trigger // 2, keep_recent_steps=1, summarize=False
    )
    client = CompactionChatClient(model.client, options, estimator=five_units)
    events = await send(client, before, messages)
    assert bool(events) is calibrates
    if calibrates:
        assert events[0].data["tokens_before"] == int(units(messages) * scale)


@pytest.mark.parametrize(
    ("scale", "calibrates"),
    [
        (Fraction(1, 5), True),  # the smallest scale believed
        (Fraction(1, 3), True),
        (Fraction(4, 21), False),  # just below a fifth
        (Fraction(1, 1000), False),
    ],
)
async def test_a_provider_counting_less_calibrates_only_down_to_a_fifth_of_the_estimate(
    scale: Fraction, calibrates: bool
) -> None:
    model = Model(scale=scale, estimator=five_units)
    messages = conversation(8)
    before = messages[:-2]
    # The trigger is below what the estimate says of the whole conversation: it compacts,
    # unless a believed provider figure says the conversation is much smaller.
    trigger = units(before)
    assert units(messages) > trigger >= units(messages) / 3
    options = CompactionOptions(
        trigger_tokens=trigger, target_tokens=trigger // 2, keep_recent_steps=1, summarize=False
    )
    client = CompactionChatClient(model.client, options, estimator=five_units)
    events = await send(client, before, messages)
    assert bool(events) is not calibrates


# -- the summary's model ------------------------------------------------------------------------


async def test_the_summary_is_asked_with_the_runs_model() -> None:
    model = Model()
    client = CompactionChatClient(model.client, NEEDS_A_SUMMARY)
    options = ChatOptions(model_id="anthropic/claude-run-model", temperature=0.3)
    [event] = await send(client, conversation(10, text="x" * 1000), options=options)
    assert "summary" in event.data["strategy"]
    [(request, summary_options)] = model.summary_requests()
    assert summary_options is not None
    assert summary_options.model_id == "anthropic/claude-run-model"
    assert summary_options.max_output_tokens == NEEDS_A_SUMMARY.summary_max_tokens
    assert summary_options.tools == []  # a summary calls no tools
    assert [m.role for m in request] == [ChatRole.SYSTEM, ChatRole.USER]
    # the run's own request keeps its options
    [run_options] = [o for m, o in model.requests if m[0].text != DEFAULT_SUMMARY_PROMPT]
    assert run_options is options


async def test_a_summariser_of_its_own_answers_with_its_own_model() -> None:
    model, writer = Model(), Model(summary="Condensed.")
    client = CompactionChatClient(model.client, NEEDS_A_SUMMARY, summarizer=writer.client)
    options = ChatOptions(model_id="anthropic/claude-run-model")
    await send(client, conversation(10, text="x" * 1000), options=options)
    assert model.summary_requests() == []
    [(_, summary_options)] = writer.summary_requests()
    assert summary_options is not None and summary_options.model_id is None
    assert summarised(model.run_requests()[0])
