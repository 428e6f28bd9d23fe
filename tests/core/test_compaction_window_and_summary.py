"""When compaction looks again and what it sends the summariser, found unpinned by
``nox -s mutate -- compaction``: the window, the wait after a compaction, the summary's usage and
event, the transcript's cuts, and which results are worth a stub.

Figures are exact (tests/core/compaction_exact.py).
"""

from __future__ import annotations

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
)
from loopkit.middleware.compaction import CompactionOptions, CompactionWarning
from loopkit.middleware.conversation_steps import result_stub
from loopkit.run_context import RunEvent, run_scope

from .compaction_exact import (
    SYSTEM,
    TASK,
    Model,
    chars,
    client_for,
    elided,
    read,
    send_all,
    step,
    steps,
    summarised,
    units,
    write,
)

# -- the window -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("keep", "scale"), [(4, None), (2, None), (3, 2)])
async def test_latest_steps_that_alone_overflow_the_window_are_not_all_kept(
    keep: int, scale: int | None
) -> None:
    model = Model(scale=scale)
    factor = scale or 1
    # The latest steps are large: kept verbatim, they alone would not fit the window.
    old = steps(0, 4, result=300)
    latest = steps(10, keep, result=2500)
    messages = [SYSTEM, TASK, *old, *latest]
    window = (units(messages) * factor) * 9 // 10
    client = client_for(
        model,
        max_input_tokens=window,
        trigger=0.8,
        target=0.5,
        keep_recent_steps=keep,
        summarize=False,
    )
    first = [SYSTEM, TASK, step(90, result=10)[0], step(90, result=10)[1]]
    await send_all(client, first, messages) if scale else await send_all(client, messages)
    sent = model.requests[-1]
    # Only the last step stays whole; the steps before it lose their results.
    assert f"c{10 + keep - 1}" not in elided(sent)
    assert {f"c{10 + i}" for i in range(keep - 1)} <= set(elided(sent))
    assert units(sent) * factor <= window


# -- when compaction looks again ----------------------------------------------------------------


async def test_with_nothing_left_to_compact_it_waits_for_a_quarter_of_the_gap() -> None:
    model = Model(fail="summariser down " + "x" * 700)
    # Short results (nothing to elide), long texts: only a summary could help, and it fails.
    base = [SYSTEM, TASK, *steps(0, 4, result=50, text=900)]
    tools_free = units(base)
    trigger, target = tools_free - 1, tools_free - 1001
    # A window far above the trigger: below it, a request that cannot be compacted may wait
    # (without one the trigger is the limit: see the test below).
    window = 10 * trigger
    client = client_for(
        model,
        max_input_tokens=window,
        trigger_tokens=trigger,
        target_tokens=target,
        keep_recent_steps=1,
    )
    quarter = (trigger - target) // 4  # 250

    def note(cost: int) -> ChatMessage:
        return ChatMessage.from_text(ChatRole.USER, "x" * (cost - 10))

    second = [*base, note(quarter - 10)]
    third = [*second, note(10)]  # a quarter of the gap larger than the first: not yet
    fourth = [*third, note(11)]  # more than a quarter: look again
    fifth = [*fourth, note(10)]
    events = await send_all(client, base, second, third, fourth, fifth)
    assert [units(r) - tools_free for r in (second, third, fourth)] == [240, 250, 261]
    assert [len(e) for e in events] == [1, 0, 0, 1, 0]
    assert len(model.summaries) == 2
    [event] = events[0]
    assert event.data == {
        "tokens_before": tools_free,
        "tokens_after": tools_free,
        "elided_results": 0,
        "summarised_messages": 0,
        "strategy": "none",
        "trigger_tokens": trigger,
        "target_tokens": target,
        "summary_error": ("summariser down " + "x" * 700)[:600],
    }
    assert model.requests[0] == base  # sent as it was


