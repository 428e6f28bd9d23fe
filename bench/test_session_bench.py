"""Session stores, append + read per message: loopkit's ``SQLiteSession`` beside the OpenAI Agents
SDK's ``SQLiteSession`` (``from agents import SQLiteSession``), and loopkit's
``SQLAlchemySession`` on SQLite for scale.

The same work for each: a fresh session; ``N`` messages appended one per call (``add_messages``
/ ``add_items`` with one message, awaited in turn, as an agent appends a step at a time), then
the whole history read back once (``get_messages()`` / ``get_items()``). Twice: with the
database in memory (``:memory:``, the Agents SDK's default) and in a file (WAL mode for both:
both stores set it; the Agents SDK keeps SQLite's default ``synchronous=FULL``, loopkit
``NORMAL``, so the file table also shows loopkit with ``FULL``). Messages are alternating user and assistant texts of 200 characters; the
Agents SDK stores them as its input items (``{"role": ..., "content": ...}``, dumped with
``json``), loopkit as ``ChatMessage`` models (pydantic JSON, validated again on the way out).

Each store runs once to warm up, then ``REPEATS`` times, interleaved (each repetition starts
with the next store); the table shows the median per message, split into append and read. Checked in every run: the history read back
is exactly what was appended, in order. Speed is printed, never asserted.
Run: ``.venv/bin/python -m pytest bench/test_session_bench.py -s -q`` (or ``.venv/bin/nox -s
bench``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

MESSAGES = 500
REPEATS = 6
TEXT = "lorem ipsum dolor sit amet, " * 7  # 196 characters

Timing = tuple[float, float]  # seconds appending, seconds reading
Runner = Callable[[Path | None, str], Awaitable[Timing]]


def texts() -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", f"{i} {TEXT}") for i in range(MESSAGES)]


async def run_loopkit_sqlite(
    path: Path | None, session_id: str, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
) -> Timing:
    from loopkit import ChatMessage
    from loopkit.sessions import SQLiteSession

    messages = [ChatMessage.from_text(role, text) for role, text in texts()]
    session = SQLiteSession(path or ":memory:", session_id, synchronous=synchronous)
    return await _loopkit(session, messages)


async def run_loopkit_sqlite_full(path: Path | None, session_id: str) -> Timing:
    return await run_loopkit_sqlite(path, session_id, "FULL")


async def run_loopkit_sqlalchemy(path: Path | None, session_id: str) -> Timing:
    from loopkit import ChatMessage
    from loopkit.sessions import SQLAlchemySession

    messages = [ChatMessage.from_text(role, text) for role, text in texts()]
    session = SQLAlchemySession(f"sqlite:///{path}" if path else "sqlite://", session_id)
    return await _loopkit(session, messages)


async def _loopkit(session: Any, messages: list[Any]) -> Timing:
    try:
        await session.get_messages(1)  # connected, tables created: not timed, as for the peer
        start = time.perf_counter()
        for message in messages:
            await session.add_messages([message])
        appended = time.perf_counter()
        history = await session.get_messages()
        read = time.perf_counter()
    finally:
        await session.close()
    # A broken benchmark must fail: everything came back, in order.
    assert [(m.role.value, m.text) for m in history] == texts()
    return appended - start, read - appended


async def run_agents_sdk(path: Path | None, session_id: str) -> Timing:
    from agents import SQLiteSession

    items: list[Any] = [{"role": role, "content": text} for role, text in texts()]
    session = SQLiteSession(session_id, path or ":memory:")
    try:
        await session.get_items(1)
        start = time.perf_counter()
        for item in items:
            await session.add_items([item])
        appended = time.perf_counter()
        history = await session.get_items()
        read = time.perf_counter()
    finally:
        session.close()
    assert [(i["role"], i["content"]) for i in history] == texts()
    return appended - start, read - appended


STORES: dict[str, Runner] = {
    "loopkit SQLiteSession": run_loopkit_sqlite,
    "agents SDK SQLiteSession": run_agents_sdk,
    "loopkit SQLAlchemySession": run_loopkit_sqlalchemy,
}
# In a file, the Agents SDK keeps SQLite's default synchronous=FULL (an fsync per commit);
# loopkit defaults to NORMAL (safe against a crash of the process, not a power cut). This row
# is loopkit with the peer's durability.
FILE_ONLY: dict[str, Runner] = {"loopkit SQLiteSession, FULL": run_loopkit_sqlite_full}


async def _measure(in_file: bool) -> dict[str, list[Timing]]:
    stores = {**STORES, **FILE_ONLY} if in_file else STORES
    times: dict[str, list[Timing]] = {name: [] for name in stores}
    with tempfile.TemporaryDirectory(prefix="loopkit-session-bench-") as folder:
        for rep in range(REPEATS + 1):
            # Each repetition starts with the next store: on a shared disk, whoever runs just
            # after a big writer pays for its write-back (fsync-bound runs moved 2x with order).
            names = list(stores)
            names = names[rep % len(names) :] + names[: rep % len(names)]
            for index, name in enumerate(names):
                run = stores[name]
                gc.collect()
                if in_file:  # the previous runs' unsynced writes must not land on this one's fsyncs
                    os.sync()
                # A fresh file per run (the history starts empty; WAL files do not pile up).
                path = Path(folder) / f"r{rep}-{index}.db" if in_file else None
                timing = await run(path, f"bench-{rep}")
                if rep > 0:  # the first run is a warm-up (imports, statement caches)
                    times[name].append(timing)
    return times


def _report(title: str, times: dict[str, list[Timing]]) -> dict[str, float]:
    def per_message(values: list[float]) -> float:
        return statistics.median(values) / MESSAGES * 1e6

    total = {name: per_message([a + r for a, r in t]) for name, t in times.items()}
    print(
        f"\n{title}: {MESSAGES} messages appended one per call, then read back; "
        f"median of {REPEATS} runs, µs per message"
    )
    print(f"  {'store':<27} {'append':>8} {'read':>7} {'total':>7} {'min':>7} {'max':>7}")
    for name, t in times.items():
        sums = [(a + r) / MESSAGES * 1e6 for a, r in t]
        print(
            f"  {name:<27} {per_message([a for a, _ in t]):8.1f} "
            f"{per_message([r for _, r in t]):7.1f} {total[name]:7.1f} "
            f"{min(sums):7.1f} {max(sums):7.1f}"
        )
    peer = total["agents SDK SQLiteSession"]
    for name in ("loopkit SQLiteSession", *FILE_ONLY):
        if name in total:
            print(
                f"  {name} / agents SDK SQLiteSession = {total[name] / peer:.3f} "
                f"({peer / total[name]:.2f}x faster)"
            )
    return total


@pytest.mark.parametrize("in_file", [False, True], ids=["memory", "file"])
def test_session_append_and_read(in_file: bool) -> None:
    times = asyncio.run(_measure(in_file))
    _report(f"Sessions, database {'in a file (WAL)' if in_file else 'in memory'}", times)
