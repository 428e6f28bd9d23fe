"""``SQLiteSession``: the embedded default store, one SQLite file, standard library only.

Usage::

    from loopkit.sessions import SQLiteSession

    async with SQLiteSession("chats.db", "user-42") as session:
        await session.add_messages([ChatMessage.from_text("user", "hello")])
        history = await session.get_messages(limit=50)   # the last 50, whole steps only

Many sessions share one file (each keyed by its id), and several processes may use the file at
once: it runs in WAL mode (readers never wait for a writer) and a writer waits up to
``busy_timeout`` seconds for another process's write to finish. Each ``add_messages`` batch is
one transaction: a process killed mid-batch leaves the file with whole batches only. The file
must be on a local disk (SQLite's WAL mode does not work over a network file system).

``synchronous="NORMAL"`` (the default) survives a crash of the process; a power cut may lose the
last batches (never corrupt the file). ``synchronous="FULL"`` syncs each batch to disk.

The tables are the ones :class:`~loopkit.sessions.SQLAlchemySession` uses (see
``loopkit.sessions._rows``): a file written by one store reads with the other. Each session
object holds one connection, used on one worker thread (calls run in order, off the event
loop); the connection is closed after two idle seconds and by :meth:`SQLiteSession.close`.
A ``":memory:"`` database (private to its object) never waits on a disk or a lock, so its
calls run at once on the caller's thread.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, TypeVar

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions._rows import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    SessionStoreError,
    checked_session_id,
    complete_flags,
    dump_json,
    dump_message,
    json_values,
    load_json,
    load_message,
    load_messages,
    merged,
    open_after_pop,
)
from loopkit.sessions._worker import BlockingWorker, InlineRunner, WorkerClosedError
from loopkit.sessions.protocol import check_complete, trim_to_whole_steps

__all__ = ["SQLiteSession"]

T = TypeVar("T")

# The DDL SQLAlchemySession's tables compile to on SQLite (so either store opens the other's file).
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {SESSIONS_TABLE} (
    session_id VARCHAR(255) NOT NULL,
    metadata TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    open_calls TEXT NOT NULL,
    created_at DOUBLE NOT NULL,
    updated_at DOUBLE NOT NULL,
    PRIMARY KEY (session_id)
);
CREATE TABLE IF NOT EXISTS {MESSAGES_TABLE} (
    session_id VARCHAR(255) NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    complete BOOLEAN NOT NULL,
    created_at DOUBLE NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id) REFERENCES {SESSIONS_TABLE} (session_id) ON DELETE CASCADE
);
"""

_STATE = f"SELECT message_count, open_calls FROM {SESSIONS_TABLE} WHERE session_id = ?"
_METADATA = f"SELECT metadata FROM {SESSIONS_TABLE} WHERE session_id = ?"
_NEW_SESSION = (
    f"INSERT INTO {SESSIONS_TABLE} "
    "(session_id, metadata, message_count, open_calls, created_at, updated_at) "
    "VALUES (?, ?, 0, '{{}}', ?, ?)"
)
_SET_STATE = (
    f"UPDATE {SESSIONS_TABLE} SET message_count = ?, open_calls = ?, updated_at = ? "
    "WHERE session_id = ?"
)
_SET_METADATA = f"UPDATE {SESSIONS_TABLE} SET metadata = ?, updated_at = ? WHERE session_id = ?"
_INSERT = (
    f"INSERT INTO {MESSAGES_TABLE} (session_id, seq, message, complete, created_at) "
    "VALUES (?, ?, ?, ?, ?)"
)
_ALL = f"SELECT message FROM {MESSAGES_TABLE} WHERE session_id = ? ORDER BY seq"
# The last N: a range of the primary key, in one statement (one snapshot).
_LAST = (
    f"SELECT message FROM {MESSAGES_TABLE} WHERE session_id = ?1 AND seq >= "
    f"(SELECT message_count FROM {SESSIONS_TABLE} WHERE session_id = ?1) - ?2 ORDER BY seq"
)
_AT = f"SELECT message FROM {MESSAGES_TABLE} WHERE session_id = ? AND seq = ?"
_BEFORE = (
    f"SELECT seq, message, complete FROM {MESSAGES_TABLE} WHERE session_id = ? AND seq < ? "
    "ORDER BY seq DESC LIMIT ?"
)
_DELETE_AT = f"DELETE FROM {MESSAGES_TABLE} WHERE session_id = ? AND seq = ?"
_DELETE_MESSAGES = f"DELETE FROM {MESSAGES_TABLE} WHERE session_id = ?"
_DELETE_SESSION = f"DELETE FROM {SESSIONS_TABLE} WHERE session_id = ?"

