"""Tokens of a 300-round run with large tool results: with compaction, without, and per request.

The run (``tests/core/compaction_scenario.py``): a strict scripted model reads one 4,000-character
file a round for 300 rounds, with a 600-character paragraph of reasoning each time, then answers;
the conversation grows by about 1,150 tokens a round. The model window is 100,000 tokens.

Rows:

- none: the conversation as the loop builds it (above the window after about 85 rounds: a real
  provider would have refused those requests; the figures show what they would have cost).
- loopkit: ``use_compaction(max_input_tokens=100_000)``: above 80 % of the window it elides old
  tool results (then summarises the oldest steps, with a stand-in summariser) down to 50 %, and
  forwards that prefix unchanged until the next compaction.
- per-request elision: a stateless history processor applied to every request (the way
  pydantic-ai history processors and M.E.AI chat reducers run): every result older than the last
  four steps is replaced by a stub. The input stays small, but the elided region moves every
  round, so the prompt cache is lost every round.
- sliding window: a stateless reducer that keeps the system message, the task and the last 60
  messages of every request (M.E.AI's ``MessageCountingChatReducer`` keeps only system messages;
  the task is kept here so that the run stays meaningful).

Input tokens are the scripted model's count (about four characters a token, tool schemas
included). "full results" is how many tool results a request shows in full, on average (what
the model can still read without calling the tool again). Billed-equivalent input assumes a provider prefix cache priced like Anthropic's:
the part of a request equal to the previous request's beginning is read from the cache (x0.1),
the rest is written (x1.25). Summary requests are counted in the total. Nothing is timed.

Run: ``.venv/bin/python -m pytest bench/test_compaction_bench.py -s -q``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.core import compaction_scenario as scenario

from loopkit import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
)
from loopkit.middleware.conversation_steps import result_stub
from loopkit.middleware.token_estimate import estimate_tokens

CACHE_READ, CACHE_WRITE = 0.1, 1.25


async def elide_every_request(
    messages: Sequence[ChatMessage], options: ChatOptions | None, next_client: ChatClient
) -> ChatResponse:
    """Per-request elision: every result older than the last four steps becomes a stub."""
    calls = {
        c.call_id: c for m in messages for c in m.contents if isinstance(c, FunctionCallContent)
    }
    tool_messages = [i for i, m in enumerate(messages) if m.role == ChatRole.TOOL]
    old = set(tool_messages[:-4])
    out = []
    for i, m in enumerate(messages):
        if i in old:
            contents = [
                FunctionResultContent(
                    call_id=c.call_id, result=result_stub(calls.get(c.call_id), c), error=c.error
                )
                for c in m.function_results
            ]
            m = ChatMessage(role=m.role, contents=list(contents))
        out.append(m)
    return await next_client.get_response(out, options)


async def sliding_window(
    messages: Sequence[ChatMessage], options: ChatOptions | None, next_client: ChatClient
) -> ChatResponse:
    """System message + task + the last 60 messages (never starting with a tool message)."""
    start = max(2, len(messages) - 60)
    while start < len(messages) and messages[start].role == ChatRole.TOOL:
        start += 1
    return await next_client.get_response([*messages[:2], *messages[start:]], options)


@dataclass
class Row:
    name: str
    requests: int
    input_tokens: int
    peak: int
    over_window: int
    compactions: int
    summary_tokens: int
    billed: float
    full_results: float  # tool results the model sees in full, mean per request


def billed_equivalent(requests: list[list[ChatMessage]], tools: int) -> float:
    """Input priced with a prefix cache: each request's beginning that equals the previous
    request's (message by message) is a cache read, the rest a cache write."""
    total = 0.0
    previous: list[ChatMessage] = []
    for messages in requests:
        costs = [estimate_tokens([m]) for m in messages]
        same = 0
        for a, b in zip(previous, messages, strict=False):
            if a is not b and a != b:
                break
            same += 1
        cached = sum(costs[:same]) + (tools if previous else 0)
        written = sum(costs[same:]) + (0 if previous else tools)
        total += CACHE_READ * cached + CACHE_WRITE * written
        previous = messages
    return total


async def measure(name: str, **kwargs: object) -> Row:
    outcome = await scenario.run(keep_requests=True, **kwargs)  # type: ignore[arg-type]
    assert outcome.rounds == 301 and outcome.text.endswith("RESULT: done")
    recorder = outcome.recorder
    summary_tokens = sum(outcome.summaries.estimates)
    return Row(
        name=name,
        requests=len(recorder.reported),
        input_tokens=sum(recorder.reported) + summary_tokens,
        peak=max(recorder.reported),
        over_window=sum(r > scenario.WINDOW for r in recorder.reported),
        compactions=sum(e.type == "compaction" for e in outcome.events),
        summary_tokens=summary_tokens,
        billed=billed_equivalent(recorder.requests, recorder.tools) + CACHE_WRITE * summary_tokens,
        full_results=sum(
            not r.result.startswith("[elided")
            for request in recorder.requests
            for m in request
            for r in m.function_results
        )
        / len(recorder.requests),
    )


async def test_compaction_tokens_with_and_without() -> None:
    rows = [
        await measure("none", compaction=False),
        await measure("loopkit use_compaction", compaction=True),
        await measure("per-request elision", compaction=False, middleware=elide_every_request),
        await measure("sliding window (60)", compaction=False, middleware=sliding_window),
    ]
    none, loopkit = rows[0], rows[1]
    assert loopkit.peak < scenario.WINDOW < none.peak
    assert loopkit.over_window == 0 and none.over_window > 0
    print()
    print(
        f"{'':<24} {'requests':>8} {'input tokens':>13} {'peak/request':>13} "
        f"{'over 100k':>9} {'compactions':>11} {'billed-equiv':>13} {'vs none':>8} "
        f"{'full results':>12}"
    )
    for r in rows:
        print(
            f"{r.name:<24} {r.requests:>8} {r.input_tokens:>13,} {r.peak:>13,} "
            f"{r.over_window:>9} {r.compactions:>11} {r.billed:>13,.0f} "
            f"{r.input_tokens / none.input_tokens:>8.3f} {r.full_results:>12.1f}"
        )
    print(
        f"loopkit / none: input tokens {loopkit.input_tokens / none.input_tokens:.3f}, "
        f"peak {loopkit.peak / none.peak:.3f}, billed-equivalent with caching "
        f"{loopkit.billed / none.billed:.3f}; summary requests {loopkit.summary_tokens:,} tokens"
    )
    for r in rows[2:]:
        print(
            f"loopkit / {r.name}: billed-equivalent {loopkit.billed / r.billed:.3f}, "
            f"input tokens {loopkit.input_tokens / r.input_tokens:.3f}"
        )
