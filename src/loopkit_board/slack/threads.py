"""Which Slack thread follows which run, persisted: after a restart the bot goes on posting
where it stopped (after the log events it posted) and answers in the thread with the run's session.

One small table in the bot's SQLite file (the same file as the threads' sessions, in WAL mode).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ThreadRun", "ThreadStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS loopkit_slack_threads (
    channel TEXT NOT NULL,
    thread_ts TEXT NOT NULL,
    run_id TEXT NOT NULL,
    card TEXT NOT NULL,
    posted INTEGER NOT NULL DEFAULT 0,
    reported INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    PRIMARY KEY (channel, thread_ts)
)
"""


@dataclass(frozen=True)
class ThreadRun:
    """A run started from a thread: where to post, what was posted so far."""

    channel: str
    thread_ts: str
    run_id: str
    card: str
    #: How many of the run's log events were posted (a restart goes on after them).
    posted: int
    reported: bool

    @property
    def session_id(self) -> str:
        """The thread's session id in the session store."""
        return f"slack:{self.channel}:{self.thread_ts}"


class ThreadStore:
    """The threads' runs in ``path`` (a SQLite file, created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=5.0, isolation_level=None)

    def _execute(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        conn = self._connect()
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    async def _run(self, sql: str, *params: object) -> list[tuple[object, ...]]:
        return await asyncio.to_thread(self._execute, sql, params)

    async def add(self, channel: str, thread_ts: str, run_id: str, card: str) -> None:
        """Remember that the thread follows ``run_id`` (a thread follows one run)."""
        await self._run(
            "INSERT OR REPLACE INTO loopkit_slack_threads "
            "(channel, thread_ts, run_id, card, created_at) VALUES (?, ?, ?, ?, ?)",
            channel,
            thread_ts,
            run_id,
            card,
            time.time(),
        )

    async def get(self, channel: str, thread_ts: str) -> ThreadRun | None:
        """The run the thread follows, if any."""
        rows = await self._run(
            "SELECT channel, thread_ts, run_id, card, posted, reported "
            "FROM loopkit_slack_threads WHERE channel = ? AND thread_ts = ?",
            channel,
            thread_ts,
        )
        return _thread(rows[0]) if rows else None

    async def unreported(self) -> list[ThreadRun]:
        """The threads whose run's end is not posted yet, oldest first."""
        rows = await self._run(
            "SELECT channel, thread_ts, run_id, card, posted, reported "
            "FROM loopkit_slack_threads WHERE reported = 0 ORDER BY created_at"
        )
        return [_thread(row) for row in rows]

    async def save_posted(self, thread: ThreadRun, posted: int) -> None:
        """The run's first ``posted`` log events are in the thread."""
        await self._run(
            "UPDATE loopkit_slack_threads SET posted = ? WHERE channel = ? AND thread_ts = ?",
            posted,
            thread.channel,
            thread.thread_ts,
        )

    async def mark_reported(self, thread: ThreadRun) -> None:
        """The run's end is posted."""
        await self._run(
            "UPDATE loopkit_slack_threads SET reported = 1 WHERE channel = ? AND thread_ts = ?",
            thread.channel,
            thread.thread_ts,
        )


def _thread(row: tuple[object, ...]) -> ThreadRun:
    channel, thread_ts, run_id, card, offset, reported = row
    return ThreadRun(
        str(channel), str(thread_ts), str(run_id), str(card), int(str(offset)), bool(reported)
    )