IDLE_SECONDS = 2.0


class SQLiteSession:
    """A :class:`~loopkit.sessions.Session` stored in an SQLite file (see the module docs).

    ``path`` is the database file (created with its tables when missing; its folder must
    exist) or ``":memory:"`` (a private database gone with this object). ``busy_timeout`` is
    how long a write waits for other processes' writes, in seconds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        session_id: str,
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        self._id = checked_session_id(session_id)
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")
        self._db = _Database(_checked_path(path), busy_timeout, synchronous)
        name = f"SQLiteSession {self._id}"
        # An in-memory database never waits (no disk, no other process): its calls run at once.
        self._worker: BlockingWorker | InlineRunner = (
            InlineRunner(name)
            if self._db.in_memory
            else BlockingWorker(name, idle_timeout=IDLE_SECONDS, on_idle=self._db.disconnect)
        )

    @property
    def session_id(self) -> str:
        return self._id

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._db.path

    def __repr__(self) -> str:
        return f"SQLiteSession({self._db.path!r}, {self._id!r})"

    async def __aenter__(self) -> SQLiteSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Finish the calls already made, then close the connection; later calls raise
        :class:`SessionStoreError`. Closing twice is harmless."""
        await asyncio.wrap_future(self._worker.close(final=self._db.disconnect))

    async def get_messages(self, limit: int | None = None) -> list[ChatMessage]:
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit}")
        if limit == 0:
            return []
        sid = self._id

        def read(conn: sqlite3.Connection) -> list[ChatMessage]:
            if limit is None:
                rows = conn.execute(_ALL, (sid,)).fetchall()
            else:
                rows = conn.execute(_LAST, (sid, limit)).fetchall()
            messages = load_messages([text for (text,) in rows], f"{self}: a stored message")
            return trim_to_whole_steps(messages)

        return await self._run(read)

    async def add_messages(self, messages: Sequence[ChatMessage]) -> None:
        batch = list(messages)
        sid = self._id

        def write(conn: sqlite3.Connection) -> None:
            now = time.time()
            texts = [dump_message(m) for m in batch]
            with _write_transaction(conn):
                count, open_calls, exists = self._state(conn)
                check_complete(batch, open_calls)
                if not batch:
                    return
                if not exists:
                    conn.execute(_NEW_SESSION, (sid, "{}", now, now))
                flags = complete_flags(batch, open_calls)
                conn.executemany(
                    _INSERT,
                    [
                        (sid, count + i, text, flag, now)
                        for i, (text, flag) in enumerate(zip(texts, flags, strict=True))
                    ],
                )
                conn.execute(_SET_STATE, (count + len(batch), "{}", now, sid))

        await self._run(write)

    async def pop_message(self) -> ChatMessage | None:
        sid = self._id

        def pop(conn: sqlite3.Connection) -> ChatMessage | None:
            with _write_transaction(conn):
                count, open_calls, _ = self._state(conn)
                if not count:
                    return None
                row = conn.execute(_AT, (sid, count - 1)).fetchone()
                if row is None:
                    raise SessionStoreError(f"{self}: message {count - 1} is missing")
                popped = self._load(row[0])
                conn.execute(_DELETE_AT, (sid, count - 1))
                if popped.function_calls or popped.function_results:
                    open_calls = open_after_pop(self._earlier(conn, count - 1), f"{self}")
                conn.execute(_SET_STATE, (count - 1, dump_json(open_calls), time.time(), sid))
                return popped

        return await self._run(pop)

    async def clear(self) -> None:
        sid = self._id

        def clear(conn: sqlite3.Connection) -> None:
            with _write_transaction(conn):
                conn.execute(_DELETE_MESSAGES, (sid,))
                conn.execute(_DELETE_SESSION, (sid,))

        await self._run(clear)

    async def get_metadata(self) -> dict[str, Any]:
        sid = self._id

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(_METADATA, (sid,)).fetchone()
            return load_json(row[0] if row else None, f"{self}: metadata")

        return await self._run(read)

    async def set_metadata(self, values: Mapping[str, Any]) -> None:
        data = json_values(values)
        sid = self._id

        def write(conn: sqlite3.Connection) -> None:
            now = time.time()
            with _write_transaction(conn):
                row = conn.execute(_METADATA, (sid,)).fetchone()
                metadata = merged(load_json(row[0] if row else None, f"{self}: metadata"), data)
                if row is None:
                    conn.execute(_NEW_SESSION, (sid, dump_json(metadata), now, now))
                else:
                    conn.execute(_SET_METADATA, (dump_json(metadata), now, sid))

        await self._run(write)

    # -- internals (run on the worker thread) ----------------------------------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db

        def job() -> T:
            try:
                return fn(db.connection())
            except sqlite3.Error as error:
                raise db.error(error) from None

        try:
            return await self._worker.run(job)
        except WorkerClosedError:
            raise SessionStoreError(f"{self} is closed") from None

    def _state(self, conn: sqlite3.Connection) -> tuple[int, dict[str, str], bool]:
        """The session's message count, the calls its history leaves open, and whether it has
        a row at all."""
        row = conn.execute(_STATE, (self._id,)).fetchone()
        if row is None:
            return 0, {}, False
        return row[0], load_json(row[1], f"{self}: open calls"), True

    def _earlier(self, conn: sqlite3.Connection, before: int) -> Iterator[tuple[str, bool]]:
        """The messages before number ``before`` (text, complete flag), newest first, a page
        at a time (the caller stops at the first complete one)."""
        page = 16
        while True:
            rows = conn.execute(_BEFORE, (self._id, before, page)).fetchall()
            for seq, text, complete in rows:
                before = seq
                yield text, bool(complete)
            if len(rows) < page:
                return
            page = min(page * 4, 1024)

    def _load(self, text: str) -> ChatMessage:
        return load_message(text, f"{self}: a stored message")


