"""``DurableRuntime``: this process's connection to the durable-execution engine (DBOS).

DBOS keeps one engine per process (a singleton with its own threads); this class is the one
place loopkit configures, starts and stops it, and reads runs back from its database. The
database is a SQLite file by default (nothing to install, the file is created on first use) or
PostgreSQL for several machines (``postgresql+psycopg://user@host/db``; the
``LOOPKIT_DATABASE_URL`` variable names it without a code change).

Each process has an *executor id*. loopkit's default names the process
(``kind:host:pid:start-time``), so that
:func:`~loopkit.durable.executors.executor_alive` can tell a run whose process is
gone (interrupted: it can be resumed) from one that is still running. DBOS recovers the runs of
an executor when a process with that id starts; a process with a fresh id recovers nothing on its
own, and :meth:`DurableRuntime.resume` takes over one run explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.durable.database import OnLostDatabase, is_database_unavailable, unavailable
from loopkit.durable.dbos_import import require_dbos
from loopkit.durable.errors import DatabaseUnavailableError, DurableError
from loopkit.durable.executors import process_executor_id
from loopkit.durable.records import RunRecord, StepRecord, run_record, step_record
from loopkit.durable.run import active_runs, on_run_start

if TYPE_CHECKING:
    from dbos import WorkflowHandleAsync

__all__ = [
    "APPLICATION_VERSION",
    "DATABASE_URL_VARIABLE",
    "DEFAULT_DATABASE_FILE",
    "DurableRuntime",
    "database_url",
]

#: The environment variable that names the database (it beats the configured default).
DATABASE_URL_VARIABLE = "LOOPKIT_DATABASE_URL"
#: The SQLite file's name when only a folder is given (``runs/loopkit.sqlite``).
DEFAULT_DATABASE_FILE = "loopkit.sqlite"
#: DBOS resumes a run only under the application version that started it, and by default it
#: derives that version from a hash of the code, so any edit would strand interrupted runs.
#: loopkit pins it instead; bump it when the order of a run's checkpoints changes.
APPLICATION_VERSION = "loopkit-durable-1"
APP_NAME = "loopkit"


#: Seconds between DBOS's looks for notifications on SQLite (its default is 1.0).
_SQLITE_POLL_S = 0.05


def database_url(
    value: str | Path | None = None,
    *,
    default: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The URL of the database durable runs keep their checkpoints in.

    ``value`` (a setting), else ``LOOPKIT_DATABASE_URL``, else ``default``. Each may be a URL
    (``sqlite:///path``, ``postgresql://...``, ``postgresql+psycopg://...``) or a path: a
    folder gets ``loopkit.sqlite`` inside it, a file is the SQLite file. ``postgresql://``
    becomes ``postgresql+psycopg://`` (psycopg 3, the driver DBOS uses).
    """
    env = os.environ if environ is None else environ
    chosen = value if value not in (None, "") else env.get(DATABASE_URL_VARIABLE) or default
    if chosen in (None, ""):
        raise DurableError(
            f"no database for durable runs: set {DATABASE_URL_VARIABLE} (sqlite:///path or "
            "postgresql+psycopg://user@host/db) or give a folder for the SQLite file"
        )
    text = str(chosen).strip()
    if text.startswith("postgresql://"):
        return "postgresql+psycopg://" + text.removeprefix("postgresql://")
    if text.startswith(("postgresql+psycopg://", "sqlite:///")):
        return text
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise DurableError(
            f"database URL {text.split('@')[-1]!r}: the scheme {scheme!r} is not supported; "
            "use sqlite:///path/to/file.sqlite or postgresql+psycopg://user@host/db"
        )
    path = Path(text).expanduser()
    if path.is_dir() or not path.suffix:
        path = path / DEFAULT_DATABASE_FILE
    return f"sqlite:///{path.resolve()}"


