"""The durable runs' database as the board holds it: opened when the board starts, also later
when it is not there yet (the board comes up without it), and watched once a call finds it lost,
with one log line per change (:class:`~loopkit.durable.outage.Outage`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from loopkit.cards.config import RunnerConfig
from loopkit.durable.outage import Outage

if TYPE_CHECKING:
    from loopkit.durable.runtime import DurableRuntime

__all__ = ["RunsDatabase"]


def _log_warning(message: str) -> None:
    logging.getLogger("loopkit_board").warning(message)


class RunsDatabase:
    """The runs database of one board: :attr:`runtime` once open; :attr:`starting` while the
    board waits for it to be there."""

    def __init__(self, config: RunnerConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self.runtime: DurableRuntime | None = None
        #: The runs database as this process sees it: lost (a page says so, streams wait) or
        #: reachable; one log line per change (see :meth:`lost`).
        self.outage = Outage(
            _log_warning,
            what="the runs database",
            meanwhile="pages answer 503 and run streams wait; runs go on in their workers",
        )
        self._watch: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None

    @property
    def starting(self) -> bool:
        """Whether the board came up without the database and keeps trying to open it."""
        return self._starting is not None

    async def start(self) -> None:
        """Open the durable runs' database (created on first use)."""
        from loopkit.demo.durable_runs import database_for
        from loopkit.durable.errors import DatabaseUnavailableError
        from loopkit.durable.executors import process_executor_id
        from loopkit.durable.runtime import DurableRuntime

        if self.runtime is not None or self._starting is not None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config.runs_dir.mkdir(parents=True, exist_ok=True)
        runtime = DurableRuntime(
            database_for(self.config),
            executor_id=process_executor_id("board"),
            # DBOS logs each failed try of a lost database; the outage gets one line here.
            log_level="CRITICAL",
            # A lost database is an answer ("try again"), not a request that hangs.
            on_lost_database="raise",
        )
        try:
            await runtime.start()
        except DatabaseUnavailableError as e:
            # Up without it: pages say so (503) until the database is there, then work.
            wait = self.outage.lost(e)
            self._starting = asyncio.create_task(self._start_later(runtime, wait))
            return
        self.runtime = runtime

    async def _start_later(self, runtime: DurableRuntime, wait: float) -> None:
        from loopkit.durable.errors import DatabaseUnavailableError

        while True:
            await asyncio.sleep(wait)
            try:
                await runtime.start()
            except DatabaseUnavailableError as e:
                wait = self.outage.lost(e)
                continue
            self.runtime = runtime
            self.outage.back()
            return

    def lost(self, error: BaseException) -> None:
        """A call found the runs database unreachable: say so (once per outage) and watch for
        its return in the background (which says so, once)."""
        self.outage.lost(error)
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._watch_database(), name="runs database")

    async def _watch_database(self) -> None:
        from loopkit.durable.database import is_database_unavailable

        while self.runtime is not None:
            try:
                await self.runtime.check_database()
            except Exception as e:
                if not is_database_unavailable(e):
                    raise
                await asyncio.sleep(self.outage.lost(e))
                continue
            self.outage.back()
            return

    async def stop(self) -> None:
        """Close the database (runs go on in their workers)."""
        for task in (self._watch, self._starting):
            if task is not None:
                task.cancel()
        self._starting = None
        runtime, self.runtime = self.runtime, None
        if runtime is not None:
            await runtime.stop()