class _Database:
    """The file and the connection to it (opened on first use, on the worker thread)."""

    def __init__(self, path: str, busy_timeout: float, synchronous: str) -> None:
        self.path = path
        self.in_memory = path == ":memory:"
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self._conn: sqlite3.Connection | None = None

    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE for every write,
        # so a writer takes the lock before it reads what it will change).
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            if not self.in_memory:
                enable_wal(conn, self.busy_timeout)
            conn.executescript(SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def error(self, error: sqlite3.Error) -> SessionStoreError:
        """``error`` as a :class:`SessionStoreError` naming the file and what to do."""
        text = str(error)
        lowered = text.lower()
        if "not a database" in lowered or "malformed" in lowered:
            what = f"{self.path} is not an SQLite database of sessions ({text})"
        elif "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
            what = (
                f"cannot write {self.path} ({text}); the file and its folder must be writable "
                "(SQLite also creates -wal and -shm files beside it)"
            )
        elif "locked" in lowered or "busy" in lowered:
            what = (
                f"{self.path} stayed locked by another writer for more than "
                f"{self.busy_timeout:g} s ({text})"
            )
        else:
            what = f"SQLite session store {self.path}: {text}"
        return SessionStoreError(what)


def _checked_path(path: str | os.PathLike[str]) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a file path or ':memory:', got {path!r}")
    text = os.fspath(path)
    if text == ":memory:":
        return text
    if not text:
        raise ValueError("path must be a file path or ':memory:', got ''")
    file = Path(text)
    if file.is_dir():
        raise SessionStoreError(
            f"{text} is a folder; SQLiteSession needs the path of a database file, "
            f"e.g. {file / 'sessions.db'}"
        )
    if not file.parent.is_dir():
        raise SessionStoreError(f"cannot create {text}: the folder {file.parent} does not exist")
    return text


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the database in WAL mode. Switching modes can fail with "locked" while another
    process opens the file at the same moment, without waiting for the busy timeout: retry."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error).lower() or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


@contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error (a batch is all or none)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            # A failing ROLLBACK means a broken connection: the transaction dies with it.
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
