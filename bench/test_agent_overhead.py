"""``Agent.run`` overhead per round beside the raw loop it drives (issue 10: goal <= 1.2x).

The same script both ways: a ``FunctionChatClient`` whose replies are built before the clock
starts calls one async tool per round for N rounds (60 and 1,000), then answers with text. The
tool only formats a string, so what is measured is the loop's own work and what the agent adds
around it (a run context, its instructions, the result with the run's messages and usage).

- raw loop: ``FunctionInvokingChatClient(model).get_response([user], ChatOptions(tools=[t]))``
  (which opens its own run per request);
- agent: ``Agent(model, instructions=..., tools=[t]).run(prompt)``, built once.

Each run is checked (N + 1 requests, N results in order, the final text). Speed is printed,
never asserted. Run: ``.venv/bin/python -m pytest bench/test_agent_overhead.py -s -q``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    FunctionResultContent,
    FunctionTool,
)
from loopkit.agents import Agent

FINAL_TEXT = "All done."
PROMPT = "Run the script."
GOAL = 1.2


async def echo(x: int) -> str:
    """Echo x."""
    return f"echo:{x}"


TOOL = FunctionTool(echo)


def script(rounds: int) -> list[ChatResponse]:
    replies = [
        ChatResponse(
            messages=[
                ChatMessage(
                    role=ChatRole.ASSISTANT,
                    contents=[
                        FunctionCallContent(call_id=f"c{i}", name="echo", arguments={"x": i})
                    ],
                )
            ],
            finish_reason="tool_calls",
        )
        for i in range(rounds)
    ]
    replies.append(
        ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, FINAL_TEXT)], finish_reason="stop"
        )
    )
    return replies


def model_of(replies: list[ChatResponse]) -> FunctionChatClient:
    it = iter(replies)

    def reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        return next(it)

    return FunctionChatClient(reply)


def results_of(messages: list[ChatMessage]) -> list[str]:
    return [c.result for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


async def raw_loop(rounds: int) -> tuple[float, list[str], str]:
    model = model_of(script(rounds))
    loop = FunctionInvokingChatClient(model, FunctionInvocationOptions(max_rounds=rounds + 10))
    options = ChatOptions(tools=[TOOL])
    messages = [ChatMessage.from_text(ChatRole.USER, PROMPT)]
    start = time.perf_counter()
    response = await loop.get_response(messages, options)
    elapsed = time.perf_counter() - start
    assert model.calls == rounds + 1
    return elapsed, results_of(response.messages), response.text


async def agent_run(rounds: int) -> tuple[float, list[str], str]:
    model = model_of(script(rounds))
    agent = Agent(model, instructions="Follow the script.", tools=[TOOL], max_rounds=rounds + 10)
    start = time.perf_counter()
    result = await agent.run(PROMPT)
    elapsed = time.perf_counter() - start
    assert model.calls == rounds + 1 and result.rounds == rounds + 1
    return elapsed, results_of(result.new_messages), result.output


Runner = Callable[[int], Awaitable[tuple[float, list[str], str]]]
WAYS: dict[str, Runner] = {"raw loop": raw_loop, "Agent.run": agent_run}


async def measure(rounds: int, repeats: int) -> dict[str, list[float]]:
    expected = [f"echo:{i}" for i in range(rounds)]
    times: dict[str, list[float]] = {name: [] for name in WAYS}
    for rep in range(repeats + 1):
        for name, run in WAYS.items():
            gc.collect()
            elapsed, results, text = await run(rounds)
            assert results == expected and text == FINAL_TEXT, name
            if rep > 0:  # the first repetition warms up (schemas, caches)
                times[name].append(elapsed)
    return times


@pytest.mark.parametrize(("rounds", "repeats"), [(60, 21), (1000, 7)])
def test_agent_overhead_per_round(rounds: int, repeats: int) -> None:
    times = asyncio.run(measure(rounds, repeats))
    per_round = {name: statistics.median(t) / rounds * 1000 for name, t in times.items()}
    print(
        f"\nAgent.run vs the raw loop: {rounds} rounds, one tool call a round, median of {repeats}"
    )
    for name, t in times.items():
        lo, hi = min(t) / rounds * 1000, max(t) / rounds * 1000
        print(f"  {name:<10} {per_round[name]:7.4f} ms/round  (min {lo:.4f}, max {hi:.4f})")
    ratio = per_round["Agent.run"] / per_round["raw loop"]
    print(f"  Agent.run / raw loop: {ratio:.3f}  (goal <= {GOAL})")
