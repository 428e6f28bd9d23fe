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

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    tool,
)
from loopkit.middleware.compaction import CompactionChatClient, CompactionOptions
from loopkit.middleware.conversation_steps import head_end, result_stub, steps
from loopkit.middleware.token_estimate import MESSAGE_OVERHEAD
from loopkit.run_context import RunEvent, run_scope

SUMMARY_TEXT = "S."
HEADER = "Summary of the earlier conversation"


def chars(messages: Sequence[ChatMessage], options: ChatOptions | None = None, /) -> int:
    """An exact, additive estimate: 10 a message plus the characters of what it holds."""
    total = 0
    for m in messages:
        total += 10
        for c in m.contents:
            if isinstance(c, TextContent):
                total += len(c.text)
            elif isinstance(c, FunctionCallContent):
                total += len(c.name) + len(json.dumps(c.arguments))
            elif isinstance(c, FunctionResultContent):
                total += len(c.result)
    if options is not None:
        for t in options.tools:
            total += len(t.name) + len(t.description) + len(json.dumps(t.parameters))
    return total


def units(messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> int:
    return sum(chars([m]) for m in messages) + (chars([], options) if options else 0)


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
) -> tuple[Compacted, bool]:
    """The plan for ``messages`` after the compaction ``before`` (whose summary message costs
    ``summary_cost``); True when a new summary is made."""
    target = options.target_at
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

    def elide_from(first: int, total: int) -> tuple[dict[tuple[int, int], str], int]:
        new = {}
        for found in eligible[first:]:
            for i, j in found:
                if total <= target:
                    return new, total
                c = messages[i].contents[j]
                new[(i, j)] = result_stub(calls.get(c.call_id), c)
                total -= saved(c)
        return new, total

    fixed = sum(cost[:head]) + tools + pinned_cost(head, start) + summary_cost
    new, total = elide_from(0, fixed + sum(current))
    if total <= target or not options.summarize or not movable:
        return Compacted({**before.elided, **new}, before.summary_end), False
    reserve = options.summary_max_tokens + MESSAGE_OVERHEAD + 30  # its header and overhead
    base = sum(cost[:head]) + tools + pinned_cost(head, start)
    most = [
        current[k] - sum(saved(messages[i].contents[j]) for i, j in eligible[k])
        for k in range(len(movable))
    ]
    rest = sum(current[len(movable) :])
    n = len(movable)
    for count in range(1, len(movable) + 1):
        verbatim = pinned_cost(start, movable[count - 1][1])
        if base + verbatim + reserve + sum(most[count:]) + rest <= target:
            n = count
            break
    end = movable[n - 1][1]
    new, _ = elide_from(n, base + pinned_cost(start, end) + reserve + sum(current[n:]))
    kept = {k: v for k, v in before.elided.items() if k[0] >= end}
    return Compacted({**kept, **new}, end), True


