"""Agent behaviour an outside reviewer changed without any test noticing (issue 21): what the
output retry sends, how deep a subagent may run, and when a streamed run ran out of rounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from loopkit import ChatMessage, ChatOptions, ChatRole, FunctionChatClient
from loopkit.agents import Agent, AgentRunResult, FinalResult
from loopkit.run_context import current_run

from .helpers import Replies, add, answer, calls


class Invoice(BaseModel):
    customer: str
    total: float


async def finished(agent: Agent[Any], prompt: str, stream: bool) -> AgentRunResult[Any]:
    """The run's result, from ``run`` or from the last event of ``run_stream``."""
    if not stream:
        return await agent.run(prompt)
    events = [event async for event in agent.run_stream(prompt)]
    assert isinstance(events[-1], FinalResult)
    return events[-1].result


# -- the output retry -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_the_output_retry_shows_the_model_its_invalid_answer_then_the_errors(
    stream: bool,
) -> None:
    invalid = '{"customer": "Ann", "total": "a lot"}'
    replies = Replies(answer(invalid), answer('{"customer": "Ann", "total": 9.5}'))
    agent = Agent(replies.client(), instructions="Invoices.", output_type=Invoice)
    result = await finished(agent, "Make an invoice", stream)
    assert result.output == Invoice(customer="Ann", total=9.5)
    first, retry = replies.sent
    # The retry repeats the first request, then the answer that failed, then what was wrong
    # with it: a model that never sees its own answer cannot correct it.
    assert retry[: len(first)] == first
    assert [m.role for m in retry[len(first) :]] == [ChatRole.ASSISTANT, ChatRole.USER]
    assert retry[len(first)].text == invalid
    ask = retry[-1].text
    assert ask.startswith("Your answer is not a valid Invoice: total: Input should be a valid")
    assert '"required":["customer","total"]' in ask  # the schema to answer with


@pytest.mark.parametrize("stream", [False, True])
async def test_each_retry_carries_every_earlier_answer_in_order(stream: bool) -> None:
    replies = Replies(answer("not json"), answer("{}"), answer('{"customer": "B", "total": 1}'))
    agent = Agent(replies.client(), output_type=Invoice, output_retries=2)
    result = await finished(agent, "x", stream)
    assert result.output_retries == 2
    last = replies.sent[2]
    assert [(m.role, m.text) for m in last if m.role == ChatRole.ASSISTANT] == [
        (ChatRole.ASSISTANT, "not json"),
        (ChatRole.ASSISTANT, "{}"),
    ]
    assert [m.role for m in last] == ["user", "assistant", "user", "assistant", "user"]


# -- how deep a subagent runs -----------------------------------------------------------------


def chain(levels: int, max_depth: int) -> tuple[Agent[str], list[Replies]]:
    """Agents 0..levels: agent k calls agent k+1 (a tool made with ``as_tool(max_depth=...)``),
    the last one answers with the depth it ran at. Returns the top agent and each level's
    replies (the last level's model is a function, not Replies)."""

    def deepest(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
        run = current_run()
        assert run is not None
        return f"ran at depth {run.depth}"

    agent: Agent[str] = Agent(FunctionChatClient(deepest), name=f"level{levels}")
    replies: list[Replies] = []
    for k in range(levels - 1, -1, -1):
        level = Replies(calls((f"level{k + 1}", {"task": f"task {k + 1}"})), answer(f"done {k}"))
        replies.insert(0, level)
        tool = agent.as_tool(f"level{k + 1}", max_depth=max_depth)
        agent = Agent(level.client(), name=f"level{k}", tools=[tool])
    return agent, replies


@pytest.mark.parametrize("max_depth", [1, 2, 3])
async def test_a_child_runs_at_exactly_the_maximum_depth(max_depth: int) -> None:
    top, replies = chain(max_depth, max_depth)
    assert (await top.run("go")).output == "done 0"
    [deepest] = replies[-1].sent[1][-1].function_results
    assert (deepest.error, deepest.result) == (False, f"ran at depth {max_depth}")


@pytest.mark.parametrize("max_depth", [1, 2, 3])
async def test_a_child_one_deeper_than_the_maximum_is_refused(max_depth: int) -> None:
    top, replies = chain(max_depth + 1, max_depth)
    assert (await top.run("go")).output == "done 0"
    [refused] = replies[-1].sent[1][-1].function_results
    assert refused.error
    assert refused.result == (
        f"Error: level{max_depth + 1} was not started: it would run at depth {max_depth + 1}, "
        f"deeper than the maximum of {max_depth}. Do the task yourself."
    )
    # every level above it ran
    for level in replies[:-1]:
        [ran] = level.sent[1][-1].function_results
        assert not ran.error


# -- the round limit, streamed ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("max_rounds", [1, 2, 3])
async def test_a_run_answering_on_its_last_allowed_round_did_not_run_out(
    stream: bool, max_rounds: int
) -> None:
    tool_rounds = [calls(("add", {"a": i, "b": 1})) for i in range(max_rounds - 1)]
    replies = Replies(*tool_rounds, answer("finished in time"))
    agent = Agent(replies.client(), tools=[add], max_rounds=max_rounds)
    result = await finished(agent, "add", stream)
    assert (result.output, result.rounds) == ("finished in time", max_rounds)
    assert result.max_rounds_reached is False
    # the last request still offered the tools: nothing was cut short
    last = replies.options[-1]
    assert last is not None and [t.name for t in last.tools] == ["add"]
    assert last.tool_mode is None or last.tool_mode.kind != "none"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_still_calling_tools_on_its_last_round_ran_out(stream: bool) -> None:
    replies = Replies(
        calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), answer("cut short")
    )
    agent = Agent(replies.client(), tools=[add], max_rounds=2)
    result = await finished(agent, "add", stream)
    assert (result.output, result.rounds, result.max_rounds_reached) == ("cut short", 3, True)


# -- a tool's exception that cannot be printed ----------------------------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for this one")


class Breaks:
    """A tool (not a FunctionTool) whose failure cannot even be described."""

    name = "breaks"
    description = "Breaks."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def invoke(self, arguments: dict[str, Any]) -> str:
        raise Unprintable()


@pytest.mark.parametrize("detailed", [False, True])
async def test_a_tool_failure_that_cannot_be_printed_is_still_an_answer(detailed: bool) -> None:
    replies = Replies(calls(("breaks", {})), answer("went on"))
    agent = Agent(replies.client(), tools=[Breaks()], include_detailed_errors=detailed)
    assert (await agent.run("x")).output == "went on"
    [result] = replies.sent[1][-1].function_results
    assert result.error
    # the tool and the type either way; with detailed errors the message would follow, but
    # this one cannot be read, so none does (failure_text, issue 25)
    assert result.result == "Error: breaks failed with Unprintable."
