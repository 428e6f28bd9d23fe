"""The card-run queue: card runs waiting for a worker, one at a time on each worker's desktop.

A run is put on the DBOS queue :data:`CARD_QUEUE` as a durable card-run workflow
(:data:`~loopkit.cards.durable.CARD_RUN_WORKFLOW`) with its :class:`CardRunRequest`; each
``python -m loopkit.worker`` takes one run at a time from it (the queue's per-worker concurrency
is 1). The card's resolved path is the run's deduplication id: while a run of a card is queued or
running, enqueuing the same card again returns that run instead of a second one (DBOS keeps the
id taken until the run ends); a run of the same card in another role is another run.

A worker killed mid-run leaves its run pending under a dead executor; any worker on the same host
puts it back on the queue (:func:`requeue_dead_workers_runs`, DBOS's own recovery, which only
moves a run whose executor is still the dead one, so exactly one worker takes it).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.cards.card import Card, CardState
from loopkit.cards.durable import (
    CARD_RUN_WORKFLOW,
    DEFAULT_ROLE,
    PREPARE_STEP,
    CardRunRecord,
    CardRunRequest,
    PreparedRun,
    get_card_run,
)
from loopkit.durable.errors import DurableError
from loopkit.errors import CardError

if TYPE_CHECKING:
    from loopkit.durable.runtime import DurableRuntime

__all__ = [
    "CARD_QUEUE",
    "EnqueuedRun",
    "cancel_card_run",
    "deduplication_id",
    "enqueue_card_run",
    "register_card_queue",
    "requeue_dead_workers_runs",
]

#: The DBOS queue card runs wait on.
CARD_QUEUE = "loopkit.cards"


class EnqueuedRun:
    """What :func:`enqueue_card_run` did: the run's id, and whether it is a new run (False: the
    card already had a queued or running run, which is the one returned)."""

    __slots__ = ("created", "run_id")

    def __init__(self, run_id: str, created: bool) -> None:
        self.run_id = run_id
        self.created = created

    def __repr__(self) -> str:
        return f"EnqueuedRun({self.run_id!r}, created={self.created})"


async def register_card_queue(*, polling_interval_sec: float = 0.5) -> None:
    """Declare the card queue in this process (a worker does, after the runtime started): at
    most one of its runs at a time in each process."""
    from dbos import DBOS

    await DBOS.register_queue_async(
        CARD_QUEUE, worker_concurrency=1, polling_interval_sec=polling_interval_sec
    )


def deduplication_id(request: CardRunRequest) -> str:
    """One queued or running run per card and role: the card's path (a develop run, as before
    roles), with `` [role]`` after it for the other roles."""
    return request.card if request.role == DEFAULT_ROLE else f"{request.card} [{request.role}]"


async def enqueue_card_run(
    runtime: DurableRuntime,
    request: CardRunRequest,
    *,
    run_id: str | None = None,
    queue: str = CARD_QUEUE,
) -> EnqueuedRun:
    """Put a card run on the queue (``runtime`` started; it need not listen to the queue).
    A card that already has a queued or running run is not queued twice: that run is
    returned (``created`` False). ``queue``: the workers' card queue, or the runtime's own
    (:meth:`~loopkit.durable.runtime.DurableRuntime.own_queue`: a demo's pipeline runs its
    next run itself)."""
    from dbos import DBOS

    from loopkit.run_context import new_run_id

    runtime.check_started()
    wanted = run_id or new_run_id()
    handle = await DBOS.enqueue_workflow_with_options_async(
        {
            "workflow_name": CARD_RUN_WORKFLOW,
            "queue_name": queue,
            "workflow_id": wanted,
            "deduplication_id": deduplication_id(request),
            "duplication_policy": "return-existing",
            "app_version": runtime.application_version,
        },
        request.model_dump(mode="json"),
    )
    got: str = handle.get_workflow_id()
    return EnqueuedRun(got, created=got == wanted)


async def cancel_card_run(runtime: DurableRuntime, run_id: str) -> CardRunRecord:
    """Cancel a queued or running card run. Returns the run's record before the cancel;
    :class:`DurableError` for an unknown run or one that has ended (its end's checkpoint is
    recorded: the cancel is refused).

    The cancel is whole, whoever completes it. A run that a worker runs stops at its next
    model request or tool call (its worker stops it within a poll), and writes it: the card
    Failed, ``cancelled`` and ``result`` lines (see
    :class:`~loopkit.cards.durable.DurableCardRunner`, which also refuses a cancel that comes
    once its end has begun). A run that no process runs (queued, or interrupted: its process is
    gone) is completed here: a card it had set In Work becomes Failed and its log gets the same
    two lines."""
    from dbos import DBOS

    record = await get_card_run(runtime, run_id)
    if record is None:
        raise DurableError(f"there is no card run {run_id!r}")
    if record.state in ("done", "failed", "cancelled"):
        raise DurableError(f"run {run_id} has ended ({record.state}); nothing to cancel")
    await DBOS.cancel_workflow_async(run_id)
    if record.state == "running":
        return record  # its worker writes the cancel (or refuses it, when its end has begun)
    prepared = await _prepared(runtime, run_id)
    if prepared is not None:
        _write_cancel(record, prepared)
    return record


def _write_cancel(record: CardRunRecord, prepared: PreparedRun) -> None:
    """The cancel of a run no process runs: the card Failed (if the run had set it In Work)
    and the ``cancelled`` and ``result`` lines in the run's log."""
    from loopkit.middleware.run_log import RunLog
    from loopkit.run_context import run_scope

    state = CardState.IN_WORK
    with suppress(CardError, OSError):
        card = Card.load(Path(record.card))
        state = card.state
        if state == CardState.IN_WORK:
            state = card.save_state(CardState.FAILED).state
    reason = f"the run was cancelled while {record.state}; it ends here"
    with suppress(OSError), RunLog(prepared.log_path) as log, run_scope(run_id=record.run_id):
        log.write("cancelled", reason=reason)
        totals = {
            "rounds": record.rounds,
            "input_tokens": record.input_tokens,
            "output_tokens": record.output_tokens,
            "cached_input_tokens": record.cached_input_tokens,
        }
        log.write("result", status="cancelled", reason=reason, card_state=state.value,
                  totals=totals)  # fmt: skip


async def _prepared(runtime: DurableRuntime, run_id: str) -> PreparedRun | None:
    for step in await runtime.steps(run_id):
        if step.name == PREPARE_STEP and isinstance(step.output, str):
            return PreparedRun.model_validate_json(step.output)
    return None


async def requeue_dead_workers_runs(runtime: DurableRuntime) -> list[str]:
    """Put back on the queue the card runs whose worker died mid-run (its process is gone, on
    this host); returns their ids. DBOS moves a run only while its executor is still the dead
    one, so two workers doing this at once requeue it once, and one worker takes it."""
    from dbos import DBOS

    dead: set[str] = set()
    for run in await runtime.list_runs(workflow=CARD_RUN_WORKFLOW, status="PENDING"):
        if run.queue == CARD_QUEUE and run.executor_alive is False and run.executor_id:
            dead.add(run.executor_id)
    if not dead:
        return []
    handles: list[Any] = await asyncio.to_thread(DBOS._recover_pending_workflows, sorted(dead))
    return [h.get_workflow_id() for h in handles]
