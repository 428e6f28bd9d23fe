"""A resumed durable run, in one process on a real SQLite database (the mutation run's `durable`
target): the conversation it rebuilds is the one the model saw, tool failures come back as they
were, the model is told of the resume once (and that notice is part of the record), the run log
is written once, checkpoints of the application's own work run once.

Each execution is a runtime (DBOS) of its own, with its own executor id; an execution is
interrupted by cancelling its task inside a model request (the run stays pending, as after a
kill) and the next runtime takes the run over (``resume(force=True)``: an executor id that names
no process cannot be checked). tests/durable/test_kill_resume.py kills real processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from loopkit import (
    Agent,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    DelegatingChatClient,
    FunctionCallContent,
    FunctionChatClient,
    RunLogChatClient,
    ToolError,
    UsageContent,
)
from loopkit.abstractions.tools import FunctionTool
from loopkit.middleware.function_invocation import ToolInvocation
from tests.durable.dbos_console import dbos_console_on_current_stderr  # noqa: F401
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

from loopkit.durable import (  # noqa: E402  (needs dbos)
    DEFAULT_NOTICE,
    DurableChatClient,
    DurableError,
    DurableRunLog,
    DurableRuntime,
    DurableTool,
    active_runs,
    current_durable_run,
    durable_step,
    durable_tools,
    durable_workflow,
)

pytestmark = pytest.mark.integration


@dataclass
class Plan:
    """What the workflows do in this test (set before each execution)."""

    log_path: Path = Path("unset")
    #: Model turns: a list of (tool, arguments) calls, or the final text.
    turns: list[Any] = field(default_factory=list)
    hang_at: int = 0
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    #: What each live model request received: request number → [(role, text)].
    received: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    tool_runs: list[str] = field(default_factory=list)
    step_runs: int = 0
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    interrupted_logged: bool = False
    #: The tools each live model request was offered.
    offered: dict[int, list[str]] = field(default_factory=dict)
    #: The exception each failed tool call handed the loop: (tool, exception type).
    failures: list[tuple[str, type[BaseException]]] = field(default_factory=list)


PLAN = Plan()


def seen(message: ChatMessage) -> tuple[str, str]:
    parts = [message.text] + [f"{c.name}:{c.call_id}" for c in message.function_calls]
    parts += [f"{r.call_id}={r.result}" for r in message.function_results]
    return (message.role.value, " ".join(p for p in parts if p))


async def model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    number = 1 + sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
    PLAN.received[number] = [seen(m) for m in messages]
    PLAN.offered[number] = [t.name for t in options.tools] if options else []
    if number == PLAN.hang_at:
        PLAN.reached.set()
        await asyncio.Event().wait()  # interrupted here
    turn = PLAN.turns[number - 1]
    if isinstance(turn, str):
        text = ChatMessage.from_text(ChatRole.ASSISTANT, turn)
        return ChatResponse(messages=[text], model_id="m-live")
    calls = [
        FunctionCallContent(call_id=f"r{number}-{i}", name=name, arguments=args)
        for i, (name, args) in enumerate(turn)
    ]
    return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=calls)])


def work(n: int) -> str:
    """Work."""
    PLAN.tool_runs.append(f"work {n}")
    return f"worked {n}"


def refuse(n: int) -> str:
    """Refuse."""
    PLAN.tool_runs.append(f"refuse {n}")
    raise ToolError(f"refused {n}: ask for less")


def crash(n: int) -> str:
    """Crash."""
    PLAN.tool_runs.append(f"crash {n}")
    raise ValueError(f"crashed on {n}")


def prepare() -> Any:
    PLAN.step_runs += 1
    return {"pair": (1, 2), "text": "é"}


TOOLS = [FunctionTool.from_function(f) for f in (work, refuse, crash)]


class Failures(DelegatingChatClient):
    """Notes the exception of each failed tool call, as the loop hands it to its listeners."""

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        if invocation.exception is not None:
            PLAN.failures.append((invocation.call.name, type(invocation.exception)))


@durable_workflow("tests.resume.agent")
async def agent_workflow() -> dict[str, Any]:
    durable = current_durable_run()
    assert durable is not None
    durable.on_event = lambda kind, data: PLAN.events.append((kind, data))
    durable.interrupted_logged = PLAN.interrupted_logged
    prepared = await durable_step("tests.prepare", prepare)
    with DurableRunLog(PLAN.log_path, environ={}) as log:
        agent = Agent(
            DurableChatClient(FunctionChatClient(model)),
            tools=durable_tools(TOOLS),
            middleware=[lambda inner: RunLogChatClient(inner, log), Failures],
            include_detailed_errors=True,
            max_consecutive_errors=10,
        )
        result = await agent.run("do the work")
    return {
        "output": result.output,
        "prepared": prepared,
        "rounds": result.rounds,
        "model": result.model_id,
    }


@durable_workflow("tests.resume.quiet", notice=None)
async def quiet_workflow() -> str:
    agent = Agent(DurableChatClient(FunctionChatClient(model)), tools=durable_tools(TOOLS))
    return (await agent.run("do the work")).output


@durable_workflow("tests.resume.step-first")
async def step_first_workflow() -> Any:
    durable = current_durable_run()
    assert durable is not None
    durable.on_event = lambda kind, data: PLAN.events.append((kind, data))
    durable.interrupted_logged = PLAN.interrupted_logged
    first = await durable_step("tests.first", prepare)
    second = await durable_step("tests.second", hang_then_value)
    return [first, second]


async def hang_then_value() -> int:
    PLAN.step_runs += 1
    if PLAN.hang_at:
        PLAN.reached.set()
        await asyncio.Event().wait()
    return 42


@durable_workflow("tests.resume.bad-step")
async def bad_step_workflow() -> str:
    try:
        await durable_step("tests.bad", lambda: {"a set": {1, 2}})
    except DurableError as e:
        return str(e)
    return "no error"


# -- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path) -> Path:
    global PLAN
    PLAN = Plan(log_path=tmp_path / "run.jsonl")
    return tmp_path / "runs.sqlite"


@asynccontextmanager
async def runtime(database: Path, executor: str) -> AsyncIterator[DurableRuntime]:
    async with DurableRuntime(database, executor_id=executor, log_level="ERROR") as started:
        yield started


async def start_and_interrupt(database: Path, workflow: Any, run_id: str, hang_at: int) -> None:
    """An execution of ``workflow`` interrupted where the model (or a step) hangs."""
    from dbos import DBOS, SetWorkflowID

    PLAN.hang_at, PLAN.reached = hang_at, asyncio.Event()
    async with runtime(database, f"first-{run_id}"):
        with SetWorkflowID(run_id):
            await DBOS.start_workflow_async(workflow)
        await interrupt(run_id)


async def interrupt(run_id: str) -> None:
    await asyncio.wait_for(PLAN.reached.wait(), 30)
    durable = active_runs()[run_id]
    task = durable.task
    assert task is not None and durable.interrupt()
    await asyncio.wait({task}, timeout=30)


async def resume(
    database: Path, run_id: str, executor: str, hang_at: int = 0
) -> dict[str, Any] | None:
    """Take the run over in a new runtime; its output (None when it was interrupted again)."""
    PLAN.hang_at, PLAN.reached = hang_at, asyncio.Event()
    async with runtime(database, executor) as resumed:
        await resumed.resume(run_id, force=True)
        if hang_at:
            await interrupt(run_id)
            return None
        record = await asyncio.wait_for(resumed.wait(run_id), 60)
    assert record is not None and record.state == "succeeded", record
    output: dict[str, Any] = record.output
    return output


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


TURNS = [
    [("work", {"n": 1})],
    [("refuse", {"n": 2}), ("work", {"n": 3})],
    [("crash", {"n": 4})],
    [("work", {"n": 5})],
    "all done",
]


# -- the rebuilt conversation -------------------------------------------------------------------


async def test_each_resume_rebuilds_the_conversation_the_model_saw(database: Path) -> None:
    PLAN.turns = TURNS
    await start_and_interrupt(database, agent_workflow, "run-a", hang_at=3)
    first_three = PLAN.received[3]
    assert first_three == [
        ("user", "do the work"),
        ("assistant", "work:r1-0"),
        ("tool", "r1-0=worked 1"),
        ("assistant", "refuse:r2-0 work:r2-1"),
        ("tool", "r2-0=Error: refused 2: ask for less r2-1=worked 3"),
    ]
    assert PLAN.tool_runs == ["work 1", "refuse 2", "work 3"] and PLAN.step_runs == 1
    assert PLAN.offered[1] == ["work", "refuse", "crash"]  # the request's options reach the model
    PLAN.received.clear()
    PLAN.tool_runs.clear()

    # Second execution: requests 1 and 2 and their calls are replayed; request 3 is asked again
    # with the same conversation and the notice, once, at its end; it hangs in request 4.
    assert await resume(database, "run-a", "second", hang_at=4) is None
    assert sorted(PLAN.received) == [3, 4]
    assert PLAN.received[3] == [*first_three, ("user", DEFAULT_NOTICE)]
    assert PLAN.tool_runs == ["crash 4"] and PLAN.step_runs == 1
    second_four = PLAN.received[4]
    assert second_four == [
        *first_three,
        ("user", DEFAULT_NOTICE),
        ("assistant", "crash:r3-0"),
        ("tool", "r3-0=Error: crash failed with ValueError: crashed on 4"),
    ]
    PLAN.received.clear()
    PLAN.tool_runs.clear()

    # Third execution: everything up to request 4 is replayed, the failures as they were (a
    # ToolError's message, the ValueError by its name) and the first notice where it was.
    # the loop saw the tool's own exception when it ran (a ValueError is a ValueError) and a
    # stand-in of the same name when the call was replayed
    assert [(name, kind.__name__) for name, kind in PLAN.failures] == [
        ("refuse", "ToolError"),
        ("refuse", "ToolError"),
        ("crash", "ValueError"),
    ]
    assert PLAN.failures[2][1] is ValueError
    PLAN.failures.clear()
    output = await resume(database, "run-a", "third")
    assert output == {
        "output": "all done",
        "prepared": {"pair": [1, 2], "text": "é"},
        "rounds": 5,
        "model": "m-live",
    }
    assert PLAN.received[4] == [*second_four, ("user", DEFAULT_NOTICE)]
    replayed_crash = PLAN.failures[1][1]
    assert replayed_crash.__name__ == "ValueError" and not issubclass(replayed_crash, ValueError)
    assert ("tool", "r2-0=Error: refused 2: ask for less r2-1=worked 3") in PLAN.received[4]
    assert PLAN.tool_runs == ["work 5"] and PLAN.step_runs == 1


async def test_the_run_log_is_written_once_across_executions(database: Path) -> None:
    PLAN.turns = TURNS
    await start_and_interrupt(database, agent_workflow, "run-log", hang_at=3)
    await resume(database, "run-log", "second", hang_at=4)
    await resume(database, "run-log", "third")
    lines = log_lines(PLAN.log_path)
    # (An interrupted execution's agent run also writes a run_end line with the CancelledError
    # that stopped it; what a resumed log holds there is the durable runtime's subject.)
    kinds = [
        (line["type"], line["data"].get("round")) for line in lines if line["type"] != "run_end"
    ]
    assert kinds == [
        ("start", None),
        ("round", 1),
        ("tool", None),
        ("round", 2),
        ("tool", None),
        ("tool", None),
        ("interrupted", None),
        ("resumed", None),
        ("round", 3),
        ("tool", None),
        ("interrupted", None),
        ("resumed", None),
        ("round", 4),
        ("tool", None),
        ("round", 5),
    ]
    assert lines[-1]["type"] == "run_end" and lines[-1]["data"]["status"] == "ok"
    resumed = [line["data"] for line in lines if line["type"] == "resumed"]
    assert [r["replayed"] for r in resumed] == [
        {"step": 1, "model": 2, "tool": 3},
        {"step": 1, "model": 3, "tool": 4},
    ]
    assert [r["executor"] for r in resumed] == ["second", "third"]
    assert all(r["workflow_id"] == "run-log" for r in resumed)
    interrupted = [line["data"] for line in lines if line["type"] == "interrupted"]
    assert [i["executor"] for i in interrupted] == ["first-run-log", "first-run-log"]
    assert all("noticed on resume" in i["reason"] for i in interrupted)
    assert {line["run_id"] for line in lines} == {"run-log"}
    assert lines[-1]["data"]["totals"]["rounds"] == 5
    assert lines[-1]["data"]["totals"]["tool_calls"] == 5
    assert lines[-1]["data"]["totals"]["tool_errors"] == 2


async def test_a_workflow_without_a_notice_tells_the_model_nothing(database: Path) -> None:
    PLAN.turns = TURNS
    await start_and_interrupt(database, quiet_workflow, "run-quiet", hang_at=3)
    before = PLAN.received[3]
    PLAN.received.clear()
    from dbos import DBOS

    PLAN.hang_at = 0
    async with runtime(database, "second") as resumed:
        await resumed.resume("run-quiet", force=True)
        record = await asyncio.wait_for(resumed.wait("run-quiet"), 60)
        assert record is not None and record.output == "all done"
        assert await DBOS.list_workflow_steps_async("run-quiet")
    assert PLAN.received[3] == before


# -- events when the resume point is not in an agent run ----------------------------------------


@pytest.mark.parametrize("logged", [False, True])
async def test_a_resume_outside_an_agent_run_reports_to_the_application(
    database: Path, logged: bool
) -> None:
    PLAN.interrupted_logged = logged
    await start_and_interrupt(database, step_first_workflow, "run-steps", hang_at=1)
    assert PLAN.step_runs == 2
    PLAN.events.clear()
    PLAN.hang_at = 0
    async with runtime(database, "second") as resumed:
        await resumed.resume("run-steps", force=True)
        record = await asyncio.wait_for(resumed.wait("run-steps"), 60)
    assert record is not None and record.output == [{"pair": [1, 2], "text": "é"}, 42]
    assert PLAN.step_runs == 3  # the first step was replayed, the second ran again
    kinds = [kind for kind, _ in PLAN.events]
    assert kinds == (["resumed"] if logged else ["interrupted", "resumed"])
    resumed_data = PLAN.events[-1][1]
    assert resumed_data == {
        "workflow_id": "run-steps",
        "executor": "second",
        "replayed": {"step": 1},
    }
    if not logged:
        assert PLAN.events[0][1]["executor"] == "first-run-steps"


async def test_a_step_whose_value_is_not_json_data_is_a_clear_error(database: Path) -> None:
    from dbos import DBOS, SetWorkflowID

    async with runtime(database, "only"):
        with SetWorkflowID("run-bad"):
            handle = await DBOS.start_workflow_async(bad_step_workflow)
        message = await asyncio.wait_for(handle.get_result(), 60)
    assert message.startswith("checkpoint 'tests.bad': its value is not JSON data (")


# -- outside a workflow -------------------------------------------------------------------------


async def test_outside_a_workflow_everything_passes_through(database: Path) -> None:
    PLAN.turns = TURNS
    assert current_durable_run() is None
    client = DurableChatClient(FunctionChatClient(model))
    response = await client.get_response([ChatMessage.from_text(ChatRole.USER, "hi")])
    assert response.function_calls[0].name == "work"
    updates = [u async for u in client.get_streaming_response([ChatMessage.from_text("user", "x")])]
    assert any(c.name == "work" for u in updates for c in u.contents if hasattr(c, "name"))
    [durable_work, durable_refuse, durable_crash] = durable_tools(TOOLS)
    assert isinstance(durable_work, DurableTool)
    assert (durable_work.name, durable_work.description) == ("work", "Work.")
    assert durable_work.parameters == TOOLS[0].parameters
    assert repr(durable_work) == f"DurableTool({TOOLS[0]!r})"
    assert durable_tools([durable_work]) == [durable_work]  # a durable tool is kept as it is
    assert await durable_work.invoke({"n": 7}) == "worked 7"
    with pytest.raises(ToolError, match="refused 8"):
        await durable_refuse.invoke({"n": 8})
    with pytest.raises(ValueError, match="crashed on 9"):
        await durable_crash.invoke({"n": 9})
    assert PLAN.tool_runs == ["work 7", "refuse 8", "crash 9"]


# -- found by the mutation run: more than one run, bare requests, streaming, odd failures -------

SECOND: list[list[tuple[str, str]]] = []


async def second_model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
    SECOND.append([seen(m) for m in messages])
    return "second done"


async def either_model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
    if messages[0].text == "then this":
        return await second_model(messages, options)
    return await model(messages, options)


@durable_workflow("tests.resume.two-runs")
async def two_runs_workflow() -> list[str]:
    # one client for both runs: what it remembers of a resume is per run
    shared = DurableChatClient(FunctionChatClient(either_model))
    first = Agent(shared, tools=durable_tools(TOOLS))
    second = Agent(shared)
    return [(await first.run("do the work")).output, (await second.run("then this")).output]


async def test_the_notice_belongs_to_the_run_that_was_resumed(database: Path) -> None:
    PLAN.turns = TURNS
    SECOND.clear()
    await start_and_interrupt(database, two_runs_workflow, "run-two", hang_at=2)
    output = await resume(database, "run-two", "second")
    assert output == ["all done", "second done"]
    assert PLAN.received[2][-1] == ("user", DEFAULT_NOTICE)
    assert SECOND == [[("user", "then this")]]  # the next run is told nothing


BARE: list[list[tuple[str, str]]] = []


async def bare_model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
    number = sum(1 for m in messages if m.role == ChatRole.USER and m.text.startswith("u"))
    BARE.append([seen(m) for m in messages])
    if number == PLAN.hang_at:
        PLAN.reached.set()
        await asyncio.Event().wait()
    return f"answer {number}"


@durable_workflow("tests.resume.bare")
async def bare_workflow() -> list[str]:
    client = DurableChatClient(FunctionChatClient(bare_model))
    conversation = [ChatMessage.from_text(ChatRole.USER, "u1")]
    answers = []
    for turn in ("u2", "u3", "u4"):
        response = await client.get_response(conversation)
        answers.append(response.text)
        conversation = [*conversation, *response.messages, ChatMessage.from_text("user", turn)]
    return answers


async def test_requests_outside_an_agent_run_carry_the_notice_too(database: Path) -> None:
    BARE.clear()
    await start_and_interrupt(database, bare_workflow, "run-bare", hang_at=2)
    BARE.clear()
    assert await resume(database, "run-bare", "second", hang_at=3) is None
    # request 1 replayed; request 2 asked again with the notice at its end; it hangs in 3
    notice = ("user", DEFAULT_NOTICE)
    second = [("user", "u1"), ("assistant", "answer 1"), ("user", "u2")]
    assert BARE[0] == [*second, notice]
    BARE.clear()
    output = await resume(database, "run-bare", "third")
    assert output == ["answer 1", "answer 2", "answer 3"]
    # request 3 again: the earlier notice where it was recorded, and a new one at the end
    assert [[*second, notice, ("assistant", "answer 2"), ("user", "u3"), notice]] == BARE


class StreamingModel(FunctionChatClient):
    """Streams ``usage_model``'s answer, ending with its usage, finish reason, model and id."""

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        response = await usage_model(messages, options)
        for m in response.messages:
            yield ChatResponseUpdate(role=m.role, contents=list(m.contents))
        yield ChatResponseUpdate(
            contents=[UsageContent(usage=response.usage)],
            finish_reason=response.finish_reason,
            model_id=response.model_id,
            response_id=f"resp-{len(messages)}",
        )