async def test_without_a_window_nothing_above_the_trigger_goes_unlooked_at() -> None:
    # As above, but the trigger is the limit: every request above it is looked at (the
    # summariser asked each time); the request over the limit is reported once in a row.
    model = Model(fail="summariser down")
    base = [SYSTEM, TASK, *steps(0, 4, result=50, text=900)]
    trigger, target = units(base) - 1, units(base) - 1001
    client = client_for(
        model,
        trigger_tokens=trigger,
        target_tokens=target,
        keep_recent_steps=1,
        drop_oldest=False,
    )
    grown = [*base, ChatMessage.from_text(ChatRole.USER, "x" * 90)]
    with pytest.warns(CompactionWarning, match="drop_oldest is off"):
        events = await send_all(client, base, base, grown)
    assert [len(e) for e in events] == [1, 1, 1]
    assert len(model.summaries) == 3
    reasons = [e[0].data.get("over_limit") for e in events]
    assert reasons == [
        CompactionOptions(trigger_tokens=trigger, drop_oldest=False).over_limit_reason(units(base)),
        None,
        None,
    ]
    assert model.requests == [base, base, grown]  # sent as they were


async def test_after_falling_short_of_the_target_it_waits_for_the_gap_again() -> None:
    model = Model()
    trigger, target = 6000, 3000
    # a window far above: the plan keeps both last steps and waits below it
    limits = {"max_input_tokens": 30_000, "trigger_tokens": trigger, "target_tokens": target}
    client = client_for(model, **limits, keep_recent_steps=2, summarize=False)
    # The last two steps are large and stay: the compaction cannot reach the target.
    messages = [SYSTEM, TASK, *steps(0, 3), *steps(10, 2, result=3000)]
    [[event]] = await send_all(client, messages)
    after = event.data["tokens_after"]
    assert trigger < after
    gap = trigger - target
    # Growing by less than the gap: no new compaction, though a step could now be elided.
    small = [*messages, *step(20, result=gap - 200)]
    large = [*messages, *step(20, result=gap + 100)]
    model2 = Model()
    client2 = client_for(model2, **limits, keep_recent_steps=2, summarize=False)
    assert [len(e) for e in await send_all(client2, messages, small)] == [1, 0]
    model3 = Model()
    client3 = client_for(model3, **limits, keep_recent_steps=2, summarize=False)
    assert [len(e) for e in await send_all(client3, messages, large)] == [1, 1]


async def test_the_next_look_is_never_later_than_the_window() -> None:
    trigger, target, window = 6000, 3000, 9400
    messages = [SYSTEM, TASK, *steps(0, 3), *steps(10, 2, result=3000)]
    options = {
        "max_input_tokens": window,
        "trigger_tokens": trigger,
        "target_tokens": target,
        "keep_recent_steps": 2,
        "summarize": False,
    }
    probe = Model()
    [[event]] = await send_all(client_for(probe, **options), messages)
    after = event.data["tokens_after"]
    assert after + (trigger - target) > window  # the gap alone would look again past the window
    # one more step that takes the request just over the window
    grown = [*messages, *step(20, result=window - after + 5 - 33)]
    assert after + units(grown[-2:]) == window + 5
    model = Model()
    events = await send_all(client_for(model, **options), messages, grown)
    assert len(events[1]) == 1  # a request over the window compacts


# -- the summary's usage and event --------------------------------------------------------------


async def test_the_summary_costs_the_run_its_tokens_and_the_event_says_so() -> None:
    model = Model()
    client = client_for(model, trigger_tokens=4000, target_tokens=1500, keep_recent_steps=1)
    messages = [SYSTEM, TASK, *steps(0, 6, result=100, text=600)]
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(events.append)
        await client.get_response(messages)
        usage = run.usage
    assert (usage.input_tokens, usage.output_tokens) == (50, 7)
    [event] = [e for e in events if e.type == "compaction"]
    sent = model.requests[0]
    assert summarised(sent)
    assert event.data == {
        "tokens_before": units(messages),
        "tokens_after": units(sent),
        "elided_results": 0,
        "summarised_messages": len(messages) - len(sent) + 1,
        "strategy": "summary",
        "trigger_tokens": 4000,
        "target_tokens": 1500,
        "summary_input_tokens": 50,
        "summary_output_tokens": 7,
    }


# -- what the summariser is given -----------------------------------------------------------------


def transcript_of(model: Model) -> str:
    return model.summaries[-1][1].text


