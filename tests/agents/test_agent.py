"""Agent: instructions, tools, typed output, sessions, per-run state, concurrency."""

from __future__ import annotations

import asyncio
import dataclasses
import io
from typing import Any

import pytest
from pydantic import BaseModel

from loopkit import (
    BudgetExceededError,
    ChatClientBuilder,
    ChatMessage,
    ChatResponse,
    ChatRole,
    FunctionChatClient,
    OutputValidationError,
    ProviderError,
    RunLog,
    RunLogChatClient,
    ToolError,
    tool,
)
from loopkit.abstractions.response_format import ResponseFormat
from loopkit.agents import Agent, AgentRunResult
from loopkit.errors import MaxConsecutiveErrorsError
from loopkit.run_context import current_run
from loopkit.sessions import InMemorySession, check_complete

from .helpers import Replies, add, answer, calls, lines


class Invoice(BaseModel):
    customer: str
    total: float


# -- text agents -----------------------------------------------------------------------------------


async def test_a_run_sends_the_instructions_first_and_returns_what_it_added() -> None:
    replies = Replies(calls(("add", {"a": 1, "b": 2})), answer("1 + 2 = 3"))
    agent = Agent(replies.client(), instructions="You add numbers.", tools=[add], name="adder")
    result = await agent.run("What is 1 + 2?")
    assert result.output == "1 + 2 = 3" and result.text == "1 + 2 = 3"
    sent = replies.sent[0]
    assert (sent[0].role, sent[0].text) == (ChatRole.SYSTEM, "You add numbers.")
    assert [m.role for m in result.new_messages] == ["user", "assistant", "tool", "assistant"]
    assert result.new_messages[2].function_results[0].result == "3"
    assert all(m.role != ChatRole.SYSTEM for m in result.all_messages)
    assert (result.rounds, result.tool_calls, result.agent_name) == (2, 1, "adder")
    assert len(result.run_id) == 32 and result.parent_run_id is None


async def test_plain_functions_are_tools_and_run_tools_are_added_for_one_run() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    replies = Replies(calls(("shout", {"text": "hi"})), answer("HI"), answer("none"))
    agent = Agent(replies.client(), tools=[shout])
    assert (await agent.run("shout hi")).new_messages[2].function_results[0].result == "HI"
    await agent.run("again", tools=[add])
    assert [t.name for t in replies.options[-1].tools] == ["shout", "add"]  # type: ignore[union-attr]
    assert [t.name for t in agent.options.tools] == ["shout"]  # the agent is unchanged


def test_bad_settings_are_refused_with_what_was_expected() -> None:
    model = FunctionChatClient(lambda m, o: "x")
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        Agent(model, tools=[add, add])
    with pytest.raises(ValueError, match="already contains a function-invocation loop"):
        Agent(ChatClientBuilder(model).use_function_invocation())
    with pytest.raises(ValueError, match="output_retries must be >= 0"):
        Agent(model, output_retries=-1)
    with pytest.raises(TypeError, match="a tool must be a Tool or a function"):
        Agent(model, tools=[42])  # type: ignore[list-item]