@durable_workflow("tests.resume.streamed")
async def streamed_workflow() -> dict[str, Any]:
    agent = Agent(DurableChatClient(StreamingModel(usage_model)), tools=durable_tools(TOOLS))
    texts: list[str] = []
    final: Any = None
    async for event in agent.run_stream("do the work"):
        texts.append(type(event).__name__)
        final = event
    result = final.result
    usage = result.usage
    return {
        "output": result.output,
        "rounds": result.rounds,
        "usage": [usage.input_tokens, usage.output_tokens],
        "model": result.model_id,
        "finish": result.finish_reason,
        "events": texts,
    }


async def usage_model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
    response = await model(messages, options)
    from loopkit import UsageDetails

    response.usage = UsageDetails(input_tokens=100, output_tokens=10)
    response.model_id = "m-7"
    response.finish_reason = "stop" if response.text else "tool_calls"
    return response


async def test_a_streamed_run_records_and_replays_each_request_whole(database: Path) -> None:
    PLAN.turns = TURNS
    await start_and_interrupt(database, streamed_workflow, "run-stream", hang_at=3)
    first_three = PLAN.received[3]
    PLAN.received.clear()
    output = await resume(database, "run-stream", "second")
    assert output is not None
    assert {k: output[k] for k in ("output", "rounds", "usage", "model", "finish")} == {
        "output": "all done",
        "rounds": 5,
        "usage": [500, 50],  # the replayed requests' usage counts too
        "model": "m-7",
        "finish": "stop",
    }
    assert output["events"][-1] == "FinalResult" and "ToolCallStarted" in output["events"]
    assert sorted(PLAN.received) == [3, 4, 5]
    assert PLAN.received[3] == [*first_three, ("user", DEFAULT_NOTICE)]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class Breaks:
    """A tool (no FunctionTool around it) raising an exception that cannot be printed."""

    name = "breaks"
    description = "Breaks."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def invoke(self, arguments: dict[str, Any]) -> str:
        PLAN.tool_runs.append("breaks")
        raise Unprintable()


@durable_workflow("tests.resume.unprintable")
async def unprintable_workflow() -> str:
    agent = Agent(
        DurableChatClient(FunctionChatClient(model)),
        tools=durable_tools([*TOOLS, Breaks()]),
        include_detailed_errors=True,
    )
    return (await agent.run("do the work")).output


async def test_a_failure_that_cannot_be_printed_replays_as_it_read(database: Path) -> None:
    PLAN.turns = [[("breaks", {})], [("work", {"n": 2})], "all done"]
    await start_and_interrupt(database, unprintable_workflow, "run-odd", hang_at=3)
    expected = ("tool", "r1-0=Error: breaks failed with Unprintable.")
    assert expected in PLAN.received[3]
    first = PLAN.received[3]
    PLAN.received.clear()
    PLAN.tool_runs.clear()
    assert await resume(database, "run-odd", "second") == "all done"
    assert PLAN.received[3] == [*first, ("user", DEFAULT_NOTICE)]
    assert PLAN.tool_runs == []  # replayed, not run
