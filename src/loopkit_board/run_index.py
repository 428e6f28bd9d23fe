"""Every card run at a glance: a summary a run, kept up to date cheaply, and its filters.

:func:`~loopkit.cards.durable.list_card_runs` reads each run's checkpoints (its rounds and
tokens so far): right for one run, far too slow for a page of 5,000 (one query a run). The
index reads the durable runs' table only, once whole, then only what can have changed: runs
created since it last looked, and the runs it knew as queued or running. A run that has ended
never changes again, so its summary is kept as it is.

What a summary holds comes from the run's request (card, role, model, who started it, the run
it follows) and, once it ended, from its result (state, reason, totals, commit) and DBOS's
times (queued, taken by a worker, ended): how long it took is from the worker taking it to its
end, the queue's wait left out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

__all__ = ["RunIndex", "RunSummary", "run_summary"]

_ENDED = ("done", "failed", "cancelled")


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One card run as the lists show it."""

    run_id: str
    #: The card's resolved path, and its file name.
    card: str
    name: str
    role: str
    model: str
    #: ``queued``, ``running``, ``interrupted``, ``done``, ``failed`` or ``cancelled``.
    state: str
    reason: str | None
    #: Who asked for it (a board login, ``slack:<user id>``), None when not said.
    started_by: str | None
    parent: str | None
    created_at: datetime | None
    #: When a worker took it from the queue, and when it ended.
    started_at: datetime | None
    ended_at: datetime | None
    rounds: int = 0
    tokens: int = 0
    commit: str | None = None
    #: DBOS's own status and its last change (what tells that the run moved on).
    status: str = ""
    updated_ms: int = 0

    @property
    def ended(self) -> bool:
        return self.state in _ENDED

    @property
    def seconds(self) -> float | None:
        """How long it ran (taken by a worker to its end), None until it ended."""
        begin = self.started_at or self.created_at
        if self.ended_at is None or begin is None:
            return None
        return max(0.0, (self.ended_at - begin).total_seconds())

    @property
    def took(self) -> str:
        """:attr:`seconds` as people read it (``42 s``, ``3 min 5 s``), or empty."""
        s = self.seconds
        if s is None:
            return ""
        if s < 60:
            return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
        minutes, rest = divmod(round(s), 60)
        if minutes < 60:
            return f"{minutes} min {rest} s"
        return f"{minutes // 60} h {minutes % 60} min"


def run_summary(status: Any) -> RunSummary | None:
    """The summary of a DBOS ``WorkflowStatus`` of a card run (None: not one this version
    reads)."""
    from loopkit.cards.durable import CardRunRequest, CardRunResult
    from loopkit.durable.records import run_record

    record = run_record(status)
    args = record.inputs.get("args") or []
    try:
        request = CardRunRequest.model_validate(args[0] if args else record.inputs["kwargs"])
    except Exception:  # not a card run, or an input this version cannot read
        return None
    result = None
    if isinstance(record.output, dict):
        try:
            result = CardRunResult.model_validate(record.output)
        except Exception:
            result = None
    state: str = record.state
    reason = record.error
    totals: dict[str, Any] = {}
    commit = None
    if state == "succeeded":
        state = result.status if result is not None else "failed"
    if result is not None:
        reason, totals, commit = result.reason, result.totals, result.commit
    ended = state in _ENDED
    return RunSummary(
        run_id=record.run_id,
        card=request.card,
        name=PurePath(request.card).name,
        role=request.role,
        model=request.model,
        state=state,
        reason=reason,
        started_by=request.started_by,
        parent=request.parent,
        created_at=record.created_at,
        started_at=_time(getattr(status, "dequeued_at", None)),
        ended_at=(_time(getattr(status, "completed_at", None)) or record.updated_at)
        if ended
        else None,
        rounds=int(totals.get("rounds", 0) or 0),
        tokens=int(totals.get("input_tokens", 0) or 0) + int(totals.get("output_tokens", 0) or 0),
        commit=commit,
        status=record.status,
        updated_ms=int(getattr(status, "updated_at", 0) or 0),
    )


class RunIndex:
    """The card runs of one database, newest first (see the module docstring). ``ready`` is
    called before each read (the service's check that its runtime is started)."""

    def __init__(self, ready: Callable[[], object], *, fresh_for: float = 0.25) -> None:
        self._ready = ready
        self.fresh_for = fresh_for
        self._runs: dict[str, RunSummary] = {}
        self._newest_ms = 0
        self._loaded_at = -1.0
        self._lock = asyncio.Lock()
        #: Bumped whenever a summary is added or changes (what live pages watch).
        self.version = 0
        self.changed: set[str] = set()

    async def runs(self) -> list[RunSummary]:
        """Every card run, newest first (refreshed when older than ``fresh_for`` seconds)."""
        await self.refresh()
        return sorted(self._runs.values(), key=_newest_first)

    async def get(self, run_id: str) -> RunSummary | None:
        await self.refresh()
        return self._runs.get(run_id)

    async def refresh(self, *, force: bool = False) -> set[str]:
        """Read what can have changed; returns the ids of the runs that did."""
        if not force and time.monotonic() - self._loaded_at < self.fresh_for:
            return set()
        async with self._lock:
            if not force and time.monotonic() - self._loaded_at < self.fresh_for:
                return set()
            changed = await self._read()
            self._loaded_at = time.monotonic()
        if changed:
            self.version += 1
        return changed

    async def _read(self) -> set[str]:
        from dbos import DBOS

        from loopkit.cards.durable import CARD_RUN_WORKFLOW

        self._ready()
        found: list[Any] = []
        if self._loaded_at < 0:
            found = await DBOS.list_workflows_async(name=CARD_RUN_WORKFLOW)
        else:
            since = datetime.fromtimestamp(self._newest_ms / 1000, tz=UTC).isoformat()
            found = await DBOS.list_workflows_async(name=CARD_RUN_WORKFLOW, start_time=since)
            moving = [r.run_id for r in self._runs.values() if not r.ended]
            if moving:
                found += await DBOS.list_workflows_async(workflow_ids=moving)
        changed: set[str] = set()
        for status in found:
            known = self._runs.get(status.workflow_id)
            updated = int(status.updated_at or 0)
            if (
                known is not None
                and known.status == str(status.status)
                and known.updated_ms == updated
            ):
                if not known.ended and known.state in ("running", "interrupted"):
                    # Running or interrupted is the worker process alive or not: look again.
                    again = run_summary(status)
                    if again is not None and again.state != known.state:
                        self._runs[known.run_id] = again
                        changed.add(known.run_id)
                continue
            summary = run_summary(status)
            if summary is None:
                continue
            self._runs[summary.run_id] = summary
            changed.add(summary.run_id)
            self._newest_ms = max(self._newest_ms, int(status.created_at or 0))
        return changed

    def forget(self) -> None:
        """Read everything again at the next call (the database was replaced)."""
        self._runs.clear()
        self._loaded_at = -1.0


def _newest_first(run: RunSummary) -> tuple[float, str]:
    return (-(run.created_at.timestamp() if run.created_at else 0.0), run.run_id)
