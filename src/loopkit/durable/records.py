"""What the database says about a run: :class:`RunRecord` and its checkpoints, :class:`StepRecord`.

Plain data read from DBOS's tables (``list_workflows``, ``list_workflow_steps``), with the one
judgement DBOS cannot make itself: whether a run it calls pending is still running or was
interrupted (its process is gone), from the executor id (see
:func:`~loopkit.durable.executors.executor_alive`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from loopkit.durable.executors import executor_alive

__all__ = ["RunRecord", "RunState", "StepRecord", "run_record", "step_record"]

#: How a run stands: ``running`` (its process is alive, or cannot be checked from here),
#: ``interrupted`` (its process is gone before the end: it can be resumed), ``queued``,
#: ``succeeded`` (the workflow returned; for a card, its result says done or failed),
#: ``failed`` (the workflow raised, or ran out of recovery attempts), ``cancelled``.
RunState = Literal["running", "interrupted", "queued", "succeeded", "failed", "cancelled"]

_PRIVATE_QUEUE = "loopkit-resume:"


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run (a DBOS workflow) as the database has it."""

    run_id: str
    #: The registered workflow's name (e.g. ``loopkit.card_run``).
    workflow: str
    #: DBOS's status: PENDING, ENQUEUED, SUCCESS, ERROR, CANCELLED, ...
    status: str
    #: The process (executor) that ran it last.
    executor_id: str | None
    #: Whether that process still runs (None: another host or an id loopkit cannot check).
    executor_alive: bool | None
    queue: str | None
    created_at: datetime | None
    updated_at: datetime | None
    #: The workflow's arguments: ``{"args": [...], "kwargs": {...}}``.
    inputs: dict[str, Any] = field(default_factory=dict)
    #: What the workflow returned (when it succeeded).
    output: Any = None
    #: Why it failed (when it raised).
    error: str | None = None

    @property
    def finished(self) -> bool:
        """True once the run has ended for good (succeeded, failed or cancelled)."""
        return self.state in ("succeeded", "failed", "cancelled")

    @property
    def state(self) -> RunState:
        """The status as loopkit reads it (see :data:`RunState`)."""
        status = self.status
        if status == "PENDING":
            return "interrupted" if self.executor_alive is False else "running"
        if status in ("ENQUEUED", "DELAYED"):
            # Put on a resuming process's own queue, which died before taking it.
            if self.queue and self.queue.startswith(_PRIVATE_QUEUE):
                owner = self.queue.removeprefix(_PRIVATE_QUEUE)
                if executor_alive(owner) is False:
                    return "interrupted"
            return "queued"
        if status == "SUCCESS":
            return "succeeded"
        if status == "CANCELLED":
            return "cancelled"
        return "failed"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One checkpoint of a run: a model request, a tool call or a step of the application."""

    number: int
    name: str
    #: The recorded result as DBOS returns it (loopkit's checkpoints are JSON text).
    output: Any
    error: str | None
    started_at: datetime | None
    completed_at: datetime | None


def run_record(status: Any) -> RunRecord:
    """A :class:`RunRecord` from a DBOS ``WorkflowStatus``."""
    inputs = status.input or {}
    return RunRecord(
        run_id=status.workflow_id,
        workflow=status.name,
        status=str(status.status),
        executor_id=status.executor_id,
        executor_alive=executor_alive(status.executor_id),
        queue=status.queue_name,
        created_at=_time(status.created_at),
        updated_at=_time(status.updated_at),
        inputs={"args": list(inputs.get("args", ())), "kwargs": dict(inputs.get("kwargs", {}))},
        output=status.output,
        error=None if status.error is None else f"{type(status.error).__name__}: {status.error}",
    )


def step_record(step: Any) -> StepRecord:
    """A :class:`StepRecord` from a DBOS ``StepInfo``."""
    error = step.get("error")
    return StepRecord(
        number=step["function_id"],
        name=step["function_name"],
        output=step.get("output"),
        error=None if error is None else f"{type(error).__name__}: {error}",
        started_at=_time(step.get("started_at_epoch_ms")),
        completed_at=_time(step.get("completed_at_epoch_ms")),
    )