@pytest.mark.parametrize(
    ("target", "cut"), [(20000, 1000), (2000, 200), (500, None)], ids=["1000", "200", "omitted"]
)
async def test_the_transcript_is_cut_to_fit_the_summarisers_window(
    target: int, cut: int | None
) -> None:
    model = Model()
    client = client_for(
        model,
        trigger_tokens=target + 1,
        target_tokens=target,
        keep_recent_steps=1,
        min_elide_chars=10**6,
    )
    messages = [SYSTEM, TASK, *steps(0, 11, result=3000, text=50)]
    await send_all(client, messages)
    text = transcript_of(model)
    limit = target * 4
    if cut is not None:
        assert f"read: {'r' * cut} [... 3,000 characters in all]" in text
        assert f"read: {'r' * (cut + 1)}" not in text
        assert len(text) <= limit
    else:
        assert text.startswith("[the beginning is omitted]\n")
        assert len(text) <= limit + len("[the beginning is omitted]\n")


async def test_a_later_summary_keeps_the_earlier_one_whatever_it_cuts() -> None:
    model = Model(summary="EARLIER-SUMMARY " * 5)
    client = client_for(
        model, trigger_tokens=5000, target_tokens=1500, keep_recent_steps=1, min_elide_chars=10**6
    )
    first = [SYSTEM, TASK, *steps(0, 6, result=1200, text=50)]
    grown = [*first, *steps(6, 30, result=1200, text=50)]
    events = await send_all(client, first, grown)
    assert [len(e) for e in events] == [1, 1] and len(model.summaries) == 2
    text = transcript_of(model)
    assert text.startswith("Earlier summary:\nEARLIER-SUMMARY ")
    assert "[the beginning is omitted]\n" in text
    assert len(text) <= 1500 * 4 + len("\n\n[the beginning is omitted]\n")


# -- which results are worth eliding ------------------------------------------------------------


def sized_result(call: FunctionCallContent, saving: int) -> FunctionResultContent:
    """A result whose stub is exactly ``saving`` characters shorter than it."""
    size = 50
    while True:
        result = FunctionResultContent(call_id=call.call_id, result="r" * size)
        if size - len(result_stub(call, result)) == saving:
            return result
        size += 1


@pytest.mark.parametrize(("saving", "worth_it"), [(0, False), (1, True), (2, True)])
async def test_a_result_is_elided_only_when_its_stub_is_shorter(
    saving: int, worth_it: bool
) -> None:
    call = FunctionCallContent(call_id="c0", name="read", arguments={"n": 0})
    small = sized_result(call, saving)
    messages = [
        SYSTEM,
        TASK,
        ChatMessage(role=ChatRole.ASSISTANT, contents=[call]),
        ChatMessage(role=ChatRole.TOOL, contents=[small]),
        *steps(1, 2, result=20),
    ]
    model = Model()
    client = client_for(
        model,
        trigger_tokens=units(messages) - 1,
        target_tokens=10,
        keep_recent_steps=1,
        min_elide_chars=0,
        summarize=False,
    )
    await send_all(client, messages)
    assert ("c0" in elided(model.requests[0])) is worth_it


async def test_a_small_result_beside_a_large_one_does_not_hide_it() -> None:
    calls = [FunctionCallContent(call_id=f"c{i}", name="read", arguments={"n": i}) for i in (0, 1)]
    messages = [
        SYSTEM,
        TASK,
        ChatMessage(role=ChatRole.ASSISTANT, contents=calls),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[
                FunctionResultContent(call_id="c0", result="small"),
                FunctionResultContent(call_id="c1", result="r" * 400),  # exactly the minimum
            ],
        ),
        *steps(2, 1),
    ]
    model = Model()
    client = client_for(
        model,
        trigger_tokens=units(messages) - 1,
        target_tokens=100,
        keep_recent_steps=1,
        summarize=False,
    )
    await send_all(client, messages)
    assert elided(model.requests[0]) == ["c1"]


# -- the window, the next look and the transcript, found by a second mutation run ------------


