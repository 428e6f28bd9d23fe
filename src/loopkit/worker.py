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
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopkit.cards import RunnerConfig

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
    """Run the worker until a stop signal (130) or ``max_runs`` ended runs (0)."""
    import signal

    import loopkit.demo.durable  # noqa: F401  (registers the card-run workflow before launch)
    from loopkit.cards.durable import get_card_run
    from loopkit.cards.queue import CARD_QUEUE, register_card_queue, requeue_dead_workers_runs
    from loopkit.demo.durable import database_for
    from loopkit.durable.run import active_runs
    from loopkit.durable.runtime import DurableRuntime, process_executor_id

    runtime = DurableRuntime(
        database_for(config),
        executor_id=process_executor_id(name),
        listen=[CARD_QUEUE],
        # DBOS logs a cancelled or failed run with a traceback; the worker reports each run's
        # end itself, and the reason is in the run's record and log.
        log_level="CRITICAL",
        max_runs=max_runs,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    ended = 0
    me = runtime.executor_id
    async with runtime:
        await register_card_queue()
        _log(me, f"taking card runs from {runtime!r}, one at a time")
        running: set[str] = set()
        leaving: set[str] = set()
        while not stop.is_set():
            for run_id in await requeue_dead_workers_runs(runtime):
                _log(me, f"run {run_id}: its worker is gone; back on the queue")
            active = active_runs()
            for run_id, durable in active.items():  # cancelled meanwhile: stop it now
                found = await runtime.get_run(run_id)
                if found is not None and found.status == "CANCELLED":
                    durable.interrupt(cancelled=True)
            now = set(active)
            for run_id in sorted(now - running):
                _log(me, f"run {run_id}: started")
            # A run's code has returned; DBOS writes its outcome just after: report it then.
            leaving |= running - now
            for run_id in sorted(leaving):
                record = await get_card_run(runtime, run_id)
                if record is not None and record.state == "running":
                    continue
                state = record.state if record is not None else "unknown"
                reason = f" ({record.reason})" if record is not None and record.reason else ""
                _log(me, f"run {run_id}: {state}{reason}")
                leaving.discard(run_id)
                ended += 1
            running = now
            if max_runs is not None and ended >= max_runs and not running and not leaving:
                return EXIT_OK
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        # Stopped: the run in progress is interrupted (it logs so and stays pending).
        tasks = [d.task for d in active_runs().values() if d.task is not None and d.interrupt()]
        if tasks:
            await asyncio.wait(tasks)
            _log(me, "stopped; the run in progress stays pending for the next worker")
    return EXIT_INTERRUPTED


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
