"""``python -m loopkit.worker``: take card runs from the queue, one at a time on this desktop.

Each worker is one process with one desktop: on Linux it re-runs itself inside a headless desktop
of its own (``python -m loopkit_ui.session``, as the demo does; ``headless = "never"`` uses the
current one), and it runs at most one card at a time there (the queue's per-worker concurrency
is 1). Runs are durable card-run workflows (see docs/durable.md): a worker that is stopped
(Ctrl-C, SIGTERM) interrupts its run, which stays pending; a worker that is killed leaves it
pending too. Either way, any worker on the same host puts the run back on the queue once the
dead worker's process is gone, and one worker finishes it.

Enqueue runs with ``python -m loopkit.runs enqueue CARD.md``; docs/scale-out.md shows N desktops
on one PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopkit.cards import RunnerConfig
    from loopkit.durable.outage import Outage
    from loopkit.durable.runtime import DurableRuntime

from loopkit.command_line import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    OneLineParser,
    positive_int,
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

_EPILOG = """\
examples:
  python -m loopkit.worker                                  SQLite in the runs folder
  LOOPKIT_DATABASE_URL=postgresql://loopkit@db/loopkit python -m loopkit.worker --name desk-1

exit status: 0 stopped after --max-runs runs; 2 bad input; 130 stopped (SIGINT, SIGTERM, SIGHUP:
a run in progress is interrupted and stays pending for the next worker).
"""


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"worker name {value!r}: expected letters, digits, '.', '_' or '-' (at most 64)"
        )
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit.worker",
        description="Take card runs from the durable queue and run them, one at a time, on this "
        "worker's own desktop.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, help="a TOML config file (database, runs folder)")
    parser.add_argument(
        "--database", help="the durable runs' database (sqlite:///file or postgresql://...)"
    )
    parser.add_argument(
        "--name", type=_name, default="worker", help="the worker's name (default: worker)"
    )
    parser.add_argument(
        "--max-runs", type=positive_int, help="stop after this many runs have ended here"
    )
    return parser.parse_args(argv)


def _log(worker: str, message: str) -> None:
    print(f"[{worker}] {message}", flush=True)


async def serve(config: RunnerConfig, name: str, *, max_runs: int | None = None) -> int:
    """Run the worker until a stop signal (130) or ``max_runs`` ended runs (0). A lost
    database is waited for (one line when it goes, one when it is back): the run in progress
    pauses, the desktop stays, and queued runs are taken again once the database is back."""
    import signal

    import loopkit.demo.card_run_workflow  # noqa: F401  (registers the workflow before launch)
    from loopkit.cards.queue import CARD_QUEUE
    from loopkit.demo.durable_runs import database_for
    from loopkit.durable.errors import DatabaseUnavailableError
    from loopkit.durable.executors import process_executor_id
    from loopkit.durable.outage import Outage
    from loopkit.durable.run import active_runs
    from loopkit.durable.runtime import DurableRuntime

    runtime = DurableRuntime(
        database_for(config),
        executor_id=process_executor_id(name),
        listen=[CARD_QUEUE],
        # DBOS logs a cancelled or failed run with a traceback, and each retry of a lost
        # database: the worker reports each run's end and each outage itself.
        log_level="CRITICAL",
        max_runs=max_runs,
        on_lost_database="wait",  # a run in progress pauses through an outage
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    me = runtime.executor_id
    outage = Outage(
        lambda message: _log(me, message),
        what="the runs database",
        meanwhile="a run in progress waits for it, no new run is taken",
    )
    while True:  # a worker started before its database waits for it
        try:
            await runtime.start()
            break
        except DatabaseUnavailableError as e:
            if await _stopped(stop, outage.lost(e)):
                return EXIT_INTERRUPTED
    outage.back()
    try:
        status = await _take_runs(runtime, stop, outage, max_runs)
        if status is not None:
            return status
        # Stopped: the run in progress is interrupted (it logs so and stays pending), unless it
        # was cancelled meanwhile (not yet seen by a poll): then it ends cancelled, whole.
        cancelled = set() if outage.down else await _cancelled_ones(runtime, active_runs())
        tasks = [
            d.task
            for run_id, d in active_runs().items()
            if d.task is not None and d.interrupt(cancelled=run_id in cancelled)
        ]
        if tasks:
            await asyncio.wait(tasks, timeout=None if not outage.down else 10)
            _log(me, "stopped; the run in progress stays pending for the next worker")
    finally:
        if outage.down:
            # DBOS's threads retry the lost database until it is back, and the interpreter
            # would wait for them at exit: everything durable is in the database already.
            _log(me, "stopped while the runs database is unreachable; exiting now")
            os._exit(EXIT_INTERRUPTED)
        await runtime.stop()
    return EXIT_INTERRUPTED


async def _cancelled_ones(runtime: DurableRuntime, active: dict[str, Any]) -> set[str]:
    """The ids of ``active`` runs that are cancelled in the database (none when it cannot be
    read now)."""
    found: set[str] = set()
    # Bounded: a database lost just now must not hold a stopping worker.
    with contextlib.suppress(Exception):
        async with asyncio.timeout(5):
            for run_id in active:
                record = await runtime.get_run(run_id)
                if record is not None and record.status == "CANCELLED":
                    found.add(run_id)
    return found


async def _stopped(stop: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds`` or until ``stop``; True when stopped."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


class _Intake:
    """What the worker's poll keeps between rounds: the runs it saw running, and those that
    left (their outcome is reported once DBOS has written it)."""

    def __init__(self, runtime: DurableRuntime, max_runs: int | None) -> None:
        self.runtime = runtime
        self.max_runs = max_runs
        self.me = runtime.executor_id
        self.running: set[str] = set()
        self.leaving: set[str] = set()
        self.ended = 0
        self.queue_registered = False

    async def poll(self) -> bool:
        """One round; True once ``max_runs`` runs have ended here."""
        from loopkit.cards.durable import get_card_run
        from loopkit.cards.queue import register_card_queue, requeue_dead_workers_runs
        from loopkit.durable.run import active_runs

        runtime, me = self.runtime, self.me
        if not self.queue_registered:
            await register_card_queue()
            self.queue_registered = True
            _log(me, f"taking card runs from {runtime!r}, one at a time")
        for run_id in await requeue_dead_workers_runs(runtime):
            _log(me, f"run {run_id}: its worker is gone; back on the queue")
        active = active_runs()
        for run_id, durable in active.items():  # cancelled meanwhile: stop it now
            found = await runtime.get_run(run_id)
            if found is not None and found.status == "CANCELLED":
                durable.interrupt(cancelled=True)
        now = set(active)
        for run_id in sorted(now - self.running):
            _log(me, f"run {run_id}: started")
        # A run's code has returned; DBOS writes its outcome just after: report it then.
        self.leaving |= self.running - now
        self.running = now
        for run_id in sorted(self.leaving):
            record = await get_card_run(runtime, run_id)
            if record is not None and record.state == "running":
                continue
            state = record.state if record is not None else "unknown"
            reason = f" ({record.reason})" if record is not None and record.reason else ""
            _log(me, f"run {run_id}: {state}{reason}")
            self.leaving.discard(run_id)
            self.ended += 1
        return (
            self.max_runs is not None
            and self.ended >= self.max_runs
            and not self.running
            and not self.leaving
        )


async def _take_runs(
    runtime: DurableRuntime, stop: asyncio.Event, outage: Outage, max_runs: int | None
) -> int | None:
    """Poll until stopped (None) or ``max_runs`` runs ended (0), riding out outages."""
    from loopkit.durable.database import is_database_unavailable

    intake = _Intake(runtime, max_runs)
    while not stop.is_set():
        try:
            await runtime.check_database()
            # A poll can block inside DBOS when the database goes away under it (DBOS waits
            # for it): a stop signal must still end the worker.
            poll = asyncio.ensure_future(intake.poll())
            stopping = asyncio.ensure_future(stop.wait())
            await _while_polling(runtime, outage, poll, stopping)
            stopping.cancel()
            if not poll.done():
                poll.cancel()
                return None
            finished = poll.result()
        except Exception as e:
            if not is_database_unavailable(e):
                raise
            await _stopped(stop, outage.lost(e))
            continue
        outage.back()
        if finished:
            return EXIT_OK
        await _stopped(stop, 0.5)
    return None


#: Seconds a poll may take before the worker looks at the database beside it.
_POLL_LOOK_S = 2.0


async def _while_polling(
    runtime: DurableRuntime,
    outage: Outage,
    poll: asyncio.Future[bool],
    stopping: asyncio.Future[Any],
) -> None:
    """Wait for ``poll`` or ``stopping``. A poll that takes long may be blocked inside DBOS,
    which waits for a database lost under it: the worker looks at the database meanwhile and
    says so (once) when it is unreachable, as it does between polls."""
    from loopkit.durable.database import is_database_unavailable

    while True:
        done, _ = await asyncio.wait(
            {poll, stopping}, timeout=_POLL_LOOK_S, return_when=asyncio.FIRST_COMPLETED
        )
        if done:
            return
        try:
            await runtime.check_database()
        except Exception as e:  # anything else: the poll itself will meet it
            if is_database_unavailable(e):
                outage.lost(e)  # the wait it returns is the poll's own now


def main(argv: list[str] | None = None) -> int:
    """The worker's command line; returns the exit status."""
    args = parse_args(argv)
    from loopkit.cards import ConfigError, load_config
    from loopkit.demo.desktop import needs_headless_desktop, run_in_headless_desktop
    from loopkit.demo.run import check_durable

    try:
        config = load_config(args.config, database_url=args.database)
        check_durable(config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if needs_headless_desktop(config.headless):
        status = run_in_headless_desktop("loopkit.worker", sys.argv[1:] if argv is None else argv)
        return status if status in (EXIT_OK, EXIT_BAD_INPUT) else EXIT_INTERRUPTED
    return asyncio.run(serve(config, args.name, max_runs=args.max_runs))


if __name__ == "__main__":
    sys.exit(main())
