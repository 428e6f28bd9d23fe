"""What compaction sends, message by message, against a reference of its documented plan.

The module promises (loopkit.middleware.compaction): old tool results are elided oldest first,
only as many as needed to reach the target; if that is not enough, the fewest oldest steps are
summarised that, with the rest elided as far as allowed, reach the target (the plan reserves
``summary_max_tokens`` for the summary, plus its message's overhead and header), and then only
as much is elided as is still needed; the system messages, the task, the latest user message
and the last ``keep_recent_steps`` steps stay verbatim; a later compaction keeps what the
earlier one did (a stable prefix) and folds the earlier summary into its own. A plan still above
the limit (``max_input_tokens``, else the trigger) keeps only the last step verbatim; with no
summary made (``summarize=False``) and the request still above the limit, the oldest steps are
dropped, a note saying how many in their place (issue 25); a request that goes out above the
limit is reported once in a row (``over_limit``).

:func:`expected` computes that plan independently from the conversation, for random
conversations, and each test compares it with what the model really received. The estimator
is exact and additive (a message costs 10 plus its characters), so every figure is an integer
the reference can recompute.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
from loopkit.middleware.compaction import CompactionChatClient, CompactionOptions
from loopkit.middleware.conversation_steps import head_end, result_stub, steps
from loopkit.middleware.token_estimate import MESSAGE_OVERHEAD
from loopkit.run_context import RunEvent, run_scope

from .compaction_exact import chars, read, units, write

SUMMARY_TEXT = "S."
HEADER = "Summary of the earlier conversation"
SUMMARY_HEADER_TEXT = (
    "Summary of the earlier conversation (condensed to save space; the task above and the "
    "latest steps are verbatim):\n"
)


# -- the reference ------------------------------------------------------------------------------


def drop_note(steps_dropped: int, summary_text: str = "") -> ChatMessage:
    """The message that stands for dropped steps (after the earlier summary's text, if any)."""
    note = (
        f"[{steps_dropped} of the earliest steps of this conversation were removed to keep the "
        "request within the model's context window. Call a tool again for anything you need "
        "from them.]"
    )
    if summary_text:
        return ChatMessage.from_text(
            ChatRole.USER, f"{SUMMARY_HEADER_TEXT}{summary_text}\n\n{note}"
        )
    return ChatMessage.from_text(ChatRole.USER, note)


@dataclass
class Compacted:
    """What a compaction left: results elided (message, content) → stub, where the verbatim
    part starts after a summary or a drop note (0: neither), the message in their place, the
    summary's text (what a drop note repeats and a later summary folds in) and the steps
    dropped so far."""

    elided: dict[tuple[int, int], str] = field(default_factory=dict)
    summary_end: int = 0
    message: ChatMessage | None = None
    summary_text: str = ""
    dropped_steps: int = 0


def calls_of(messages: Sequence[ChatMessage]) -> dict[str, FunctionCallContent]:
    return {c.call_id: c for m in messages for c in m.function_calls}


def pinned(messages: Sequence[ChatMessage], head: int) -> set[int]:
    """System messages after the head and the latest user message: always verbatim."""
    kept = {i for i in range(head, len(messages)) if messages[i].role == ChatRole.SYSTEM}
    users = [i for i in range(head, len(messages)) if messages[i].role == ChatRole.USER]
    return kept | set(users[-1:])


def expected(
    messages: Sequence[ChatMessage],
    options: CompactionOptions,
    before: Compacted,
    tools: int = 0,
    scale: float = 1.0,
    trace: list[tuple[str, float]] | None = None,
    summary: str = SUMMARY_TEXT,
) -> tuple[Compacted, str]:
    """The plan for ``messages`` after the compaction ``before``, with the provider counting
    ``scale`` tokens a unit of the estimate and the summariser writing ``summary``; what
    replaced the oldest steps ("summary", "drop" or "" for nothing). ``trace`` receives every
    total compared with the target.

    The documented order: elide; if still above the target, summarise (``summarize``); a plan
    (either) still above the limit (``max_input_tokens``, else the trigger) keeping the last
    ``keep_recent_steps`` steps keeps only the last one; with no summary made and the request
    still above the limit, drop the oldest steps (``drop_oldest``), a note in their place."""
    target = options.target_at / scale
    limit = options.limit_at
    checked = trace if trace is not None else []
    head = head_end(messages)
    start = max(head, before.summary_end)
    keep_verbatim = pinned(messages, head)
    cost = [chars([m]) for m in messages]
    calls = calls_of(messages)
    summary_cost = chars([before.message]) if before.message is not None else 0

    def view_cost(i: int) -> int:  # the message as the previous compaction left it
        saving = sum(saved(messages[i].contents[j]) for (k, j) in before.elided if k == i)
        return cost[i] - saving

    def saved(c: Any) -> int:
        return len(c.result) - len(result_stub(calls.get(c.call_id), c))

    groups = steps(messages, start)
    current = [sum(view_cost(i) for i in range(b, e)) for b, e in groups]

    def pinned_cost(a: int, b: int) -> int:
        return sum(cost[i] for i in keep_verbatim if a <= i < b)

    def plan(keep: int, reserve: float | None) -> tuple[dict[tuple[int, int], str], int, float]:
        """(elided, where the verbatim part starts, total) keeping the last ``keep`` steps, with
        a message of ``reserve`` units replacing the oldest steps if needed (None: never)."""
        movable = groups[: max(0, len(groups) - keep)]
        eligible = [
            [
                (i, j)
                for i in range(b, e)
                for j, c in enumerate(messages[i].contents)
                if isinstance(c, FunctionResultContent)
                and (i, j) not in before.elided
                and len(c.result) >= options.min_elide_chars
                and saved(c) > 0
            ]
            for b, e in movable
        ]

        def elide_from(first: int, total: float, kind: str) -> tuple[dict[Any, str], float]:
            new = {}
            for found in eligible[first:]:
                for i, j in found:
                    checked.append((kind, total))
                    if total <= target:
                        return new, total
                    c = messages[i].contents[j]
                    new[(i, j)] = result_stub(calls.get(c.call_id), c)
                    total -= saved(c)
            return new, total

        fixed = sum(cost[:head]) + tools + pinned_cost(head, start) + summary_cost
        new, total = elide_from(0, fixed + sum(current), "plain")
        checked.append(("plain", total))
        if total <= target or reserve is None or not movable:
            return {**before.elided, **new}, before.summary_end, total
        base = sum(cost[:head]) + tools + pinned_cost(head, start)
        most = [
            current[k] - sum(saved(messages[i].contents[j]) for i, j in eligible[k])
            for k in range(len(movable))
        ]
        rest = sum(current[len(movable) :])
        n = len(movable)
        for count in range(1, len(movable) + 1):
            verbatim = pinned_cost(start, movable[count - 1][1])
            checked.append(("summary", base + verbatim + reserve + sum(most[count:]) + rest))
            if base + verbatim + reserve + sum(most[count:]) + rest <= target:
                n = count
                break
        end = movable[n - 1][1]
        with_it = base + pinned_cost(start, end) + reserve + sum(current[n:])
        new, total = elide_from(n, with_it, "summary")
        kept = {k: v for k, v in before.elided.items() if k[0] >= end}
        return {**kept, **new}, end, total

    def plan_for(reserve: float | None) -> tuple[dict[tuple[int, int], str], int, float]:
        found = plan(options.keep_recent_steps, reserve)
        if found[2] * scale > limit and options.keep_recent_steps > 1:
            found = plan(1, reserve)
        return found

    reserve = options.summary_max_tokens / scale + MESSAGE_OVERHEAD + 30  # header and overhead
    elided, end, total = plan_for(reserve if options.summarize else None)
    if end != before.summary_end:
        message = ChatMessage.from_text(ChatRole.USER, SUMMARY_HEADER_TEXT + summary)
        kept = replace(before, elided=elided, summary_end=end, message=message)
        return replace(kept, summary_text=summary), "summary"
    if options.drop_oldest and total * scale > limit:
        # the note's cost is planned at its largest (a count of a million steps)
        note_cost = chars([drop_note(10**6, before.summary_text)])
        elided_d, end_d, _ = plan_for(note_cost)
        if end_d != before.summary_end:
            dropped = before.dropped_steps + sum(1 for _, e in groups if e <= end_d)
            message = drop_note(dropped, before.summary_text)
            kept = replace(before, elided=elided_d, summary_end=end_d, message=message)
            return replace(kept, dropped_steps=dropped), "drop"
    return replace(before, elided=elided), ""


def forwarded(
    messages: Sequence[ChatMessage], plan: Compacted, made_for: Sequence[ChatMessage] | None = None
) -> list[tuple[str, str]]:
    """The request the plan makes, as (role, text with results) pairs; a summary as HEADER.
    ``made_for``: the conversation the plan was made for, when ``messages`` grew since (what
    stayed verbatim before its summary was decided then)."""
    head = head_end(messages)
    out: list[tuple[str, str]] = [describe(m) for m in messages[:head]]
    start = head
    if plan.summary_end:
        assert plan.message is not None
        kept = pinned(made_for or messages, head)
        out += [describe(messages[i]) for i in sorted(kept) if i < plan.summary_end]
        out.append(describe(plan.message))
        start = plan.summary_end
    for i in range(start, len(messages)):
        stubs = {j: s for (k, j), s in plan.elided.items() if k == i}
        out.append(describe(messages[i], stubs))
    return out


def describe(message: ChatMessage, stubs: dict[int, str] | None = None) -> tuple[str, str]:
    if message.text.startswith(HEADER):
        return ("user", HEADER)
    parts = []
    for j, c in enumerate(message.contents):
        if isinstance(c, FunctionResultContent):
            parts.append(f"{c.call_id}={(stubs or {}).get(j, c.result)}")
        elif isinstance(c, FunctionCallContent):
            parts.append(f"call {c.call_id}")
        elif isinstance(c, TextContent):
            parts.append(c.text)
    return (message.role.value, " | ".join(parts))


# -- random conversations -----------------------------------------------------------------------


def conversation(rng: random.Random, steps_count: int, first_call: int = 0) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    n = first_call
    for _ in range(steps_count):
        if rng.random() < 0.12:
            messages.append(
                ChatMessage.from_text(ChatRole.SYSTEM, "note " + "n" * rng.randint(0, 300))
            )
        if rng.random() < 0.08:
            messages.append(
                ChatMessage.from_text(ChatRole.USER, "and " + "u" * rng.randint(0, 400))
            )
        calls = []
        for _ in range(rng.choice([1, 1, 2])):
            n += 1
            calls.append(FunctionCallContent(call_id=f"c{n}", name="read", arguments={"n": n}))
        text = [TextContent(text="t" * rng.randint(1, 900))] if rng.random() < 0.5 else []
        messages.append(ChatMessage(role=ChatRole.ASSISTANT, contents=[*text, *calls]))
        sizes = [rng.choice([20, 150, 399, 400, 401, 700, 1500, 3000]) for _ in calls]
        results = [
            FunctionResultContent(call_id=c.call_id, result="r" * size)
            for c, size in zip(calls, sizes, strict=True)
        ]
        if rng.random() < 0.5:
            messages.append(ChatMessage(role=ChatRole.TOOL, contents=results))
        else:
            messages += [ChatMessage(role=ChatRole.TOOL, contents=[r]) for r in results]
    if rng.random() < 0.25:  # a continued session: the user's new request comes last
        messages.append(ChatMessage.from_text(ChatRole.USER, "now " + "u" * rng.randint(0, 200)))
    return messages


class Recorder:
    """The model: records each request and summary request; reports an input of exactly
    ``scale`` times the request's estimate (none when ``scale`` is None)."""

    def __init__(self, scale: int | None = None, summary: str = SUMMARY_TEXT) -> None:
        self.scale = scale
        self.summary = summary
        self.requests: list[list[ChatMessage]] = []
        self.summaries: list[list[ChatMessage]] = []
        self.client = FunctionChatClient(self.reply)
        self.writer = FunctionChatClient(self.summarise)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        self.requests.append(list(messages))
        usage = None
        if self.scale is not None:
            usage = UsageDetails(input_tokens=self.scale * units(messages, options))
        return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok")], usage=usage)

    def summarise(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        self.summaries.append(list(messages))
        return self.summary


@dataclass
class Case:
    """One random run: the conversation, the options, the tools, the provider's scale."""

    messages: list[ChatMessage]
    options: CompactionOptions
    request_options: ChatOptions | None
    scale: int
    tools: int
    #: What the summariser writes (a long one weighs on the plans after it).
    summary: str = SUMMARY_TEXT


def random_case(rng: random.Random, steps_count: int) -> Case:
    head = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You review code."),
        ChatMessage.from_text(ChatRole.USER, "Review the modules."),
    ]
    messages = head + conversation(rng, steps_count)
    request_options = ChatOptions(tools=[read, write]) if rng.random() < 0.4 else None
    tools = chars([], request_options) if request_options else 0
    scale = rng.choice([1, 1, 2])
    options = random_options(rng, scale * (units(messages) + tools))
    return Case(messages, options, request_options, scale, tools)


def random_options(rng: random.Random, total: int, target: int | None = None) -> CompactionOptions:
    return CompactionOptions(
        trigger_tokens=total - 1,
        target_tokens=target or int(total * rng.uniform(0.15, 0.9)),
        keep_recent_steps=rng.randint(1, 4),
        summarize=rng.random() < 0.75,
        summary_max_tokens=rng.choice([16, 100, 300]),
        min_elide_chars=rng.choice([400, 400, 150, 10_000]),  # 10,000: nothing to elide
    )


def on_the_boundary(rng: random.Random, case: Case, plan: Any, kind: str | None = None) -> Case:
    """The case with its target moved onto one of the totals its plan compares with the target
    (so the plan turns on "at the target is enough"; ``kind``: only totals of the plan without
    or with a new summary), when one can be found."""
    for _ in range(4):
        found: list[tuple[str, float]] = []
        plan(case, found)
        trace = [t for k, t in found if kind in (None, k)]
        candidates = [t for t in trace if t * case.scale == int(t * case.scale) and t > 0]
        candidates = [t for t in candidates if int(t * case.scale) < case.options.trigger_at]
        if not candidates:
            return case
        target = int(rng.choice(candidates) * case.scale)
        moved = replace(case, options=replace(case.options, target_tokens=target))
        check: list[tuple[str, float]] = []
        plan(moved, check)
        if target / case.scale in [t for k, t in check if kind in (None, k)]:
            return moved
        case = moved
    return case


def summary_message_cost(sent: Sequence[ChatMessage]) -> int:
    return sum(chars([m]) for m in sent if m.text.startswith(HEADER))


async def run_case(case: Case, *requests: list[ChatMessage]) -> tuple[Recorder, list[list[Any]]]:
    """Send a calibration request (when the provider's scale is not 1), then ``requests``, in
    one run; the model and the compaction events of each request."""
    model = Recorder(scale=case.scale, summary=case.summary)
    client = CompactionChatClient(
        model.client, case.options, summarizer=model.writer, estimator=chars
    )
    per_request: list[list[Any]] = []
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        if case.scale != 1:
            await client.get_response(case.messages[:2], case.request_options)
            model.requests.clear()
        for messages in requests:
            before = len(events)
            await client.get_response(messages, case.request_options)
            per_request.append(events[before:])
    return model, per_request


def check_event(
    events: list[Any],
    case: Case,
    grown: Sequence[ChatMessage],
    unchanged: Sequence[ChatMessage],
    sent: Sequence[ChatMessage],
    before: Compacted,
    after: Compacted,
    kind: str,
    reported_over: bool = False,
) -> None:
    """The compaction event of a request: none but an over-limit report when nothing was
    compacted, else what was elided and replaced; ``over_limit`` the first time in a row a
    request goes out above the limit (``reported_over``: the request before went out above).
    ``unchanged``: the request ``grown`` makes without a new compaction."""
    limit = case.options.limit_at
    tokens_before = case.scale * (units(unchanged) + case.tools)
    tokens_after = case.scale * (units(sent) + case.tools)
    new_elided = len(set(after.elided) - set(before.elided))
    if not new_elided and not kind:
        if tokens_before > limit and not reported_over:
            [event] = events
            assert (event.data["strategy"], event.data["tokens_after"]) == ("none", tokens_before)
            assert event.data["over_limit"] == case.options.over_limit_reason(tokens_before)
        else:
            assert events == []
        return
    [event] = events
    assert (event.data["tokens_before"], event.data["tokens_after"]) == (
        tokens_before,
        tokens_after,
    )
    assert event.data["elided_results"] == new_elided
    head_size = head_end(grown)
    old_end = before.summary_end or head_size
    replaced = sum(
        1 for i in range(old_end, after.summary_end) if i not in pinned(grown, head_size)
    )
    assert event.data["summarised_messages"] == (replaced if kind == "summary" else 0)
    assert event.data.get("dropped_messages") == (replaced if kind == "drop" else None)
    strategy = "+".join(s for s, on in (("elide", new_elided), (kind, kind)) if on)
    assert event.data["strategy"] == strategy
    over = tokens_after > limit and not reported_over
    assert event.data.get("over_limit") == (
        case.options.over_limit_reason(tokens_after) if over else None
    )


@pytest.mark.parametrize("seed", range(150))
async def test_one_compaction_sends_exactly_the_documented_plan(seed: int) -> None:
    rng = random.Random(seed)
    case = random_case(rng, rng.randint(2, 14))

    def plan(c: Case, trace: list[tuple[str, float]] | None = None) -> tuple[Compacted, str]:
        return expected(
            c.messages, c.options, Compacted(), tools=c.tools, scale=c.scale, trace=trace
        )

    if rng.random() < 0.5:
        case = on_the_boundary(rng, case, plan)
    model, [events] = await run_case(case, case.messages)
    messages = case.messages
    expect, kind = plan(case)
    [sent] = model.requests
    assert [describe(m) for m in sent] == forwarded(messages, expect)
    assert len(model.summaries) == int(kind == "summary")
    if kind:  # the summary or the drop note, word for word
        assert expect.message is not None and expect.message.text in [m.text for m in sent]
    check_event(events, case, messages, messages, sent, Compacted(), expect, kind)


@pytest.mark.parametrize("seed", range(150))
async def test_a_second_compaction_keeps_the_first_and_plans_the_rest(seed: int) -> None:
    rng = random.Random(1000 + seed)
    case = random_case(rng, rng.randint(3, 10))
    case.summary = rng.choice([SUMMARY_TEXT, "S" * 1500])
    first = case.messages
    grown = first + conversation(rng, rng.randint(3, 10), first_call=1000)

    def first_plan(c: Case) -> Compacted:
        return expected(first, c.options, Compacted(), c.tools, c.scale, summary=c.summary)[0]

    def plan(c: Case, trace: list[tuple[str, float]] | None = None) -> tuple[Compacted, str]:
        # after a summary or a drop note, the plan counts its message
        before = first_plan(c)
        return expected(grown, c.options, before, c.tools, c.scale, trace, c.summary)

    if rng.random() < 0.5:
        # half of them on a boundary of the plan without a new summary: after a summary, that
        # plan counts the summary's message
        case = on_the_boundary(rng, case, plan, rng.choice([None, "plain"]))
    model, (_, second_events) = await run_case(case, first, grown)
    plan1 = first_plan(case)
    assert [describe(m) for m in model.requests[0]] == forwarded(first, plan1)
    if plan1.summary_end:
        assert plan1.message is not None
        assert summary_message_cost(model.requests[0]) == (
            chars([plan1.message]) if plan1.summary_text else 0
        )
    second = model.requests[1]
    unchanged = [*model.requests[0], *grown[len(first) :]]
    # with only a trigger (it is the limit too) compaction looks again above the trigger
    looks = case.scale * (units(unchanged) + case.tools) > case.options.trigger_at
    plan2, kind = plan(case) if looks else (plan1, "")
    first_over = case.scale * (units(model.requests[0]) + case.tools) > case.options.limit_at
    if looks:
        check_event(second_events, case, grown, unchanged, second, plan1, plan2, kind, first_over)
    else:
        assert second_events == []
    if not kind and plan2.elided == plan1.elided:
        # Not compacted again: the first request's prefix, then the new messages as they are.
        assert second[: len(model.requests[0])] == model.requests[0]
        assert [describe(m) for m in second] == forwarded(grown, plan1, made_for=first)
        return
    assert [describe(m) for m in second] == forwarded(grown, plan2)
    if kind == "summary" and plan1.summary_text:
        # the earlier summary is folded into the new one
        assert f"Earlier summary:\n{case.summary}" in model.summaries[-1][1].text
    if kind:  # the summary or the drop note, word for word (a note counts all steps dropped)
        assert plan2.message is not None and plan2.message.text in [m.text for m in second]


# -- tools count toward the request -------------------------------------------------------------


async def test_the_tool_schemas_count_toward_the_trigger_and_the_target() -> None:
    rng = random.Random(7)
    messages = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You review code."),
        ChatMessage.from_text(ChatRole.USER, "Review the modules."),
        *conversation(rng, 8),
    ]
    with_tools = ChatOptions(tools=[read, write])
    tools = chars([], with_tools)
    assert tools > 200
    # Without the tools the request fits; with them it does not.
    options = CompactionOptions(
        trigger_tokens=units(messages) + tools // 2,
        target_tokens=units(messages) // 2,
        keep_recent_steps=1,
        summarize=False,
    )
    for request_options, compacts in ((None, False), (with_tools, True)):
        model = Recorder()
        client = CompactionChatClient(model.client, options, estimator=chars)
        events: list[RunEvent] = []
        with run_scope() as run:
            run.subscribe(events.append)
            await client.get_response(messages, request_options)
        assert bool(events) is compacts
    plan, _ = expected(messages, options, Compacted(), tools=tools)
    [sent] = model.requests
    assert [describe(m) for m in sent] == forwarded(messages, plan)
    [event] = events
    assert event.data["tokens_before"] == units(messages) + tools
    assert event.data["tokens_after"] == units(sent) + tools