@pytest.mark.parametrize("over", [0, 1])
async def test_latest_steps_that_just_fit_the_window_are_kept(over: int) -> None:
    # With all four latest steps kept and every older result elided the request is exactly
    # `fits` units: a window of `fits` keeps them; one unit less keeps only the last step.
    messages = [SYSTEM, TASK, *steps(0, 3, result=500), *steps(10, 4, result=1500)]
    probe = Model()
    await send_all(
        client_for(
            probe,
            trigger_tokens=units(messages) - 1,
            target_tokens=10,
            keep_recent_steps=4,
            summarize=False,
        ),
        messages,
    )
    fits = units(probe.requests[0])
    window = fits - over
    model = Model()
    client = client_for(
        model,
        max_input_tokens=window,
        trigger=0.8,
        target=0.5,
        keep_recent_steps=4,
        summarize=False,
    )
    await send_all(client, messages)
    kept_whole = {"c10", "c11", "c12", "c13"} - set(elided(model.requests[0]))
    assert kept_whole == ({"c10", "c11", "c12", "c13"} if not over else {"c13"})


async def test_after_a_look_that_compacted_nothing_the_provider_count_still_calibrates() -> None:
    # Nothing can be compacted (short results, no summary); the provider counts exactly twice
    # the estimate of what was sent, tools included: the next request is judged at scale 2.
    model = Model(scale=2)
    options = ChatOptions(tools=[read, write])
    tools = chars([], options)
    base = [SYSTEM, TASK, *steps(0, 4, result=50, text=300)]
    trigger = units(base) + tools - 1
    client = client_for(
        model,
        max_input_tokens=10 * trigger,  # far above: nothing is dropped, the first goes unchanged
        trigger_tokens=trigger,
        target_tokens=trigger - 400,
        keep_recent_steps=1,
        summarize=False,
    )
    grown = [*base, *steps(4, 3, result=2000)]
    events = await send_all(client, base, grown, options=options)
    assert events[0] == []
    [event] = events[1]
    assert event.data["tokens_before"] == 2 * (units(grown) + tools)
    assert event.data["tokens_after"] == 2 * (units(model.requests[1]) + tools)


async def test_between_the_trigger_and_the_window_it_waits_for_the_window() -> None:
    trigger, target, window = 6000, 3000, 9400
    messages = [SYSTEM, TASK, *steps(0, 3), *steps(10, 2, result=3000)]
    options = {
        "max_input_tokens": window,
        "trigger_tokens": trigger,
        "target_tokens": target,
        "keep_recent_steps": 2,
        "summarize": False,
    }
    model = Model()
    client = client_for(model, **options)
    grown = [*messages, *step(20, result=100)]
    events = await send_all(client, messages, grown)
    after = events[0][0].data["tokens_after"]
    assert trigger < after + units(grown[-2:]) <= window
    assert events[1] == []  # above the trigger, below the window: not yet


async def test_a_later_summary_cut_to_short_results_keeps_the_earlier_one() -> None:
    model = Model(summary="EARLIER-SUMMARY")
    client = client_for(
        model, trigger_tokens=5000, target_tokens=2600, keep_recent_steps=1, min_elide_chars=10**6
    )
    first = [SYSTEM, TASK, *steps(0, 6, result=1200, text=50)]
    grown = [*first, *steps(6, 12, result=1200, text=50)]
    events = await send_all(client, first, grown)
    assert [len(e) for e in events] == [1, 1]
    text = transcript_of(model)
    assert "[the beginning is omitted]" not in text
    assert f"read: {'r' * 200} [... 1,200 characters in all]" in text
    assert text.startswith("Earlier summary:\nEARLIER-SUMMARY\n")


async def test_a_long_earlier_summary_takes_at_most_half_of_the_transcript() -> None:
    model = Model(summary="E" * 9000)
    client = client_for(
        model,
        trigger_tokens=5000,
        target_tokens=1500,
        keep_recent_steps=1,
        min_elide_chars=10**6,
        summary_max_tokens=16,
    )
    first = [SYSTEM, TASK, *steps(0, 6, result=1200, text=50)]
    grown = [*first, *steps(6, 30, result=1200, text=50)]
    await send_all(client, first, grown)
    text = transcript_of(model)
    limit = 1500 * 4
    earlier, rest = text.split("\n\n[the beginning is omitted]\n")
    assert earlier == ("Earlier summary:\n" + "E" * 9000)[: limit // 2]
    assert len(rest) == limit - limit // 2
