"""Durable-run behaviour an outside reviewer changed without any test noticing (issue 21): a
resumed run that takes another path stops with ``DurableReplayError``; agent runs started
inside a durable run (subagents) keep their own ids; a cancelled run has ended for ``resume``
and ``wait``.

In one process, on a real SQLite database in a temp folder: one runtime (DBOS) starts the run
and the run is interrupted in it (its task cancelled: the run stays pending, as after a kill);
the runtime stops and another, with another executor id, takes the run over as a new process
would (``resume(force=True)``: an executor id that names no process cannot be checked). The
kill of a real process is tests/durable/test_kill_resume.py's subject; here it is what the
resumed run does.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopkit import (
    Agent,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    RunLog,
    RunLogChatClient,
)
from loopkit.abstractions.tools import FunctionTool
from tests.durable.dbos_console import dbos_console_on_current_stderr  # noqa: F401
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

from loopkit.durable import (  # noqa: E402  (needs dbos)
    DurableChatClient,
    DurableError,
    DurableRuntime,
    active_runs,
    current_durable_run,
    durable_tools,
    durable_workflow,
)

pytestmark = pytest.mark.integration


@dataclass
class Script:
    """What the workflows below do; the test sets it before each execution (a resumed run reads
    its arguments from the database, so its path is changed here, as a code change would)."""

    instructions: str | None = None
    #: The model request (1-based) at which the model waits for ``release`` (0: never).
    hang_at: int = 0
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    #: What the model really answered (a replayed request is not here).
    requests: list[int] = field(default_factory=list)
    log: io.StringIO = field(default_factory=io.StringIO)


SCRIPT = Script()


async def model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    number = 1 + sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
    SCRIPT.requests.append(number)
    if number == SCRIPT.hang_at:
        SCRIPT.reached.set()
        await SCRIPT.release.wait()
    if number <= 2:
        call = FunctionCallContent(call_id=f"c{number}", name="work", arguments={"n": number})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])
    return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "all done")])


def work(n: int) -> str:
    """Do the n-th piece of work."""
    return f"piece {n} done"


def logged(client: Any) -> Any:
    return RunLogChatClient(client, RunLog(SCRIPT.log, environ={}))


@durable_workflow("tests.pinned.loop")
async def loop_workflow() -> dict[str, Any]:
    agent = Agent(
        DurableChatClient(FunctionChatClient(model)),
        instructions=SCRIPT.instructions,
        tools=durable_tools([FunctionTool.from_function(work)]),
    )
    result = await agent.run("do the work")
    return {"output": result.output, "rounds": result.rounds}


@durable_workflow("tests.pinned.subagents")
async def subagent_workflow() -> dict[str, Any]:
    durable = current_durable_run()
    assert durable is not None
    child = Agent(
        DurableChatClient(FunctionChatClient(lambda m, o: "the child's answer")),
        name="child",
        middleware=[logged],
    )

    def lead_model(messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        if messages[-1].role == ChatRole.TOOL:
            return "the lead's answer"
        call = FunctionCallContent(call_id="ask", name="child", arguments={"task": "help"})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])

    lead = Agent(
        DurableChatClient(FunctionChatClient(lead_model)),
        name="lead",
        tools=[child.as_tool("child")],
        middleware=[logged],
    )
    first = await lead.run("delegate")
    second = await lead.run("delegate again")
    return {
        "workflow": durable.workflow_id,
        "first": first.run_id,
        "second": second.run_id,
        "parents": [first.parent_run_id, second.parent_run_id],
    }


# -- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path) -> Path:
    global SCRIPT
    SCRIPT = Script()
    return tmp_path / "runs.sqlite"


@asynccontextmanager
async def runtime(database: Path, executor: str) -> AsyncIterator[DurableRuntime]:
    async with DurableRuntime(database, executor_id=executor, log_level="ERROR") as started:
        yield started


async def start(workflow: Callable[[], Any], run_id: str) -> Any:
    from dbos import DBOS, SetWorkflowID

    with SetWorkflowID(run_id):
        return await DBOS.start_workflow_async(workflow)


async def interrupt_when_hanging(run_id: str) -> None:
    """Wait until the model hangs, then interrupt the run (it stays pending)."""
    await asyncio.wait_for(SCRIPT.reached.wait(), 30)
    durable = active_runs()[run_id]
    task = durable.task
    assert task is not None and durable.interrupt()
    assert durable.cancelled is False  # interrupted here, not cancelled: it can be resumed
    await asyncio.wait({task}, timeout=30)
    assert task.done()


async def interrupted_run(database: Path, run_id: str) -> None:
    """A run of loop_workflow interrupted in its third model request: two model requests and
    two tool calls are recorded."""
    SCRIPT.hang_at = 3
    async with runtime(database, "pin-first") as first:
        await start(loop_workflow, run_id)
        await interrupt_when_hanging(run_id)
        record = await first.get_run(run_id)
        assert record is not None and record.status == "PENDING"
        assert [s.name for s in await first.steps(run_id)] == [
            "loopkit.run.start",
            "loopkit.model",
            "loopkit.tool.work",
            "loopkit.model",
            "loopkit.tool.work",
        ]
    assert SCRIPT.requests == [1, 2, 3]
    SCRIPT.requests.clear()
    SCRIPT.hang_at = 0
    SCRIPT.reached.clear()


# -- replay -------------------------------------------------------------------------------------


async def test_a_resumed_run_on_the_same_path_replays_its_checkpoints(database: Path) -> None:
    await interrupted_run(database, "run-same")
    async with runtime(database, "pin-second") as second:
        await second.resume("run-same", force=True)
        record = await asyncio.wait_for(second.wait("run-same"), 60)
    assert record is not None and record.state == "succeeded", record
    assert record.output == {"output": "all done", "rounds": 3}
    assert SCRIPT.requests == [3]  # requests 1 and 2 were replayed, not asked again


async def test_a_resumed_run_that_takes_another_path_stops_with_a_replay_error(
    database: Path,
) -> None:
    await interrupted_run(database, "run-other")
    # The code changed between the two executions: the agent has instructions now, so its
    # first model request sends two messages where the recorded one sent one.
    SCRIPT.instructions = "Work carefully."
    async with runtime(database, "pin-second") as second:
        await second.resume("run-other", force=True)
        record = await asyncio.wait_for(second.wait("run-other"), 60)
    assert record is not None and record.state == "failed", record
    assert record.error is not None
    assert record.error.startswith("DurableReplayError: run run-other: the model request")
    assert record.error == (
        "DurableReplayError: run run-other: the model request at this point sent 1 messages "
        "when it was recorded and 2 now; the run took another path than the one its "
        "checkpoints recorded (did the code, the card or the settings change?)"
    )
    assert SCRIPT.requests == []  # the model was not asked anything on a path it never took


# -- ids of the agent runs in a durable run -----------------------------------------------------


async def test_subagents_inside_a_durable_run_keep_their_own_ids(database: Path) -> None:
    async with runtime(database, "pin-ids") as started:
        handle = await start(subagent_workflow, "wf-ids")
        output = await asyncio.wait_for(handle.get_result(), 60)
        steps = [s.name for s in await started.steps("wf-ids")]
    # the top-level agent runs of the workflow take its id (the log names the workflow)
    assert (output["workflow"], output["first"], output["second"]) == (
        "wf-ids",
        "wf-ids",
        "wf-ids-2",
    )
    assert output["parents"] == [None, None]
    lines = [json.loads(line) for line in SCRIPT.log.getvalue().splitlines()]
    children = [line for line in lines if line["type"] == "child_run"]
    assert [c["run_id"] for c in children] == ["wf-ids", "wf-ids-2"]
    child_ids = [c["data"]["child_run_id"] for c in children]
    # each child run keeps the id it was given: distinct, not the workflow's, not a top-level one
    assert len(set(child_ids)) == 2
    assert not {"wf-ids", "wf-ids-2", "wf-ids-3", "wf-ids-4"} & set(child_ids)
    for child_id, parent in zip(child_ids, ["wf-ids", "wf-ids-2"], strict=True):
        mine = [line for line in lines if line["run_id"] == child_id]
        assert [line["type"] for line in mine] == ["start", "round", "run_end"]
        assert all(line["parent_run_id"] == parent for line in mine)
        assert mine[0]["data"]["agent"] == "child"
    # every request of both runs was a checkpoint: 2 lead rounds and 1 child round, twice
    assert steps.count("loopkit.model") == 6


# -- a cancelled run ----------------------------------------------------------------------------


async def test_a_cancelled_run_has_ended_for_resume_and_wait(database: Path) -> None:
    from dbos import DBOS

    SCRIPT.hang_at = 2
    async with runtime(database, "pin-cancel") as started:
        await start(loop_workflow, "run-cancelled")
        await asyncio.wait_for(SCRIPT.reached.wait(), 30)
        await DBOS.cancel_workflow_async("run-cancelled")
        durable = active_runs()["run-cancelled"]
        task = durable.task
        assert task is not None and durable.interrupt(cancelled=True)
        assert durable.cancelled  # the application can say why it stopped
        await asyncio.wait({task}, timeout=30)
        record = await started.get_run("run-cancelled")
        assert record is not None
        assert (record.status, record.state, record.finished) == ("CANCELLED", "cancelled", True)
        # waiting for it answers at once: it will never run again
        waited = await asyncio.wait_for(started.wait("run-cancelled", poll_seconds=0.05), 10)
        assert waited is not None and waited.state == "cancelled"
    async with runtime(database, "pin-after") as later:
        with pytest.raises(DurableError, match=r"run run-cancelled has ended \(CANCELLED\)"):
            await later.resume("run-cancelled", force=True)
        waited = await asyncio.wait_for(later.wait("run-cancelled", poll_seconds=0.05), 10)
        assert waited is not None and waited.finished
        steps = await later.steps("run-cancelled")
    assert SCRIPT.requests == [1, 2]
    assert [s.name for s in steps].count("loopkit.model") == 1  # request 2 never completed


@pytest.mark.parametrize(
    ("status", "finished"),
    [("SUCCESS", True), ("ERROR", True), ("CANCELLED", True), ("MAX_RECOVERY_ATTEMPTS_EXCEEDED", True),
     ("PENDING", False), ("ENQUEUED", False)],
)  # fmt: skip
def test_which_states_have_ended(status: str, finished: bool) -> None:
    from loopkit.durable import RunRecord

    record = RunRecord("r", "w", status, None, None, None, None, None)
    assert record.finished is finished