class DurableRuntime:
    """The durable-execution engine of this process: start it, run workflows, read runs back.

    - ``database``: a database URL or path (see :func:`database_url`).
    - ``executor_id``: this process's name in the database (default
      :func:`process_executor_id`); DBOS recovers the runs left by an executor of the same id
      when it starts.
    - ``listen``: the queues this process takes work from (default: only its own private queue,
      used by :meth:`resume`), so a process never takes work meant for workers; ``None``
      listens to every queue (DBOS's default).
    - ``log_level``: DBOS's own logging (it prints to the console).
    - ``max_runs``: take at most this many runs in this process: as the last one starts, the
      process stops taking queued work (a worker's ``--max-runs``), so no further run is
      dequeued here while it finishes.
    - ``on_lost_database``: what a database call does when the database goes away (PostgreSQL):
      ``wait`` (default) retries it until the database is back, so a run in progress pauses
      through an outage; ``raise`` raises :class:`DatabaseUnavailableError` at once (for a
      process that only reads and queues runs, and answers its users meanwhile). See
      :mod:`loopkit.durable.database`.
    - ``max_threads``: DBOS's thread pool, which also becomes the event loop's default executor
      (every ``asyncio.to_thread``, every database read of the async API): bounded, so a
      thousand callers at once wait for a thread instead of starting a thousand (DBOS's own
      default has no bound).

    Only one runtime can run in a process at a time (DBOS is a process-wide engine). Start it
    from the event loop that will run the workflows (``async with runtime:``): DBOS runs the
    workflows it takes from queues on that loop.
    """

    def __init__(
        self,
        database: str | Path,
        *,
        executor_id: str | None = None,
        listen: Sequence[str] | None = (),
        log_level: str = "WARNING",
        application_version: str = APPLICATION_VERSION,
        max_runs: int | None = None,
        on_lost_database: OnLostDatabase = "wait",
        max_threads: int = 32,
    ) -> None:
        if max_runs is not None and max_runs < 1:
            raise DurableError(f"max_runs must be at least 1 (got {max_runs})")
        if on_lost_database not in ("wait", "raise"):
            raise DurableError(
                f"on_lost_database must be 'wait' or 'raise' (got {on_lost_database!r})"
            )
        if max_threads < 1:
            raise DurableError(f"max_threads must be at least 1 (got {max_threads})")
        self.max_threads = max_threads
        self.database_url = database_url(database)
        self.executor_id = executor_id or process_executor_id()
        #: The queue :meth:`resume` puts a run on; only this process listens to it.
        self.private_queue = f"loopkit-resume:{self.executor_id}"
        self.listen = None if listen is None else [*listen, self.private_queue]
        self.log_level = log_level
        self.application_version = application_version
        self.max_runs = max_runs
        self.on_lost_database: OnLostDatabase = on_lost_database
        self._engine: Any = None
        #: Runs started in this process since :meth:`start` (new, resumed or recovered).
        self.runs_started = 0
        self._started = False
        self._queue_registered = False

    def __repr__(self) -> str:
        where = self.database_url.split("@")[-1]  # no user or password on screen
        return f"DurableRuntime({where!r}, executor_id={self.executor_id!r})"

    # -- lifecycle -----------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "name": APP_NAME,
            "system_database_url": self.database_url,
            "application_version": self.application_version,
            "executor_id": self.executor_id,
            "log_level": self.log_level,
            "max_executor_threads": self.max_threads,
        }
        if self.database_url.startswith("sqlite:///"):
            # DBOS polls SQLite for notifications in a thread that sleeps this long between
            # looks, and stopping joins it: at its default (1 s) every stop took about a second.
            # A look with nothing awaited is no query at all.
            config["notification_listener_polling_interval_sec"] = _SQLITE_POLL_S
        config["system_database_engine"] = self._engine = self._make_engine()
        return config

    def _make_engine(self) -> Any:
        from loopkit.durable.database import (
            create_postgres_database,
            postgres_engine,
            sqlite_engine,
        )

        if self.database_url.startswith("sqlite:///"):
            return sqlite_engine(self.database_url)
        create_postgres_database(self.database_url)  # DBOS does not for an engine it is given
        return postgres_engine(self.database_url, on_lost=self.on_lost_database)

    async def start(self) -> None:
        """Start DBOS on this database (creating its tables on first use). DBOS adopts the
        running event loop: workflows it takes from a queue run there."""
        if self._started:
            return
        dbos = require_dbos()
        existing = getattr(dbos._dbos, "_dbos_global_instance", None)
        if existing is not None:
            raise DurableError(
                "a durable runtime (DBOS) is already running in this process; stop it first "
                "(one engine per process)"
            )
        dbos.DBOS(config=self._config())
        try:
            if self.listen is not None:
                dbos.DBOS.listen_queues(self.listen)
            # In this thread, inside the running loop: DBOS takes it as its main loop.
            dbos.DBOS.launch()
        except BaseException as e:
            dbos.DBOS.destroy()
            self._dispose_engine()
            if isinstance(e, Exception) and is_database_unavailable(e):
                raise unavailable(e, f"{self!r}: the database") from None
            raise
        self._started = True
        self.runs_started = 0
        DurableRuntime._running = self
        on_run_start(self.run_started)

    #: The started runtime of this process (DBOS allows one), told of each run that starts.
    _running: DurableRuntime | None = None

    def run_started(self, run_id: str) -> None:
        """Called as a run starts in this process; the last of ``max_runs`` stops the intake."""
        self.runs_started += 1
        if self.max_runs is not None and self.runs_started >= self.max_runs:
            self._stop_taking_queued_runs()

    def _stop_taking_queued_runs(self) -> None:
        # DBOS has no public call to stop dequeuing while runs go on; its shutdown begins by
        # setting these events (queue, recovery and scheduler threads), and a run in progress
        # runs on the event loop, untouched by them. The card queue takes one run at a time
        # per process, so nothing else is dequeued between this run's start and this call.
        import dbos

        instance = getattr(dbos._dbos, "_dbos_global_instance", None)
        for event in getattr(instance, "background_thread_stop_events", ()):
            event.set()

    async def stop(self) -> None:
        """Stop DBOS (its threads); workflows still running in this process stay pending and
        are resumed later. The private queue is removed."""
        if not self._started:
            return
        from dbos import DBOS

        self._started = False
        if DurableRuntime._running is self:
            DurableRuntime._running = None
            on_run_start(None)
        if self._queue_registered:
            with contextlib.suppress(Exception):
                await DBOS.delete_queue_async(self.private_queue)
            self._queue_registered = False
        await asyncio.to_thread(DBOS.destroy)
        self._dispose_engine()

    def _dispose_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.dispose()

    async def check_database(self) -> None:
        """Raise :class:`DatabaseUnavailableError` unless the database answers now (one
        short query, never retried: a long-running process calls it to know whether to wait)."""
        self.check_started()
        engine = self._engine

        def probe() -> None:
            import sqlalchemy as sa

            with engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))

        try:
            await asyncio.to_thread(probe)
        except Exception as e:
            if not is_database_unavailable(e):
                raise
            if isinstance(e, DatabaseUnavailableError):
                raise
            raise unavailable(e) from None

    async def __aenter__(self) -> DurableRuntime:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def check_started(self) -> None:
        """Raise :class:`DurableError` unless the runtime is started."""
        if not self._started:
            raise DurableError("the durable runtime is not started: use `async with runtime:`")

    # -- reading runs --------------------------------------------------------------------------
    async def list_runs(
        self,
        *,
        workflow: str | Sequence[str] | None = None,
        status: str | Sequence[str] | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[RunRecord]:
        """The runs in the database (``workflow``: only runs of those workflow names;
        ``status``: only those DBOS statuses, e.g. ``PENDING``)."""
        self.check_started()
        from dbos import DBOS

        found = await DBOS.list_workflows_async(
            name=_as_list(workflow),
            status=_as_list(status),
            limit=limit,
            sort_desc=newest_first,
        )
        return [run_record(s) for s in found]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or None when there is no run of that id."""
        self.check_started()
        from dbos import DBOS

        found = await DBOS.list_workflows_async(workflow_ids=[run_id])
        return run_record(found[0]) if found else None

    async def steps(self, run_id: str) -> list[StepRecord]:
        """The checkpoints a run has recorded, in order."""
        self.check_started()
        from dbos import DBOS

        return [step_record(s) for s in await DBOS.list_workflow_steps_async(run_id)]

    # -- resuming ------------------------------------------------------------------------------
    async def resume(self, run_id: str, *, force: bool = False) -> WorkflowHandleAsync[Any]:
        """Take over an interrupted run: it is queued on this process's private queue and runs
        here, on the loop the runtime was started from, replaying its checkpoints.

        Refused (:class:`DurableError`) for a run that has ended, and for one whose process
        still runs; a run of another host or of an executor that cannot be checked needs
        ``force=True`` (make sure it is not running: two executions would race).
        """
        self.check_started()
        from dbos import DBOS

        record = await self.get_run(run_id)
        if record is None:
            raise DurableError(f"there is no run {run_id!r} in {self!r}")
        if record.finished:
            raise DurableError(f"run {run_id} has ended ({record.status}); nothing to resume")
        if record.state == "running" and (record.executor_alive or not force):
            who = record.executor_id or "an unknown process"
            raise DurableError(
                f"run {run_id} may still be running (executor {who}); resume it only once that "
                "process is gone"
                + ("" if record.executor_alive else " (force=True to take it over)")
            )
        await self.own_queue()
        await DBOS.resume_workflow_async(run_id, queue_name=self.private_queue)
        return await DBOS.retrieve_workflow_async(run_id)

    async def own_queue(self) -> str:
        """This process's private queue (declared on first use): a run put on it runs here,
        and only here; returns its name."""
        self.check_started()
        if not self._queue_registered:
            from dbos import DBOS

            await DBOS.register_queue_async(self.private_queue, polling_interval_sec=0.25)
            self._queue_registered = True
        return self.private_queue

    async def wait(self, run_id: str, *, poll_seconds: float = 0.1) -> RunRecord | None:
        """Wait until a run resumed here (:meth:`resume`) has run in this process (or ended);
        returns its record then. Cancelled (Ctrl-C), it interrupts the run first: the run's task
        is cancelled and unwinds (the run stays pending, to be resumed again)."""
        task: asyncio.Task[Any] | None = None
        try:
            while True:
                durable = active_runs().get(run_id)
                if durable is not None and durable.task is not None:
                    task = durable.task
                    await asyncio.wait({task})  # its outcome is written in that task
                    return await self.get_run(run_id)
                record = await self.get_run(run_id)
                if record is None or record.finished:
                    return record
                await asyncio.sleep(poll_seconds)
        except asyncio.CancelledError:
            durable = active_runs().get(run_id)
            task = durable.task if durable is not None else task
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task})
            raise


def _as_list(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)
