"""The durable runtime's settings and what it reads back (the mutation run's `durable` target):
the database URL, executor ids and whether their process lives, how a run's status reads, the
runtime's refusals, and the records of runs and checkpoints. In one process, on SQLite files in
temp folders."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from loopkit import ToolError
from tests.durable.dbos_console import dbos_console_on_current_stderr  # noqa: F401
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

from loopkit.durable import (  # noqa: E402  (needs dbos)
    DurableChatClient,
    DurableError,
    DurableRuntime,
    RunRecord,
    current_durable_run,
    database_url,
    durable_step,
    durable_tools,
    durable_workflow,
    executor_alive,
    process_executor_id,
)

pytestmark = pytest.mark.integration


# -- the database -------------------------------------------------------------------------------


def test_the_database_is_the_setting_then_the_variable_then_the_default(tmp_path: Path) -> None:
    env = {"LOOPKIT_DATABASE_URL": "sqlite:////from/env.sqlite"}
    assert database_url("sqlite:////given.sqlite", environ=env) == "sqlite:////given.sqlite"
    assert database_url(None, environ=env, default="x") == "sqlite:////from/env.sqlite"
    assert database_url("", environ=env) == "sqlite:////from/env.sqlite"
    assert database_url(None, environ={}, default=tmp_path) == (
        f"sqlite:///{tmp_path.resolve()}/loopkit.sqlite"
    )
    assert database_url(None, environ={"LOOPKIT_DATABASE_URL": ""}, default=tmp_path) == (
        f"sqlite:///{tmp_path.resolve()}/loopkit.sqlite"
    )


def test_paths_and_urls_read_as_expected(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    assert database_url(folder, environ={}) == f"sqlite:///{folder.resolve()}/loopkit.sqlite"
    assert database_url(tmp_path / "new-folder", environ={}) == (
        f"sqlite:///{(tmp_path / 'new-folder').resolve()}/loopkit.sqlite"
    )
    assert database_url(str(tmp_path / "my.db"), environ={}) == (
        f"sqlite:///{(tmp_path / 'my.db').resolve()}"
    )
    assert database_url("  postgresql://u@h/db  ", environ={}) == "postgresql+psycopg://u@h/db"
    assert database_url("postgresql+psycopg://u@h/db", environ={}) == "postgresql+psycopg://u@h/db"


def test_a_missing_or_foreign_database_is_a_clear_error() -> None:
    with pytest.raises(
        DurableError, match="no database for durable runs: set LOOPKIT_DATABASE_URL"
    ):
        database_url(None, environ={})
    with pytest.raises(DurableError) as raised:
        database_url("mysql://admin:s3cret@db.example/runs", environ={})
    assert str(raised.value) == (
        "database URL 'db.example/runs': the scheme 'mysql' is not supported; use "
        "sqlite:///path/to/file.sqlite or postgresql+psycopg://user@host/db"
    )


# -- executors ----------------------------------------------------------------------------------


def test_an_executor_id_names_this_process_and_it_lives() -> None:
    executor = process_executor_id("worker")
    kind, host, pid, start = executor.split(":")
    assert (kind, host, pid) == ("worker", socket.gethostname(), str(os.getpid()))
    assert start.isdigit() or (start == "" and not sys.platform.startswith("linux"))
    assert process_executor_id().startswith("process:")
    assert executor_alive(executor) is True


def test_a_finished_process_is_dead_and_unknown_ids_cannot_be_told() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host = socket.gethostname()
    assert executor_alive(f"worker:{host}:{child.pid}:1") is False
    for unknown in (None, "", "my-worker", f"worker:other-host:{os.getpid()}:1",
                    f"worker:{host}:notapid:1", f"a:b:{host}:{os.getpid()}:1"):  # fmt: skip
        assert executor_alive(unknown) is None, unknown


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times come from /proc")
def test_a_reused_pid_is_another_process() -> None:
    host, pid = socket.gethostname(), os.getpid()
    start = process_executor_id().rsplit(":", 1)[1]
    assert executor_alive(f"x:{host}:{pid}:{start}") is True
    assert executor_alive(f"x:{host}:{pid}:{int(start) + 1}") is False
    assert executor_alive(f"x:{host}:{pid}:") is True  # no start time recorded: the pid decides


# -- how a status reads ---------------------------------------------------------------------------


def record(status: str, *, alive: bool | None = None, queue: str | None = None) -> RunRecord:
    return RunRecord("r", "w", status, "e", alive, queue, None, None)


@pytest.mark.parametrize(
    ("status", "alive", "queue", "state"),
    [
        ("PENDING", True, None, "running"),
        ("PENDING", None, None, "running"),
        ("PENDING", False, None, "interrupted"),
        ("ENQUEUED", None, "loopkit.cards", "queued"),
        ("DELAYED", None, "loopkit.cards", "queued"),
        ("ENQUEUED", None, None, "queued"),
        ("SUCCESS", None, None, "succeeded"),
        ("CANCELLED", None, None, "cancelled"),
        ("ERROR", None, None, "failed"),
        ("MAX_RECOVERY_ATTEMPTS_EXCEEDED", None, None, "failed"),
    ],
)
def test_a_status_reads_as_a_state(
    status: str, alive: bool | None, queue: str | None, state: str
) -> None:
    assert record(status, alive=alive, queue=queue).state == state


def test_a_run_queued_for_a_resuming_process_that_died_is_interrupted() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = f"process:{socket.gethostname()}:{child.pid}:1"
    alive = process_executor_id()
    assert record("ENQUEUED", queue=f"loopkit-resume:{dead}").state == "interrupted"
    assert record("DELAYED", queue=f"loopkit-resume:{dead}").state == "interrupted"
    assert record("ENQUEUED", queue=f"loopkit-resume:{alive}").state == "queued"
    assert record("ENQUEUED", queue="loopkit-resume:someone").state == "queued"


# -- the runtime --------------------------------------------------------------------------------


STEP_VALUES: list[Any] = []


@durable_workflow("tests.runtime.steps")
async def steps_workflow(name: str, count: int) -> dict[str, Any]:
    values = []
    for i in range(count):
        values.append(await durable_step(f"tests.step.{i}", lambda i=i: {"i": i}))
    if name == "fail":
        raise ValueError("the workflow failed on purpose")
    return {"name": name, "values": values}


def test_bad_runtime_settings_are_refused_and_credentials_never_shown(tmp_path: Path) -> None:
    with pytest.raises(DurableError, match=r"max_runs must be at least 1 \(got 0\)"):
        DurableRuntime(tmp_path, max_runs=0)
    runtime = DurableRuntime("postgresql://admin:s3cret@db.example/runs", executor_id="w1")
    assert repr(runtime) == "DurableRuntime('db.example/runs', executor_id='w1')"
    assert runtime.private_queue == "loopkit-resume:w1"
    assert runtime.listen == ["loopkit-resume:w1"]
    assert DurableRuntime(tmp_path, executor_id="w2", listen=["a", "b"]).listen == [
        "a",
        "b",
        "loopkit-resume:w2",
    ]
    assert DurableRuntime(tmp_path, listen=None).listen is None
    assert DurableRuntime(tmp_path).executor_id.startswith("process:")


async def test_a_runtime_reads_nothing_before_it_starts(tmp_path: Path) -> None:
    runtime = DurableRuntime(tmp_path / "db.sqlite", executor_id="idle")
    for call in (
        runtime.list_runs(),
        runtime.get_run("x"),
        runtime.steps("x"),
        runtime.resume("x"),
    ):
        with pytest.raises(DurableError, match=r"not started: use `async with runtime:`"):
            await call
    await runtime.stop()  # stopping what never started is harmless


async def test_one_runtime_a_process_and_starting_twice_is_harmless(tmp_path: Path) -> None:
    async with DurableRuntime(tmp_path / "a.sqlite", executor_id="one") as runtime:
        await runtime.start()  # again: nothing happens
        other = DurableRuntime(tmp_path / "b.sqlite", executor_id="two")
        with pytest.raises(DurableError, match="already running in this process"):
            await other.start()
    async with DurableRuntime(tmp_path / "b.sqlite", executor_id="two"):
        pass  # after the first stopped, another may start


async def test_runs_and_checkpoints_read_back(tmp_path: Path) -> None:
    from dbos import DBOS, SetWorkflowID

    started = datetime.now(UTC)
    async with DurableRuntime(tmp_path / "db.sqlite", executor_id="reader") as runtime:
        for run_id, name, count in (("r1", "one", 2), ("r2", "two", 0), ("r3", "fail", 1)):
            with SetWorkflowID(run_id):
                handle = await DBOS.start_workflow_async(steps_workflow, name, count)
            with contextlib.suppress(ValueError):
                await handle.get_result()
        assert runtime.runs_started == 3
        newest = await runtime.list_runs()
        assert [r.run_id for r in newest] == ["r3", "r2", "r1"]
        oldest = await runtime.list_runs(newest_first=False, limit=2)
        assert [r.run_id for r in oldest] == ["r1", "r2"]
        assert [r.run_id for r in await runtime.list_runs(status="ERROR")] == ["r3"]
        assert [r.run_id for r in await runtime.list_runs(status=["SUCCESS"])] == ["r2", "r1"]
        assert await runtime.list_runs(workflow="tests.other") == []
        assert len(await runtime.list_runs(workflow=["tests.runtime.steps"])) == 3
        one = await runtime.get_run("r1")
        assert await runtime.get_run("nothing") is None
        steps = await runtime.steps("r1")
        failed = await runtime.get_run("r3")
    assert one is not None and failed is not None
    assert (one.run_id, one.workflow, one.status, one.state) == (
        "r1",
        "tests.runtime.steps",
        "SUCCESS",
        "succeeded",
    )
    assert one.finished and one.executor_id == "reader" and one.executor_alive is None
    assert one.inputs == {"args": ["one", 2], "kwargs": {}}
    assert one.output == {"name": "one", "values": [{"i": 0}, {"i": 1}]}
    assert one.error is None and one.queue is None
    assert one.created_at is not None and one.updated_at is not None
    assert started.replace(microsecond=0) <= one.created_at.replace(microsecond=0)
    assert one.created_at <= one.updated_at <= datetime.now(UTC)
    assert (failed.state, failed.error) == ("failed", "ValueError: the workflow failed on purpose")
    assert [(s.number, s.name, s.error) for s in steps] == [
        (1, "loopkit.run.start", None),
        (2, "tests.step.0", None),
        (3, "tests.step.1", None),
    ]
    assert steps[1].output == '{"i":0}'
    for step in steps:
        assert step.started_at is not None and step.completed_at is not None
        assert step.started_at <= step.completed_at


async def test_a_run_that_cannot_be_taken_over_is_refused(tmp_path: Path) -> None:
    from dbos import DBOS, SetWorkflowID

    db = tmp_path / "db.sqlite"
    async with DurableRuntime(db, executor_id=process_executor_id("test")) as runtime:
        with pytest.raises(DurableError, match=r"there is no run 'ghost' in DurableRuntime\("):
            await runtime.resume("ghost")
        with SetWorkflowID("done"):
            await (await DBOS.start_workflow_async(steps_workflow, "x", 1)).get_result()
        with pytest.raises(
            DurableError, match=r"run done has ended \(SUCCESS\); nothing to resume"
        ):
            await runtime.resume("done")
    # A pending run of an executor that is alive (this process) is never taken over.
    await _leave_pending(db, "mine", process_executor_id("test"))
    async with DurableRuntime(db, executor_id="other") as runtime:
        with pytest.raises(DurableError) as raised:
            await runtime.resume("mine", force=True)
        assert str(raised.value).endswith("resume it only once that process is gone")
    # One of an executor that cannot be checked needs force=True.
    await _leave_pending(db, "theirs", "some-worker")
    async with DurableRuntime(db, executor_id="other") as runtime:
        with pytest.raises(DurableError) as raised:
            await runtime.resume("theirs")
        assert str(raised.value) == (
            "run theirs may still be running (executor some-worker); resume it only once that "
            "process is gone (force=True to take it over)"
        )
        await runtime.resume("theirs", force=True)
        record = await asyncio.wait_for(runtime.wait("theirs", poll_seconds=0.05), 60)
    assert record is not None and record.state == "succeeded"


HANG: list[asyncio.Event] = []


@durable_workflow("tests.runtime.hang")
async def hang_workflow() -> str:
    await durable_step("tests.before", lambda: 1)
    if HANG:
        HANG[0].set()
        await asyncio.Event().wait()
    return "finished"


async def _leave_pending(db: Path, run_id: str, executor: str) -> None:
    """A run of hang_workflow left pending by an execution of ``executor`` (interrupted)."""
    from dbos import DBOS, SetWorkflowID

    from loopkit.durable import active_runs

    HANG[:] = [asyncio.Event()]
    async with DurableRuntime(db, executor_id=executor):
        with SetWorkflowID(run_id):
            await DBOS.start_workflow_async(hang_workflow)
        await asyncio.wait_for(HANG[0].wait(), 30)
        durable = active_runs()[run_id]
        assert durable.task is not None and durable.interrupt()
        await asyncio.wait({durable.task}, timeout=30)
    HANG.clear()


async def test_waiting_that_is_cancelled_interrupts_the_run_it_waits_for(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    await _leave_pending(db, "long", "some-worker")
    HANG[:] = [asyncio.Event()]
    async with DurableRuntime(db, executor_id="waiter") as runtime:
        await runtime.resume("long", force=True)
        waiting = asyncio.ensure_future(runtime.wait("long", poll_seconds=0.02))
        await asyncio.wait_for(HANG[0].wait(), 30)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        record = await runtime.get_run("long")
    assert record is not None and record.status == "PENDING"  # interrupted, not ended
    HANG.clear()


# -- found by the mutation run ------------------------------------------------------------------


@durable_workflow("tests.runtime.failing-step")
async def failing_step_workflow() -> str:
    def fail() -> None:
        raise KeyError("no such key")

    try:
        await durable_step("tests.failing", fail)
    except KeyError:
        return "caught"
    return "not raised"


async def test_a_failed_checkpoint_reads_back_with_its_error(tmp_path: Path) -> None:
    from dbos import DBOS, SetWorkflowID

    async with DurableRuntime(tmp_path / "db.sqlite", executor_id="reader") as runtime:
        with SetWorkflowID("r-fail"):
            handle = await DBOS.start_workflow_async(failing_step_workflow)
        assert await handle.get_result() == "caught"
        steps = await runtime.steps("r-fail")
    assert [(s.name, s.error) for s in steps] == [
        ("loopkit.run.start", None),
        ("tests.failing", "KeyError: 'no such key'"),
    ]
    assert steps[1].output is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times come from /proc")
def test_a_process_whose_name_holds_a_parenthesis_is_still_recognised(tmp_path: Path) -> None:
    # /proc/PID/stat puts the name in parentheses; a name may hold ") " itself
    odd = tmp_path / "we) ird"
    odd.symlink_to(sys.executable)
    child = subprocess.Popen([str(odd), "-c", "import time; time.sleep(60)"])
    try:
        stat = Path(f"/proc/{child.pid}/stat").read_text()
        assert "(we) ird)" in stat
        start = stat.rsplit(")", 1)[1].split()[19]
        host = socket.gethostname()
        assert executor_alive(f"w:{host}:{child.pid}:{start}") is True
        assert executor_alive(f"w:{host}:{child.pid}:{int(start) + 1}") is False
    finally:
        child.kill()
        child.wait()


@durable_workflow("tests.runtime.awaitables")
async def awaitables_workflow() -> Any:
    durable = current_durable_run()
    assert durable is not None

    async def later() -> str:
        return "from a task"

    first = await durable_step("tests.task", lambda: asyncio.ensure_future(later()))
    second = await durable_step("tests.text", lambda: {"word": "café", "n": [1, 2]})
    RUNS.append(durable)
    return {"values": [first, second], "replayed": dict(durable.replayed)}


RUNS: list[Any] = []


async def test_a_step_may_hand_back_any_awaitable_and_is_stored_as_compact_json(
    tmp_path: Path,
) -> None:
    from dbos import DBOS, SetWorkflowID

    RUNS.clear()
    async with DurableRuntime(tmp_path / "db.sqlite", executor_id="reader") as runtime:
        with SetWorkflowID("r-aw"):
            handle = await DBOS.start_workflow_async(awaitables_workflow)
        output = await handle.get_result()
        steps = await runtime.steps("r-aw")
    assert output["values"] == ["from a task", {"word": "café", "n": [1, 2]}]
    assert output["replayed"] == {}  # nothing was replayed in a first execution
    assert [s.output for s in steps[1:]] == ['"from a task"', '{"word":"café","n":[1,2]}']
    [durable] = RUNS
    # the run has ended here: interrupting it does nothing and says so
    assert durable.interrupt() is False and durable.interrupt(cancelled=True) is False
    assert durable.cancelled is False


class ServerGone(Exception):
    terminates_run = True


class Gone:
    """A tool whose server died: its failure ends the run."""

    name = "gone"
    description = "Gone."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def invoke(self, arguments: dict[str, Any]) -> str:
        raise ServerGone("the server is gone")


class Refuses:
    name = "refuses"
    description = "Refuses."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def invoke(self, arguments: dict[str, Any]) -> str:
        raise ToolError("not like this")


@durable_workflow("tests.runtime.failures")
async def failures_workflow() -> str:
    from loopkit import Agent, ChatMessage, ChatResponse, ChatRole, FunctionCallContent
    from loopkit import FunctionChatClient as Function

    def reply(messages: Any, options: Any) -> Any:
        name = "refuses" if len(messages) == 1 else "gone"
        call = FunctionCallContent(call_id=f"c{len(messages)}", name=name, arguments={})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])

    agent = Agent(DurableChatClient(Function(reply)), tools=durable_tools([Refuses(), Gone()]))
    return (await agent.run("go")).output


async def test_what_a_failed_tool_call_records(tmp_path: Path) -> None:
    from dbos import DBOS, SetWorkflowID

    async with DurableRuntime(tmp_path / "db.sqlite", executor_id="reader") as runtime:
        with SetWorkflowID("r-fails"):
            handle = await DBOS.start_workflow_async(failures_workflow)
        with pytest.raises(ServerGone, match="the server is gone"):
            await handle.get_result()  # a terminating failure ends the run, as it should
        steps = await runtime.steps("r-fails")
    recorded = {s.name: json.loads(s.output) for s in steps if s.name.startswith("loopkit.tool.")}
    assert recorded == {
        "loopkit.tool.refuses": {
            "result": None,
            "failure": {
                "kind": "tool_error",
                "type": "ToolError",
                "message": "not like this",
                "terminates_run": False,
            },
        },
        "loopkit.tool.gone": {
            "result": None,
            "failure": {
                "kind": "exception",
                "type": "ServerGone",
                "message": "the server is gone",
                "terminates_run": True,
            },
        },
    }


QUEUE = "tests.runtime.queue"
STARTED: list[str] = []


@durable_workflow("tests.runtime.queued")
async def queued_workflow(tag: str) -> str:
    STARTED.append(tag)
    return tag


async def test_a_runtime_with_max_runs_takes_no_more_from_the_queue(tmp_path: Path) -> None:
    from dbos import DBOS

    STARTED.clear()
    db = tmp_path / "db.sqlite"
    async with DurableRuntime(db, executor_id="taker", listen=[QUEUE], max_runs=1) as runtime:
        # one run at a time in a process, as the card queue: nothing else is dequeued
        # between a run's start and the runtime stopping its intake
        await DBOS.register_queue_async(QUEUE, worker_concurrency=1, polling_interval_sec=0.05)
        for tag in ("first", "second"):
            await DBOS.enqueue_workflow_with_options_async(
                {"workflow_name": "tests.runtime.queued", "queue_name": QUEUE,
                 "workflow_id": tag, "app_version": runtime.application_version},
                tag,
            )  # fmt: skip
        first = await asyncio.wait_for(runtime.wait("first", poll_seconds=0.05), 60)
        assert first is not None and first.state == "succeeded"
        # many polling intervals later, the second is still waiting for another process
        await asyncio.sleep(2)
        second = await runtime.get_run("second")
        assert runtime.runs_started == 1
    assert second is not None and second.state == "queued" and STARTED == ["first"]
