"""A poll that blocks inside DBOS while the database is gone (DBOS waits for it) does not hide the
outage: the worker looks at the database beside the poll and says once that it is unreachable,
and once that it is back."""

from __future__ import annotations

import asyncio

import pytest

from loopkit import worker
from loopkit.durable.errors import DatabaseUnavailableError
from loopkit.durable.outage import Outage


class _Runtime:
    """The part of DurableRuntime the look uses: a database that is down, then back."""

    def __init__(self) -> None:
        self.down = True
        self.looks = 0

    async def check_database(self) -> None:
        self.looks += 1
        if self.down:
            raise DatabaseUnavailableError("connection refused (the test's database is down)")


async def test_a_blocked_poll_still_reports_the_outage_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "_POLL_LOOK_S", 0.02)
    said: list[str] = []
    outage = Outage(said.append, what="the runs database")
    runtime = _Runtime()
    poll: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    stopping: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def database_back_later() -> None:
        await asyncio.sleep(0.3)  # several looks while the poll is blocked
        runtime.down = False
        poll.set_result(False)

    back = asyncio.create_task(database_back_later())
    await worker._while_polling(runtime, outage, poll, stopping)  # type: ignore[arg-type]
    await back
    assert runtime.looks >= 3
    assert [s for s in said if "unreachable" in s] == [said[0]] and len(said) == 1
    assert outage.down
    assert outage.back() and "reachable again" in said[-1]


async def test_a_quick_poll_is_not_looked_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "_POLL_LOOK_S", 5.0)
    said: list[str] = []
    runtime = _Runtime()
    poll: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    stopping: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_later(0.05, poll.set_result, True)
    await worker._while_polling(runtime, Outage(said.append), poll, stopping)  # type: ignore[arg-type]
    assert (runtime.looks, said) == (0, [])