def forwarded(messages: Sequence[ChatMessage], plan: Compacted) -> list[tuple[str, str]]:
    """The request the plan makes, as (role, text with results) pairs; the summary as HEADER."""
    head = head_end(messages)
    out: list[tuple[str, str]] = [describe(m) for m in messages[:head]]
    start = head
    if plan.summary_end:
        out += [
            describe(messages[i]) for i in sorted(pinned(messages, head)) if i < plan.summary_end
        ]
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
    def __init__(self) -> None:
        self.requests: list[list[ChatMessage]] = []
        self.summaries: list[list[ChatMessage]] = []
        self.client = FunctionChatClient(self.reply)
        self.writer = FunctionChatClient(self.summarise)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        self.requests.append(list(messages))
        return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok")])

    def summarise(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        self.summaries.append(list(messages))
        return SUMMARY_TEXT


def random_options(rng: random.Random, total: int) -> CompactionOptions:
    return CompactionOptions(
        trigger_tokens=total - 1,
        target_tokens=int(total * rng.uniform(0.15, 0.9)),
        keep_recent_steps=rng.randint(1, 4),
        summarize=rng.random() < 0.75,
        summary_max_tokens=rng.choice([16, 100, 300]),
        min_elide_chars=rng.choice([400, 400, 150]),
    )


def summary_message_cost(sent: Sequence[ChatMessage]) -> int:
    return sum(chars([m]) for m in sent if m.text.startswith(HEADER))


@pytest.mark.parametrize("seed", range(60))
async def test_one_compaction_sends_exactly_the_documented_plan(seed: int) -> None:
    rng = random.Random(seed)
    head = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You review code."),
        ChatMessage.from_text(ChatRole.USER, "Review the modules."),
    ]
    messages = head + conversation(rng, rng.randint(2, 14))
    options = random_options(rng, units(messages))
    model = Recorder()
    client = CompactionChatClient(model.client, options, summarizer=model.writer, estimator=chars)
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        await client.get_response(messages)
    plan, summarised = expected(messages, options, Compacted())
    [sent] = model.requests
    assert [describe(m) for m in sent] == forwarded(messages, plan)
    assert len(model.summaries) == int(summarised)
    if not plan.elided and not summarised:
        assert events == []
        return
    [event] = events
    assert event.data["tokens_before"] == units(messages)
    assert event.data["tokens_after"] == units(sent)
    assert event.data["elided_results"] == len(plan.elided)
    head_size = head_end(messages)
    dropped = sum(
        1 for i in range(head_size, plan.summary_end) if i not in pinned(messages, head_size)
    )
    assert event.data["summarised_messages"] == dropped
    strategy = "+".join(s for s, on in (("elide", plan.elided), ("summary", summarised)) if on)
    assert event.data["strategy"] == strategy


@pytest.mark.parametrize("seed", range(40))
async def test_a_second_compaction_keeps_the_first_and_plans_the_rest(seed: int) -> None:
    rng = random.Random(1000 + seed)
    head = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You review code."),
        ChatMessage.from_text(ChatRole.USER, "Review the modules."),
    ]
    first = head + conversation(rng, rng.randint(3, 10))
    options = random_options(rng, units(first))
    model = Recorder()
    client = CompactionChatClient(model.client, options, summarizer=model.writer, estimator=chars)
    grown = first + conversation(rng, rng.randint(3, 10), first_call=1000)
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        await client.get_response(first)
        after_first = list(events)
        await client.get_response(grown)
    second_events = events[len(after_first) :]
    plan1, _ = expected(first, options, Compacted())
    assert [describe(m) for m in model.requests[0]] == forwarded(first, plan1)
    second = model.requests[1]
    if not second_events:
        # Not compacted again: the first request's prefix, then the new messages as they are.
        assert second[: len(model.requests[0])] == model.requests[0]
        assert [describe(m) for m in second] == forwarded(grown, plan1)
        return
    cost = summary_message_cost(model.requests[0])
    plan2, summarised = expected(grown, options, plan1, summary_cost=cost)
    assert [describe(m) for m in second] == forwarded(grown, plan2)
    [event] = second_events
    assert event.data["tokens_after"] == units(second)
    head_size = head_end(grown)
    old_end = plan1.summary_end or head_size
    dropped = sum(1 for i in range(old_end, plan2.summary_end) if i not in pinned(grown, head_size))
    assert event.data["summarised_messages"] == (dropped if summarised else 0)
    if summarised and plan1.summary_end:
        # the earlier summary is folded into the new one
        assert f"Earlier summary:\n{SUMMARY_TEXT}" in model.summaries[-1][1].text


# -- tools count toward the request -------------------------------------------------------------


@tool
def read(path: str) -> str:
    """Read a file from the repository, with line numbers, for review."""
    return path


@tool
def write(path: str, text: str, overwrite: bool = False) -> str:
    """Write a file."""
    return path


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
