"""A durable run: the state of one execution of a workflow, and how it replays.

A workflow starts with a ``start`` checkpoint. In a first execution it runs (the run is live);
in a resumed one (another process took the run over after an interruption) it is already
recorded, so the execution knows it is *replaying*: every checkpoint it meets is recorded too
and returns its result without running, until the first one that is not. There the run goes
live again: it reports the interruption and the resume as run events (``interrupted``,
``resumed``: lines of the run log) and the next model request tells the model, once, that the
run was interrupted and what was lost (the :data:`DEFAULT_NOTICE`).

:func:`durable_workflow` registers a workflow whose body runs inside such a :class:`DurableRun`;
:func:`durable_step` makes any piece of application work a checkpoint of it. The model requests
and tool calls are checkpoints through :class:`~loopkit.durable.steps.DurableChatClient` and
:class:`~loopkit.durable.steps.DurableTool`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from loopkit.durable.dbos_import import require_dbos
from loopkit.durable.errors import DurableError
from loopkit.run_context import RunContext, current_run

__all__ = [
    "DEFAULT_NOTICE",
    "START_STEP",
    "DurableRun",
    "active_runs",
    "cancelled_in_database",
    "checkpoint",
    "current_durable_run",
    "durable_run",
    "durable_step",
    "durable_workflow",
    "on_run_start",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The name of every run's first checkpoint.
START_STEP = "loopkit.run.start"

#: What the model is told at the first request after a resume (a user message, recorded).
DEFAULT_NOTICE = (
    "Note: this run was interrupted and has been resumed from its checkpoints. The model "
    "requests and tool calls that had completed were not repeated: their results above are the "
    "ones you received. A tool call that was still running when the run stopped ran again. "
    "Anything else that was running is gone: processes you started before (an app, a server) "
    "are no longer running; start them again before you rely on them."
)

_CURRENT: ContextVar[DurableRun | None] = ContextVar("loopkit_durable_run", default=None)
_ACTIVE: dict[str, DurableRun] = {}
#: Told the workflow id of each run that starts in this process: the started runtime's
#: ``run_started`` (a ``--max-runs`` worker stops taking work as its last run starts).
_ON_START: list[Callable[[str], None]] = []


@dataclass(eq=False)
class DurableRun:
    """One execution of a durable workflow (see the module docstring)."""

    workflow_id: str
    #: Told to the model at the first model request after a resume (None: nothing is said).
    notice: str | None = DEFAULT_NOTICE
    #: True when this execution continues an earlier one.
    resumed: bool = False
    #: True while the execution meets recorded checkpoints (their run-log lines were written
    #: by the execution that made them, so a replay writes none).
    replaying: bool = False
    #: Set by the application when the stopped execution already logged the interruption
    #: (only the resumed one can log a process that was killed).
    interrupted_logged: bool = False
    #: Checkpoints replayed so far, by kind (``model``, ``tool``, ``step``).
    replayed: dict[str, int] = field(default_factory=dict)
    #: What the ``start`` checkpoint recorded (the first execution's executor, ...).
    started: dict[str, Any] = field(default_factory=dict)
    #: Where ``interrupted``/``resumed`` go when no agent run is current at the resume point
    #: (the application's own log); ``(event type, data)``.
    on_event: Callable[[str, dict[str, Any]], None] | None = None
    #: The task running the workflow body (so the process can interrupt it: :meth:`interrupt`).
    task: asyncio.Task[Any] | None = None
    #: Set (with :meth:`interrupt`) when the run was cancelled for good, not just stopped here.
    cancelled: bool = False
    #: Per-client state of requests made outside any agent run (a bare pipeline).
    bare_state: dict[int, Any] = field(default_factory=dict)
    _notice_pending: bool = False
    _agent_runs: int = 0

    def note_replayed(self, kind: str) -> None:
        """Count one replayed checkpoint of ``kind``."""
        self.replayed[kind] = self.replayed.get(kind, 0) + 1

    def go_live(self) -> None:
        """Called as a checkpoint runs: the first one after a replay reports the resume."""
        if not self.replaying:
            return
        self.replaying = False
        self._notice_pending = self.notice is not None
        events: list[tuple[str, dict[str, Any]]] = []
        if not self.interrupted_logged:
            events.append(
                (
                    "interrupted",
                    {
                        "reason": "the process running the run ended before the run did "
                        "(killed, crashed or stopped); noticed on resume",
                        "executor": self.started.get("executor"),
                    },
                )
            )
        events.append(
            (
                "resumed",
                {
                    "workflow_id": self.workflow_id,
                    "executor": _executor_id(),
                    "replayed": dict(self.replayed),
                },
            )
        )
        run = current_run()
        for event_type, data in events:
            if run is not None:
                run.emit(event_type, **data)
            elif self.on_event is not None:
                self.on_event(event_type, data)

    def take_notice(self) -> str | None:
        """The notice for the model, once, at the first live model request after a resume."""
        if not self._notice_pending:
            return None
        self._notice_pending = False
        return self.notice

    def adopt(self, run: RunContext) -> None:
        """Give an agent run of this workflow the workflow's id (``-2``, ``-3`` for later
        top-level agent runs of the same workflow), so its log lines name the workflow."""
        if run.parent is not None:
            return
        self._agent_runs += 1
        run.run_id = (
            self.workflow_id if self._agent_runs == 1 else f"{self.workflow_id}-{self._agent_runs}"
        )

    def interrupt(self, *, cancelled: bool = False) -> bool:
        """Cancel the task running this workflow in this process (the run stays pending: an
        interruption, resumed later, not an ending; ``cancelled``: the run itself was cancelled
        in the database, so its code can say so); False when it is not running here."""
        if self.task is None or self.task.done():
            return False
        self.cancelled = self.cancelled or cancelled
        self.task.get_loop().call_soon_threadsafe(self.task.cancel)
        return True


def current_durable_run() -> DurableRun | None:
    """The durable run the calling code is in (None outside a durable workflow)."""
    return _CURRENT.get()


def active_runs() -> dict[str, DurableRun]:
    """The durable runs executing in this process, by workflow id."""
    return dict(_ACTIVE)


def on_run_start(listener: Callable[[str], None] | None) -> None:
    """Set who is told the workflow id of each durable run that starts in this process (the
    started :class:`~loopkit.durable.runtime.DurableRuntime`, one per process as DBOS allows);
    None: nobody."""
    _ON_START[:] = [] if listener is None else [listener]


def _executor_id() -> str | None:
    from dbos import DBOS

    try:
        executor: str = DBOS.executor_id
    except Exception:  # not launched
        return None
    return executor


def _workflow_id() -> str:
    from dbos import DBOS

    workflow_id = DBOS.workflow_id
    if workflow_id is None or DBOS.step_id is not None:
        raise DurableError(
            "a durable run exists only inside a durable workflow's own code (a function "
            "decorated with loopkit.durable.durable_workflow), not in a step or outside one"
        )
    return workflow_id


async def cancelled_in_database(workflow_id: str) -> bool:
    """Whether the workflow is cancelled in the database; False when that cannot be told now.

    Asked from a pool thread that has no DBOS context: from inside the workflow, DBOS would
    record the question as one of its steps (which a workflow that lost its ownership to a
    cancel cannot do)."""
    from dbos import DBOS

    def look() -> bool:
        found = DBOS.list_workflows(workflow_ids=[workflow_id])
        return bool(found) and found[0].status == "CANCELLED"

    try:
        # run_in_executor, not to_thread: the thread must not get this task's context.
        return await asyncio.get_running_loop().run_in_executor(None, look)
    except Exception:
        return False


async def checkpoint(name: str, work: Callable[[], Awaitable[str]]) -> tuple[str, bool]:
    """Run ``work()`` as the workflow's next checkpoint named ``name``; returns its text and
    whether it ran now (False: a recorded result was replayed). Outside a workflow it just
    runs. ``work`` returns text (loopkit serialises with pydantic, so a result reads back
    exactly)."""
    from dbos import DBOS

    ran = False

    async def step() -> str:
        nonlocal ran
        ran = True
        return await work()

    value: str = await DBOS.run_step_async({"name": name}, step)
    return value, ran


async def durable_step(name: str, work: Callable[[], Awaitable[Any] | Any]) -> Any:
    """Run ``work()`` (sync or async) as a checkpoint of the current durable run: once, ever;
    a resumed run gets the recorded value back without running it. The value must be JSON
    data (dicts, lists, strings, numbers, booleans, None); it comes back through JSON in both
    cases, so a first execution and a replay see the same value."""
    durable = current_durable_run()

    async def run() -> str:
        if durable is not None:
            durable.go_live()
        value = work()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise DurableError(f"checkpoint {name!r}: its value is not JSON data ({e})") from None

    text, ran = await checkpoint(name, run)
    if not ran and durable is not None:
        durable.note_replayed("step")
    return json.loads(text)


@asynccontextmanager
async def durable_run(*, notice: str | None = DEFAULT_NOTICE) -> AsyncIterator[DurableRun]:
    """The :class:`DurableRun` of the workflow whose code calls this (its first checkpoint is
    recorded here); current for the ``async with`` block."""
    workflow_id = _workflow_id()
    durable = DurableRun(workflow_id, notice=notice)
    for listener in _ON_START:  # before any await: a --max-runs worker stops here
        listener(workflow_id)

    async def start() -> str:
        return json.dumps({"executor": _executor_id()})

    text, ran = await checkpoint(START_STEP, start)
    durable.started = json.loads(text)
    durable.resumed = durable.replaying = not ran
    durable.task = asyncio.current_task()
    token = _CURRENT.set(durable)
    _ACTIVE[workflow_id] = durable
    try:
        yield durable
    finally:
        _CURRENT.reset(token)
        if _ACTIVE.get(workflow_id) is durable:
            del _ACTIVE[workflow_id]


def durable_workflow(
    name: str, *, notice: str | None = DEFAULT_NOTICE, max_recovery_attempts: int = 100
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Register an async function as a durable workflow named ``name`` (the name is stored with
    each run: keep it stable). Its body runs in a :class:`DurableRun`: the model requests and
    tool calls of a :class:`~loopkit.durable.steps.DurableChatClient` and
    :class:`~loopkit.durable.steps.DurableTool` inside it are checkpoints, and a run taken over
    after an interruption replays them. Its arguments and result are stored in the database:
    plain data (strings, numbers, lists, dicts).

    Register workflows before the runtime starts (at import), as DBOS requires.
    """
    dbos = require_dbos()

    def decorate(
        fn: Callable[P, Coroutine[Any, Any, R]],
    ) -> Callable[P, Coroutine[Any, Any, R]]:
        @functools.wraps(fn)
        async def workflow(*args: P.args, **kwargs: P.kwargs) -> R:
            async with durable_run(notice=notice):
                return await fn(*args, **kwargs)

        registered: Callable[P, Coroutine[Any, Any, R]] = dbos.DBOS.workflow(
            name=name, max_recovery_attempts=max_recovery_attempts
        )(workflow)
        return registered

    return decorate
