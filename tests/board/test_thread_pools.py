"""Every thread pool the board runs on is bounded: DBOS's executor (which DBOS also makes the
event loop's default executor: every ``asyncio.to_thread`` and every database read of its async
API), the argon2 pool of the login checks, and the limiter of anyio's threads (files). A hundred
callers at once wait for a thread; they do not start a hundred. Real DBOS on a SQLite file in a
temp folder, real argon2."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import anyio.to_thread

from loopkit_board.auth import Accounts, hash_secret
from loopkit_board.limits import LimitReached, LoginLimits, SecretChecker
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")


def _niceness(thread_id: int) -> int:
    stat = Path(f"/proc/self/task/{thread_id}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])  # field 19, counted after the name


def _threads(prefix: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith(prefix))


async def test_the_durable_runtimes_threads_are_bounded(tmp_path: Path) -> None:
    from loopkit.durable.runtime import DurableRuntime

    async with DurableRuntime(tmp_path / "runs.sqlite", max_threads=8) as runtime:
        # A read of the async API makes DBOS's pool the loop's default executor (as the board's
        # first request does).
        await asyncio.gather(*(runtime.get_run(f"no-run-{n}") for n in range(100)))
        used: set[str] = set()

        def work() -> None:
            used.add(threading.current_thread().name)
            time.sleep(0.05)

        await asyncio.gather(*(asyncio.to_thread(work) for _ in range(100)))
        assert all(name.startswith("dbos-executor") for name in used), used
        assert 1 <= len(used) <= 8, used
        assert _threads("dbos-executor") <= 8


async def test_the_login_checks_run_in_two_threads_and_the_rest_wait_or_are_refused() -> None:
    accounts = Accounts({"ann": hash_secret("right")}, {})
    checker = SecretChecker(accounts, LoginLimits(client_in_flight=100, max_waiting=20))
    try:
        peak = 0

        async def watch() -> None:
            nonlocal peak
            while True:
                peak = max(peak, _threads("loopkit-board-argon2"))
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch())
        results = await asyncio.gather(
            *(checker.password(f"client:{n}", f"user{n}", "wrong") for n in range(40)),
            return_exceptions=True,
        )
        watcher.cancel()
        refused = [r for r in results if isinstance(r, LimitReached)]
        checked = [r for r in results if r is None]
        assert len(refused) + len(checked) == 40 and len(checked) == 20, results
        assert all("the board is busy checking logins" in str(r) for r in refused)
        assert 1 <= peak <= 2, peak
        # below the event loop's priority (Linux: per thread), so pages go first
        for thread in threading.enumerate():
            if thread.name.startswith("loopkit-board-argon2") and thread.native_id:
                assert _niceness(thread.native_id) == 10, thread.name
        # the event loop was never blocked: the pool is the only place argon2 runs
        assert await checker.password("client:x", "ann", "right") == "ann"
    finally:
        checker.close()


def test_anyio_threads_are_limited() -> None:
    # Starlette's file responses and sync code run on anyio's threads: 40 at most by default.
    async def limit() -> float:
        return anyio.to_thread.current_default_thread_limiter().total_tokens

    assert anyio.run(limit) == 40
