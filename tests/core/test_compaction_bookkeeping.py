"""Compaction's bookkeeping between requests, found unpinned by ``nox -s mutate -- compaction``:
its options' limits, state per conversation and per client, streaming, and tools.

Figures are exact (tests/core/compaction_exact.py): the estimator is 10 a message plus its
characters, and a provider that reports usage reports exactly a multiple of it.
"""

from __future__ import annotations

from typing import Any

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionChatClient,
    tool,
)
from loopkit.middleware.compaction import CompactionChatClient, CompactionOptions
from loopkit.run_context import RunEvent, run_scope

from .compaction_exact import (
    SYSTEM,
    TASK,
    Model,
    StreamingModel,
    chars,
    client_for,
    elided,
    read,
    send_all,
    step,
    steps,
    stream_all,
    units,
    write,
)

# -- the options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trigger_tokens": 0}, "trigger_tokens must be a positive number of tokens, got 0"),
        ({"max_input_tokens": -5}, "max_input_tokens must be a positive number of tokens, got -5"),
        ({"trigger_tokens": 2.5}, "trigger_tokens must be a positive number of tokens, got 2.5"),
        (
            {"max_input_tokens": 1000, "target": 0.0},
            "expected 0 < target < trigger <= 1 (fractions of max_input_tokens), got "
            "target=0.0, trigger=0.8",
        ),
        ({"max_input_tokens": 1000, "target": 0.8}, "got target=0.8, trigger=0.8"),
        ({"max_input_tokens": 1000, "trigger": 1.01}, "got target=0.5, trigger=1.01"),
        (
            {"trigger_tokens": 100, "target_tokens": 100},
            "target_tokens (100) must be below trigger_tokens (100)",
        ),
        (
            {"max_input_tokens": 1000, "trigger_tokens": 1001},
            "trigger_tokens (1,001) must not exceed max_input_tokens (1,000)",
        ),
        ({"trigger_tokens": 100, "keep_recent_steps": 0}, "keep_recent_steps must be >= 1, got 0"),
        ({"trigger_tokens": 100, "min_elide_chars": -1}, "min_elide_chars must be >= 0, got -1"),
        (
            {"trigger_tokens": 100, "summary_max_tokens": 15},
            "summary_max_tokens must be >= 16, got 15",
        ),
    ],
)
def test_options_out_of_range_are_refused_naming_the_value(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        CompactionOptions(**options)
    assert message in str(raised.value)


def test_options_at_their_limits_are_accepted() -> None:
    at_limits = [
        CompactionOptions(trigger_tokens=2, target_tokens=1, min_elide_chars=0),
        CompactionOptions(max_input_tokens=1000, trigger=1.0, target=0.001),
        CompactionOptions(max_input_tokens=1000, trigger_tokens=1000),
        CompactionOptions(trigger_tokens=100, keep_recent_steps=1, summary_max_tokens=16),
    ]
    assert [(o.trigger_at, o.target_at) for o in at_limits] == [
        (2, 1),
        (1000, 1),
        (1000, 625),
        (100, 62),
    ]


def test_options_of_another_type_are_refused() -> None:
    with pytest.raises(TypeError) as raised:
        CompactionChatClient(FunctionChatClient(lambda m, o: "x"), {"trigger_tokens": 5})  # type: ignore[arg-type]
    assert str(raised.value) == (
        "options must be a CompactionOptions, e.g. CompactionOptions(max_input_tokens=200_000); "
        "got dict"
    )


# -- state: per conversation, per client, per request -------------------------------------------


async def test_another_conversation_in_the_same_run_starts_over_with_the_calibration() -> None:
    model = Model(scale=2)
    first = [SYSTEM, TASK, *steps(0, 3)]
    other_task = ChatMessage.from_text(ChatRole.USER, "Another task.")
    other = [SYSTEM, other_task, *steps(10, 4)]
    trigger = units(first) + units(other)  # between twice the first and twice the other
    client = client_for(
        model,
        trigger_tokens=trigger,
        target_tokens=trigger // 2,
        keep_recent_steps=1,
        summarize=False,
    )
    assert 2 * units(first) < trigger < 2 * units(other) and units(other) < trigger
    events = await send_all(client, first, other)
    # The other conversation is judged with the provider's scale (2) learnt from the first...
    assert events[0] == [] and len(events[1]) == 1
    assert events[1][0].data["tokens_before"] == 2 * units(other)
    # ... and compacted on its own: nothing of the first conversation is sent with it.
    sent = model.requests[1]
    assert sent[1] is other_task and not any(m in sent for m in first[2:])
    assert elided(sent) and set(elided(sent)) <= {"c10", "c11", "c12"}


OPTIONS: dict[str, Any] = {
    "trigger_tokens": 4000,
    "target_tokens": 2500,
    "keep_recent_steps": 1,
    "summarize": False,
}


@pytest.mark.parametrize("change", ["shorter", "last known message", "inside the prefix"])
async def test_a_conversation_edited_between_requests_is_compacted_afresh(change: str) -> None:
    model = Model()
    client = client_for(model, **OPTIONS)
    first = [SYSTEM, TASK, *steps(0, 5)]
    edited = list(first)
    if change == "shorter":
        edited = first[:-2]  # the last step taken back (a retried request)
    elif change == "last known message":
        edited = [*first[:-1], step(99)[1]]
        edited[-2] = step(99)[0]
    requests = [first, edited]
    if change == "inside the prefix":
        # one more step (no compaction), then the last step of the compacted prefix replaced
        grown = [*first, *step(5, result=10)]
        edited = list(grown)
        edited[len(first) - 2 : len(first)] = step(50)
        requests = [first, grown, edited]
    events = await send_all(client, *requests)
    assert len(events[0]) == 1
    # Compacted from the edited conversation itself, as a new run would compact it.
    fresh = Model()
    await send_all(client_for(fresh, **OPTIONS), edited)
    assert model.requests[-1] == fresh.requests[0]
    assert [len(m.contents) for m in model.requests[-1]] == [len(m.contents) for m in edited]


async def test_the_same_request_twice_is_not_compacted_twice() -> None:
    model = Model()
    client = client_for(
        model, trigger_tokens=4000, target_tokens=2500, keep_recent_steps=1, summarize=False
    )
    messages = [SYSTEM, TASK, *steps(0, 6)]
    events = await send_all(client, messages, messages)
    assert [len(e) for e in events] == [1, 0]
    assert model.requests[1] == model.requests[0]


async def test_two_compaction_clients_in_one_run_keep_their_own_state() -> None:
    one, two = Model(), Model()
    options = {
        "trigger_tokens": 4000,
        "target_tokens": 2500,
        "keep_recent_steps": 1,
        "summarize": False,
    }
    a, b = client_for(one, **options), client_for(two, **options)
    first = [SYSTEM, TASK, *steps(0, 6)]
    second = [SYSTEM, ChatMessage.from_text(ChatRole.USER, "Other."), *steps(20, 6)]
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for _ in range(3):  # alternating: each keeps its own compacted prefix
            await a.get_response(first)
            await b.get_response(second)
    assert len(events) == 2
    assert one.requests[2] == one.requests[0] and two.requests[2] == two.requests[0]


# -- streaming ------------------------------------------------------------------------------------


async def test_a_streamed_request_calibrates_from_usage_split_over_updates() -> None:
    model = StreamingModel(scale=3)
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(
            trigger_tokens=9000, target_tokens=5000, keep_recent_steps=1, summarize=False
        ),
        estimator=chars,
    )
    first = [SYSTEM, TASK, *steps(0, 2)]
    grown = [*first, *steps(2, 2)]
    assert units(grown) < 9000 < 3 * units(grown)
    events = await stream_all(client, first, grown)
    assert events[0] == [] and events[1][0].data["tokens_before"] == 3 * units(grown)