async def test_a_bad_prompt_is_a_clear_error() -> None:
    agent = Agent(FunctionChatClient(lambda m, o: "x"))
    with pytest.raises(TypeError, match="got list holding a str"):
        await agent.run(["not a message"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="empty list of messages"):
        await agent.run([])


def test_run_sync_runs_without_a_loop_and_refuses_inside_one() -> None:
    agent = Agent(FunctionChatClient(lambda m, o: "sync answer"))
    assert agent.run_sync("hi").output == "sync answer"

    async def inside() -> None:
        with pytest.raises(RuntimeError, match=r"await agent\.run"):
            agent.run_sync("hi")

    asyncio.run(inside())


# -- typed output ---------------------------------------------------------------------------------


async def test_typed_output_is_requested_validated_and_retried_with_the_errors() -> None:
    replies = Replies(
        answer('{"customer": "Ann"}'), answer('```json\n{"customer": "Ann", "total": 9.5}\n```')
    )
    agent = Agent(replies.client(), output_type=Invoice)
    result = await agent.run("Make an invoice")
    invoice: Invoice = result.output
    assert invoice == Invoice(customer="Ann", total=9.5)
    assert result.output_retries == 1
    fmt = replies.options[0].response_format  # type: ignore[union-attr]
    assert fmt is not None and fmt.kind == "json_schema" and fmt.name == "Invoice"
    assert fmt.schema is not None and fmt.schema["required"] == ["customer", "total"]
    ask = replies.sent[1][-1]
    assert ask.role == ChatRole.USER
    assert ask.text.startswith("Your answer is not a valid Invoice: total: Field required.")
    # the retry is part of the conversation the run added
    assert [m.role for m in result.new_messages] == ["user", "assistant", "user", "assistant"]


async def test_output_that_never_validates_raises_naming_the_type_and_errors() -> None:
    replies = Replies(answer("not json"), answer('{"customer": 1, "total": "x"}'))
    agent = Agent(replies.client(), output_type=Invoice, output_retries=1)
    with pytest.raises(OutputValidationError) as raised:
        await agent.run("Make an invoice")
    error = raised.value
    assert (error.output_type, error.attempts, error.text) == (
        "Invoice",
        2,
        '{"customer": 1, "total": "x"}',
    )
    assert str(error) == (
        "the model's answer is not a valid Invoice after 2 attempts: customer: Input should be a "
        "valid string; total: Input should be a valid number, unable to parse string as a number"
    )


async def test_zero_retries_fail_at_the_first_invalid_answer() -> None:
    replies = Replies(answer("nope"))
    with pytest.raises(OutputValidationError, match="after 1 attempt: "):
        await Agent(replies.client(), output_type=Invoice, output_retries=0).run("x")
    assert len(replies.sent) == 1


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("output_type", "text", "expected"),
    [
        (int, '{"result": 42}', 42),
        (int, "42", 42),  # a bare value is accepted too
        (list[int], '{"result": [1, 2]}', [1, 2]),
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (bool, '{"result": true}', True),
    ],
)
async def test_primitives_and_dataclasses_are_outputs_too(
    output_type: Any, text: str, expected: Any
) -> None:
    replies = Replies(answer(text))
    result = await Agent(replies.client(), output_type=output_type).run("x")
    assert result.output == expected
    fmt = replies.options[0].response_format  # type: ignore[union-attr]
    assert fmt is not None and fmt.wrap_key == (None if output_type is Point else "result")


async def test_a_text_agent_asks_for_no_format_and_keeps_the_callers_options() -> None:
    from loopkit import ChatOptions

    replies = Replies(answer("plain"))
    base = ChatOptions(model_id="m", temperature=0.2, response_format=ResponseFormat.json())
    await Agent(replies.client(), options=base, max_output_tokens=99).run("x")
    sent = replies.options[0]
    assert sent is not None
    assert (sent.model_id, sent.temperature, sent.max_output_tokens) == ("m", 0.2, 99)
    assert sent.response_format == ResponseFormat.json()
    assert base.max_output_tokens is None  # the caller's options are not changed


# -- sessions -------------------------------------------------------------------------------------


async def test_a_session_continues_the_conversation_without_the_instructions() -> None:
    replies = Replies(answer("Hello Ann."), answer("Your name is Ann."))
    agent = Agent(replies.client(), instructions="Be brief.")
    session = InMemorySession("s1")
    first = await agent.run("My name is Ann.", session=session)
    second = await agent.run("What is my name?", session=session)
    assert [m.text for m in replies.sent[1]] == [
        "Be brief.",
        "My name is Ann.",
        "Hello Ann.",
        "What is my name?",
    ]
    stored = await session.get_messages()
    assert stored == second.all_messages == [*first.new_messages, *second.new_messages]
    assert all(m.role != ChatRole.SYSTEM for m in stored)


async def test_history_and_session_cannot_both_be_given() -> None:
    agent = Agent(FunctionChatClient(lambda m, o: "x"))
    with pytest.raises(ValueError, match="not both"):
        await agent.run("x", session=InMemorySession(), history=[])


async def test_history_is_sent_but_not_counted_as_new() -> None:
    replies = Replies(answer("ok"))
    earlier = [ChatMessage.from_text("user", "before"), ChatMessage.from_text("assistant", "yes")]
    result = await Agent(replies.client()).run("now", history=earlier)
    assert [m.text for m in replies.sent[0]] == ["before", "yes", "now"]
    assert [m.text for m in result.new_messages] == ["now", "ok"]
    assert result.all_messages == [*earlier, *result.new_messages]


@pytest.mark.parametrize("failure", ["model", "tool"])
async def test_a_run_failing_at_round_three_leaves_whole_steps(failure: str) -> None:
    @tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("disk on fire")

    third: ChatResponse | Exception = (
        ProviderError("overloaded", retryable=False) if failure == "model" else calls(("boom", {}))
    )
    replies = Replies(calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), third)
    agent = Agent(replies.client(), tools=[add, boom], max_consecutive_errors=0)
    session = InMemorySession()
    expected = ProviderError if failure == "model" else MaxConsecutiveErrorsError
    with pytest.raises(expected):
        await agent.run("add twice", session=session)
    stored = await session.get_messages()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool"]
    check_complete(stored)  # every call has its result
    assert len(replies.sent) == 3


