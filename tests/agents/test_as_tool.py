"""Subagents: an agent as a tool runs a child run with its own limits, linked in the run log."""

from __future__ import annotations

import io
from typing import Any

import pytest
from pydantic import BaseModel

from loopkit import ChatMessage, FunctionChatClient, RunLog, RunLogChatClient
from loopkit.agents import Agent
from loopkit.run_context import RunContext, run_scope

from .helpers import Replies, answer, calls, lines


def log_middleware(log: RunLog) -> Any:
    return lambda inner: RunLogChatClient(inner, log)


async def test_the_child_answers_in_its_own_run_linked_to_the_parent_in_the_log() -> None:
    buffer = io.StringIO()
    log = RunLog(buffer)
    child_replies = Replies(answer("The capital is Paris."))
    child = Agent(
        child_replies.client(),
        name="researcher",
        instructions="Research.",
        middleware=[log_middleware(log)],
    )
    parent_replies = Replies(
        calls(("research", {"task": "Capital of France?"}), usage=5), answer("Paris.", usage=5)
    )
    parent = Agent(
        parent_replies.client(),
        name="lead",
        tools=[child.as_tool("research", "Ask the researcher.")],
        middleware=[log_middleware(log)],
    )
    result = await parent.run("Where is the Louvre?")
    assert result.output == "Paris."
    assert parent_replies.sent[1][-1].function_results[0].result == "The capital is Paris."
    assert [m.text for m in child_replies.sent[0]] == ["Research.", "Capital of France?"]
    assert (result.rounds, result.tool_calls, result.usage.input_tokens) == (2, 1, 10)

    written = lines(buffer)
    [link] = [line for line in written if line["type"] == "child_run"]
    assert link["run_id"] == result.run_id
    assert link["data"]["name"] == "researcher" and link["data"]["tool"] == "research"
    child_lines = [line for line in written if line["run_id"] == link["data"]["child_run_id"]]
    assert [line["type"] for line in child_lines] == ["start", "round", "run_end"]
    assert all(line["parent_run_id"] == result.run_id for line in child_lines)
    assert child_lines[0]["data"]["agent"] == "researcher"
    assert child_lines[-1]["data"]["status"] == "ok"
    assert all("parent_run_id" not in line for line in written if line["run_id"] == result.run_id)


class Capital(BaseModel):
    country: str
    city: str


async def test_a_typed_child_returns_its_output_as_json() -> None:
    child = Agent(
        Replies(answer('{"country": "France", "city": "Paris"}')).client(), output_type=Capital
    )
    tool = child.as_tool("capital", "Find a capital.")
    assert tool.parameters["required"] == ["task"]
    with run_scope(RunContext()):
        assert await tool.invoke({"task": "France"}) == '{"country":"France","city":"Paris"}'


async def test_a_child_deeper_than_the_maximum_is_refused_and_the_model_told() -> None:
    leaf = Agent(FunctionChatClient(lambda m, o: "leaf answer"), name="leaf")
    middle_replies = Replies(calls(("leaf", {"task": "go deeper"})), answer("middle gave up"))
    middle = Agent(
        middle_replies.client(), name="middle", tools=[leaf.as_tool("leaf", max_depth=1)]
    )
    top_replies = Replies(calls(("middle", {"task": "delegate"})), answer("top done"))
    top = Agent(top_replies.client(), tools=[middle.as_tool("middle")])
    assert (await top.run("start")).output == "top done"
    refusal = middle_replies.sent[1][-1].function_results[0]
    assert refusal.error
    assert refusal.result == (
        "Error: leaf was not started: it would run at depth 2, deeper than the maximum of 1. "
        "Do the task yourself."
    )
    assert top_replies.sent[1][-1].function_results[0].result == "middle gave up"


async def test_child_runs_beyond_the_maximum_per_run_are_refused() -> None:
    helper = Agent(FunctionChatClient(lambda m, o: "helped"), name="helper")
    tasks = [("helper", {"task": f"job {i}"}) for i in range(3)]
    replies = Replies(calls(*tasks), answer("done"))
    parent = Agent(replies.client(), tools=[helper.as_tool(max_child_runs=2)])
    await parent.run("three jobs")
    results = replies.sent[1][-1].function_results
    assert [r.result for r in results[:2]] == ["helped", "helped"]
    assert (
        results[2].error and "already started 2 child runs, the maximum is 2" in results[2].result
    )


async def test_a_child_that_spends_its_own_budget_fails_alone() -> None:
    def work() -> str:
        """Work."""
        return "worked"

    child = Agent(
        FunctionChatClient(lambda m, o: calls(("work", {}), usage=80)),
        name="spender",
        tools=[work],
        max_tokens=100,  # 80 + 80 spent, the third request refused
    )
    replies = Replies(calls(("spender", {"task": "spend"})), answer("parent fine"))
    parent = Agent(replies.client(), tools=[child.as_tool()], max_tokens=1_000)
    result = await parent.run("go")
    failed = replies.sent[1][-1].function_results[0]
    assert failed.error
    assert failed.result.startswith(
        "Error: spender failed: BudgetExceededError: token budget spent"
    )
    assert result.output == "parent fine"


@pytest.mark.parametrize("bad", [{}, {"task": ""}, {"task": 3}])
async def test_a_call_without_a_task_is_a_tool_error(bad: dict[str, Any]) -> None:
    from loopkit import ToolError

    tool = Agent(FunctionChatClient(lambda m, o: "x"), name="helper").as_tool()
    with pytest.raises(ToolError, match="helper needs a task"):
        await tool.invoke(bad)


def test_limits_of_as_tool_are_checked() -> None:
    agent = Agent(FunctionChatClient(lambda m, o: "x"))
    with pytest.raises(ValueError, match="max_depth must be >= 1"):
        agent.as_tool(max_depth=0)
    with pytest.raises(ValueError, match="max_child_runs must be >= 1"):
        agent.as_tool(max_child_runs=0)


async def test_without_a_parent_run_the_child_is_a_top_level_run() -> None:
    replies = Replies(answer("alone"))
    tool = Agent(replies.client()).as_tool()
    assert await tool.invoke({"task": "t"}) == "alone"
    assert isinstance(replies.sent[0][0], ChatMessage)