async def test_a_streamed_request_counts_its_tools_and_passes_its_options_on() -> None:
    model = StreamingModel()
    options = ChatOptions(tools=[read, write], model_id="m-1")
    messages = [SYSTEM, TASK, *steps(0, 3)]
    tools = chars([], options)
    trigger = units(messages) + tools // 2
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(
            trigger_tokens=trigger, target_tokens=trigger // 2, keep_recent_steps=1, summarize=False
        ),
        estimator=chars,
    )
    [events] = await stream_all(client, messages, options=options)
    assert events and events[0].data["tokens_before"] == units(messages) + tools
    assert model.options == [options]


async def test_a_streamed_request_outside_a_run_is_compacted_on_its_own() -> None:
    model = StreamingModel()
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(
            trigger_tokens=4000, target_tokens=2500, keep_recent_steps=1, summarize=False
        ),
        estimator=chars,
    )
    messages = [SYSTEM, TASK, *steps(0, 6)]
    async for _ in client.get_streaming_response(messages):
        pass
    assert elided(model.requests[0]) and units(model.requests[0]) <= 2500


# -- state and tools, found by a second mutation run ----------------------------------------


async def test_two_clients_streaming_in_one_run_keep_their_own_state() -> None:
    one, two = StreamingModel(), StreamingModel()
    options = CompactionOptions(**OPTIONS)
    a = CompactionChatClient(one.streaming(), options, estimator=chars)
    b = CompactionChatClient(two.streaming(), options, estimator=chars)
    first = [SYSTEM, TASK, *steps(0, 6)]
    second = [SYSTEM, ChatMessage.from_text(ChatRole.USER, "Other."), *steps(20, 6)]
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for _ in range(3):
            for client, messages in ((a, first), (b, second)):
                async for _ in client.get_streaming_response(messages):
                    pass
    assert len(events) == 2
    assert one.requests[2] == one.requests[0] and two.requests[2] == two.requests[0]


@tool
def small(path: str) -> str:
    """Read."""
    return path


@tool
def large(path: str, pattern: str, context: int = 3, case_sensitive: bool = False) -> str:
    """Search the files under a folder for a pattern and show each hit with context lines."""
    return path


async def test_other_tools_of_the_same_number_are_counted_anew() -> None:
    messages = [SYSTEM, TASK, *steps(0, 2)]
    with_small, with_large = ChatOptions(tools=[small]), ChatOptions(tools=[large])
    # Between the request with the small tool and the one with the large tool.
    trigger = units(messages) + chars([], with_large) - 1
    assert trigger > units(messages) + chars([], with_small)
    model = Model()
    client = client_for(
        model,
        trigger_tokens=trigger,
        target_tokens=trigger // 2,
        keep_recent_steps=1,
        summarize=False,
    )
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        await client.get_response(messages, with_small)
        assert events == []
        await client.get_response(messages, with_large)
    [event] = events
    assert event.data["tokens_before"] == units(messages) + chars([], with_large)