async def test_each_step_is_stored_as_it_completes() -> None:
    session = InMemorySession()
    seen: list[int] = []

    async def look(messages: Any, options: Any) -> ChatResponse:
        seen.append(len(await session.get_messages()))
        return [calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), answer("4")][
            len(seen) - 1
        ]

    await Agent(FunctionChatClient(look), tools=[add]).run("go", session=session)
    assert seen == [0, 3, 5]  # input + step one, then step two, before each next request
    assert len(await session.get_messages()) == 6


# -- per-run state --------------------------------------------------------------------------------


async def test_two_concurrent_runs_of_one_agent_keep_their_own_budget_log_and_totals() -> None:
    """Run "big" spends 600 tokens a round and runs out of its 1,000-token budget at its third
    request; run "small" spends 100 a round over five rounds. Sharing one budget (the old
    behaviour) would refuse "small" too."""

    @tool
    async def step() -> str:
        """One step."""
        await asyncio.sleep(0)  # let the other run go on
        return "ok"

    def reply(messages: list[ChatMessage], options: Any) -> ChatResponse:
        who = messages[1].text
        done = sum(1 for m in messages if m.role == ChatRole.TOOL)
        if who == "small" and done == 4:
            return answer("small done", usage=100)
        return calls(("step", {}), usage=600 if who == "big" else 100)

    buffer = io.StringIO()
    log = RunLog(buffer)
    agent = Agent(
        FunctionChatClient(reply),
        instructions="Work.",
        tools=[step],
        max_tokens=1000,
        middleware=[lambda inner: RunLogChatClient(inner, log)],
    )
    big, small = await asyncio.gather(agent.run("big"), agent.run("small"), return_exceptions=True)
    assert isinstance(big, BudgetExceededError) and big.used == 1200
    assert isinstance(small, AgentRunResult)
    assert (small.output, small.rounds, small.usage.input_tokens) == ("small done", 5, 500)

    written = lines(buffer)
    assert all("run_id" in line for line in written)
    ids = {line["run_id"] for line in written}
    assert len(ids) == 2 and small.run_id in ids
    ends = {line["run_id"]: line["data"] for line in written if line["type"] == "run_end"}
    big_id = (ids - {small.run_id}).pop()
    assert ends[small.run_id]["status"] == "ok"
    assert ends[small.run_id]["totals"]["rounds"] == 5
    assert ends[small.run_id]["totals"]["input_tokens"] == 500
    assert ends[big_id]["status"] == "error" and "BudgetExceededError" in ends[big_id]["error"]
    assert ends[big_id]["totals"]["rounds"] == 2
    assert ends[big_id]["totals"]["input_tokens"] == 1200
    starts = [line for line in written if line["type"] == "start"]
    assert len(starts) == 2 and starts[0]["data"]["limits"]["max_tokens"] == 1000
    assert starts[0]["data"]["agent"] == "agent"


async def test_a_bare_pipeline_called_inside_a_tool_runs_as_a_child_run() -> None:
    """A tool that calls another (bare) pipeline does not feed the agent's run: its rounds and
    messages stay out of the agent's result and session."""
    inner_pipeline = (
        ChatClientBuilder(FunctionChatClient(lambda m, o: "inner answer"))
        .use_function_invocation()
        .build()
    )
    parents: list[str | None] = []

    @tool
    async def consult() -> str:
        """Ask another model."""
        outer = current_run()
        response = await inner_pipeline.get_response([ChatMessage.from_text("user", "?")])
        parents.append(outer.run_id if outer else None)
        return response.text

    replies = Replies(calls(("consult", {})), answer("done"))
    session = InMemorySession()
    result = await Agent(replies.client(), tools=[consult]).run("go", session=session)
    assert result.rounds == 2
    assert result.new_messages[2].function_results[0].result == "inner answer"
    stored = await session.get_messages()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[-1].text == "done"
    assert parents == [result.run_id]


async def test_limits_and_round_count_belong_to_the_run() -> None:
    replies = Replies(
        *[calls(("add", {"a": i, "b": 0})) for i in range(3)], answer("out of rounds")
    )
    result = await Agent(replies.client(), tools=[add], max_rounds=3).run("loop")
    assert result.max_rounds_reached and result.rounds == 4 and result.output == "out of rounds"
    tool_mode = replies.options[-1].tool_mode  # type: ignore[union-attr]
    assert tool_mode is not None and tool_mode.kind == "none"


async def test_a_tool_error_reaches_the_model_and_the_run_goes_on() -> None:
    @tool
    def refuse() -> str:
        """Refuses."""
        raise ToolError("not allowed here")

    replies = Replies(calls(("refuse", {})), answer("fine"))
    result = await Agent(replies.client(), tools=[refuse]).run("x")
    assert replies.sent[1][-1].function_results[0].result == "Error: not allowed here"
    assert result.output == "fine"
