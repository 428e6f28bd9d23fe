"""What compaction sends, message by message, against a reference of its documented plan.

The module promises (loopkit.middleware.compaction): old tool results are elided oldest first,
only as many as needed to reach the target; if that is not enough, the fewest oldest steps are
summarised that, with the rest elided as far as allowed, reach the target (the plan reserves
``summary_max_tokens`` for the summary, plus its message's overhead and header), and then only
as much is elided as is still needed; the system messages, the task, the latest user message
and the last ``keep_recent_steps`` steps stay verbatim; a later compaction keeps what the
earlier one did (a stable prefix) and folds the earlier summary into its own.

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


@dataclass
class Compacted:
    """What a compaction left: results elided (message, content) → stub, where the verbatim
    part starts after a summary (0: no summary)."""

    elided: dict[tuple[int, int], str] = field(default_factory=dict)
    summary_end: int = 0


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
    summary_cost: int = 0,
    scale: float = 1.0,
    trace: list[tuple[str, float]] | None = None,
) -> tuple[Compacted, bool]:
    """The plan for ``messages`` after the compaction ``before`` (whose summary message costs
    ``summary_cost``), with the provider counting ``scale`` tokens a unit of the estimate; True
    when a new summary is made. ``trace`` receives every total compared with the target."""
    target = options.target_at / scale
    checked = trace if trace is not None else []
    head = head_end(messages)
    start = max(head, before.summary_end)
    keep_verbatim = pinned(messages, head)
    cost = [chars([m]) for m in messages]
    calls = calls_of(messages)

    def view_cost(i: int) -> int:  # the message as the previous compaction left it
        saving = sum(saved(messages[i].contents[j]) for (k, j) in before.elided if k == i)
        return cost[i] - saving

    def saved(c: Any) -> int:
        return len(c.result) - len(result_stub(calls.get(c.call_id), c))

    groups = steps(messages, start)
    movable = groups[: max(0, len(groups) - options.keep_recent_steps)]
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
    current = [sum(view_cost(i) for i in range(b, e)) for b, e in groups]

    def pinned_cost(a: int, b: int) -> int:
        return sum(cost[i] for i in keep_verbatim if a <= i < b)

    def elide_from(first: int, total: float, kind: str) -> tuple[dict[tuple[int, int], str], float]:
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
    if total <= target or not options.summarize or not movable:
        return Compacted({**before.elided, **new}, before.summary_end), False
    reserve = options.summary_max_tokens / scale + MESSAGE_OVERHEAD + 30  # header and overhead
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
    new, _ = elide_from(n, base + pinned_cost(start, end) + reserve + sum(current[n:]), "summary")
    kept = {k: v for k, v in before.elided.items() if k[0] >= end}
    return Compacted({**kept, **new}, end), True


def forwarded(
    messages: Sequence[ChatMessage], plan: Compacted, made_for: Sequence[ChatMessage] | None = None
) -> list[tuple[str, str]]:
    """The request the plan makes, as (role, text with results) pairs; the summary as HEADER.
    ``made_for``: the conversation the plan was made for, when ``messages`` grew since (what
    stayed verbatim before its summary was decided then)."""
    head = head_end(messages)
    out: list[tuple[str, str]] = [describe(m) for m in messages[:head]]
    start = head
    if plan.summary_end:
        kept = pinned(made_for or messages, head)
        out += [describe(messages[i]) for i in sorted(kept) if i < plan.summary_end]
        out.append(("user", HEADER))
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
        min_elide_chars=rng.choice([400, 400, 150]),
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


@pytest.mark.parametrize("seed", range(150))
async def test_one_compaction_sends_exactly_the_documented_plan(seed: int) -> None:
    rng = random.Random(seed)
    case = random_case(rng, rng.randint(2, 14))

    def plan(c: Case, trace: list[tuple[str, float]] | None = None) -> tuple[Compacted, bool]:
        return expected(
            c.messages, c.options, Compacted(), tools=c.tools, scale=c.scale, trace=trace
        )

    if rng.random() < 0.5:
        case = on_the_boundary(rng, case, plan)
    model, [events] = await run_case(case, case.messages)
    messages = case.messages
    expect, summarised = plan(case)
    [sent] = model.requests
    assert [describe(m) for m in sent] == forwarded(messages, expect)
    assert len(model.summaries) == int(summarised)
    if not expect.elided and not summarised:
        assert events == []
        return
    [event] = events
    assert event.data["tokens_before"] == case.scale * (units(messages) + case.tools)
    assert event.data["tokens_after"] == case.scale * (units(sent) + case.tools)
    assert event.data["elided_results"] == len(expect.elided)
    head_size = head_end(messages)
    dropped = sum(
        1 for i in range(head_size, expect.summary_end) if i not in pinned(messages, head_size)
    )
    assert event.data["summarised_messages"] == dropped
    strategy = "+".join(s for s, on in (("elide", expect.elided), ("summary", summarised)) if on)
    assert event.data["strategy"] == strategy


@pytest.mark.parametrize("seed", range(150))
async def test_a_second_compaction_keeps_the_first_and_plans_the_rest(seed: int) -> None:
    rng = random.Random(1000 + seed)
    case = random_case(rng, rng.randint(3, 10))
    case.summary = rng.choice([SUMMARY_TEXT, "S" * 1500])
    first = case.messages
    grown = first + conversation(rng, rng.randint(3, 10), first_call=1000)

    def plan(c: Case, trace: list[tuple[str, float]] | None = None) -> tuple[Compacted, bool]:
        plan1, _ = expected(first, c.options, Compacted(), tools=c.tools, scale=c.scale)
        # the summary's message: its header and what the summariser wrote
        cost = chars([ChatMessage.from_text(ChatRole.USER, SUMMARY_HEADER_TEXT + c.summary)])
        return expected(
            grown,
            c.options,
            plan1,
            tools=c.tools,
            summary_cost=cost if plan1.summary_end else 0,
            scale=c.scale,
            trace=trace,
        )

    if rng.random() < 0.5:
        # half of them on a boundary of the plan without a new summary: after a summary, that
        # plan counts the summary's message
        case = on_the_boundary(rng, case, plan, rng.choice([None, "plain"]))
    model, (_, second_events) = await run_case(case, first, grown)
    plan1, _ = expected(first, case.options, Compacted(), tools=case.tools, scale=case.scale)
    assert [describe(m) for m in model.requests[0]] == forwarded(first, plan1)
    if plan1.summary_end:
        assert summary_message_cost(model.requests[0]) == chars(
            [ChatMessage.from_text(ChatRole.USER, SUMMARY_HEADER_TEXT + case.summary)]
        )
    second = model.requests[1]
    if not second_events:
        # Not compacted again: the first request's prefix, then the new messages as they are.
        assert second[: len(model.requests[0])] == model.requests[0]
        assert [describe(m) for m in second] == forwarded(grown, plan1, made_for=first)
        return
    plan2, summarised = plan(case)
    assert [describe(m) for m in second] == forwarded(grown, plan2)
    [event] = second_events
    assert event.data["tokens_after"] == case.scale * (units(second) + case.tools)
    head_size = head_end(grown)
    old_end = plan1.summary_end or head_size
    dropped = sum(1 for i in range(old_end, plan2.summary_end) if i not in pinned(grown, head_size))
    assert event.data["summarised_messages"] == (dropped if summarised else 0)
    if summarised and plan1.summary_end:
        # the earlier summary is folded into the new one
        assert f"Earlier summary:\n{case.summary}" in model.summaries[-1][1].text


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
