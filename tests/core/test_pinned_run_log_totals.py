"""Each run's own count of tool calls that failed (issue 21: an outside reviewer stopped counting
them per run without any test noticing)."""

from __future__ import annotations

import io
import json
from typing import Any

from loopkit import Agent, RunLog, RunLogChatClient, ToolError, tool
from tests.agents.helpers import Replies, answer, calls


@tool
def check(n: int) -> str:
    """Check a number: odd numbers fail."""
    if n % 2:
        raise ToolError(f"{n} is odd")
    return f"{n} is even"


def agent(log: RunLog, *numbers: int) -> Agent[str]:
    rounds = [calls(("check", {"n": n})) for n in numbers]
    return Agent(
        Replies(*rounds, answer("checked")).client(),
        tools=[check],
        middleware=[lambda inner: RunLogChatClient(inner, log)],
    )


def run_ends(buffer: io.StringIO) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    return {line["run_id"]: line["data"]["totals"] for line in lines if line["type"] == "run_end"}


async def test_each_run_counts_its_own_tool_errors() -> None:
    buffer = io.StringIO()
    log = RunLog(buffer, environ={})
    first = await agent(log, 1, 2, 3).run("check three")  # two fail
    second = await agent(log, 4).run("check one")  # none fails
    third = await agent(log, 5).run("check another")  # one fails
    totals = run_ends(buffer)
    assert [totals[r.run_id]["tool_calls"] for r in (first, second, third)] == [3, 1, 1]
    assert [totals[r.run_id]["tool_errors"] for r in (first, second, third)] == [2, 0, 1]
    # the log's own totals count every run
    assert (log.tool_calls, log.tool_errors) == (5, 3)
    assert log.totals()["tool_errors"] == 3
