"""``SQLAlchemySession``: a session in any database SQLAlchemy reaches (PostgreSQL, SQLite, ...).

Needs the ``sql`` extra: ``pip install 'loopkit[sql]'`` (SQLAlchemy 2 and psycopg 3). Usage::

    from loopkit.sessions import SQLAlchemySession

    session = SQLAlchemySession("postgresql+psycopg://app@db.example/app", "user-42")
    await session.add_messages([ChatMessage.from_text("user", "hello")])
    ...
    await session.close()          # disposes of the engine it created

    # many sessions, one connection pool: create the engine once and share it
    engine = sqlalchemy.create_engine("postgresql+psycopg://app@db.example/app")
    session = SQLAlchemySession(session_id="user-42", engine=engine)

The URL is SQLAlchemy's; ``postgresql://`` means ``postgresql+psycopg://`` (psycopg 3, which the
extra installs). The engine is synchronous and runs on a worker thread per session object, off
the event loop (asyncio drivers such as ``+asyncpg`` or ``+aiosqlite`` are refused with a
clear error: they would need greenlet, and gain nothing here).

The tables (``loopkit_sessions``, ``loopkit_messages``; see ``loopkit.sessions._rows``) are
created on first use unless ``create_tables=False``; :data:`session_tables` is their
``MetaData`` (for Alembic). They are the tables :class:`~loopkit.sessions.SQLiteSession` uses,
so ``sqlite:///path`` opens its files. Each batch is one transaction; every write first locks
the session's row (an ``UPDATE``), so two writers to one session, in any processes, take turns
and keep whole batches in order.
"""

from __future__ import annotations

import asyncio
import re
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

try:
    import sqlalchemy as sa
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.engine import URL, Connection, Engine, make_url
    from sqlalchemy.pool import StaticPool
except ImportError as error:  # pragma: no cover - exercised in a subprocess without sqlalchemy
    raise ImportError(
        f"SQLAlchemySession needs SQLAlchemy ({error}): pip install 'loopkit[sql]'"
    ) from error

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions._rows import (
    MAX_SESSION_ID,
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
from loopkit.sessions._worker import BlockingWorker, WorkerClosedError
from loopkit.sessions.protocol import check_complete, trim_to_whole_steps

__all__ = ["SQLAlchemySession", "session_tables"]

T = TypeVar("T")

#: The tables every SQLAlchemySession uses (add it to Alembic's ``target_metadata``).
session_tables = sa.MetaData()
_sessions = sa.Table(
    SESSIONS_TABLE,
    session_tables,
    sa.Column("session_id", sa.String(MAX_SESSION_ID), primary_key=True),
    sa.Column("metadata", sa.Text, nullable=False),
    sa.Column("message_count", sa.Integer, nullable=False),
    sa.Column("open_calls", sa.Text, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
)
_messages = sa.Table(
    MESSAGES_TABLE,
    session_tables,
    sa.Column(
        "session_id",
        sa.String(MAX_SESSION_ID),
        sa.ForeignKey(f"{SESSIONS_TABLE}.session_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("complete", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
)

# Statements built once (SQLAlchemy caches their compiled form); values go in as parameters.
_SID: sa.BindParameter[str] = sa.bindparam("sid", type_=sa.String)
_S, _M = _sessions.c, _messages.c
# Every write starts here; an append also reserves its numbers (rolled back with a refused batch).
_LOCK = (
    sa.update(_sessions)
    .where(_S.session_id == _SID)
    .values(
        updated_at=sa.bindparam("now"),
        message_count=_S.message_count + sa.bindparam("grow", type_=sa.Integer),
    )
)
_NEW_SESSION = sa.insert(_sessions)
_STATE = sa.select(_S.message_count, _S.open_calls).where(_S.session_id == _SID)
_SET_OPEN_CALLS = (
    sa.update(_sessions).where(_S.session_id == _SID).values(open_calls=sa.bindparam("calls"))
)
_SET_STATE = (
    sa.update(_sessions)
    .where(_S.session_id == _SID)
    .values(message_count=sa.bindparam("count"), open_calls=sa.bindparam("calls"))
)
_METADATA = sa.select(_S.metadata).where(_S.session_id == _SID)
_SET_METADATA = (
    sa.update(_sessions).where(_S.session_id == _SID).values(metadata=sa.bindparam("data"))
)
_INSERT = sa.insert(_messages)
_ALL = sa.select(_M.message).where(_M.session_id == _SID).order_by(_M.seq)
# The last N: a range of the primary key, in one statement (one snapshot).
_LAST = (
    sa.select(_M.message)
    .where(
        _M.session_id == _SID,
        _M.seq
        >= sa.select(_S.message_count).where(_S.session_id == _SID).scalar_subquery()
        - sa.bindparam("n", type_=sa.Integer),
    )
    .order_by(_M.seq)
)
_AT = sa.select(_M.message).where(_M.session_id == _SID, _M.seq == sa.bindparam("seq"))
_BEFORE = (
    sa.select(_M.seq, _M.message, _M.complete)
    .where(_M.session_id == _SID, _M.seq < sa.bindparam("before"))
    .order_by(_M.seq.desc())
    .limit(sa.bindparam("n", type_=sa.Integer))
)
_DELETE_AT = sa.delete(_messages).where(_M.session_id == _SID, _M.seq == sa.bindparam("seq"))
_DELETE_MESSAGES = sa.delete(_messages).where(_M.session_id == _SID)
_DELETE_SESSION = sa.delete(_sessions).where(_S.session_id == _SID)

# How often to try creating the tables when other writers create them at the same moment.
_CREATE_ATTEMPTS = 8
# Engines whose tables exist (a cache of facts about engines, not configuration).
_TABLES_READY: weakref.WeakSet[Engine] = weakref.WeakSet()


class SQLAlchemySession:
    """A :class:`~loopkit.sessions.Session` stored through SQLAlchemy (see the module docs).

    Give ``url`` (an engine is created and disposed of by :meth:`close`) or ``engine`` (shared,
    left open). ``create_tables=False`` when the tables are managed elsewhere (migrations).
    """

    def __init__(
        self,
        url: str | URL | None = None,
        session_id: str = "",
        *,
        engine: Engine | None = None,
        create_tables: bool = True,
    ) -> None:
        self._id = checked_session_id(session_id)
        if (url is None) == (engine is None):
            raise ValueError("give SQLAlchemySession a url or an engine (exactly one)")
        if engine is not None:
            if not isinstance(engine, Engine):
                raise TypeError(
                    f"engine must be a synchronous sqlalchemy Engine (create_engine), got "
                    f"{type(engine).__name__}; SQLAlchemySession runs it on a worker thread"
                )
            self._engine, self._owns_engine = engine, False
        else:
            assert url is not None
            self._engine, self._owns_engine = _create_engine(url), True
        self._where = self._engine.url.render_as_string(hide_password=True)
        self._create_tables = create_tables
        self._worker = BlockingWorker(f"SQLAlchemySession {self._id}")

    @property
    def session_id(self) -> str:
        return self._id

    @property
    def engine(self) -> Engine:
        """The engine this session uses."""
        return self._engine

    def __repr__(self) -> str:
        return f"SQLAlchemySession({self._where!r}, {self._id!r})"

    async def __aenter__(self) -> SQLAlchemySession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Finish the calls already made; dispose of the engine if this session created it.
        Later calls raise :class:`SessionStoreError`. Closing twice is harmless."""
        final = self._engine.dispose if self._owns_engine else None
        await asyncio.wrap_future(self._worker.close(final=final))

    async def get_messages(self, limit: int | None = None) -> list[ChatMessage]:
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit}")
        if limit == 0:
            return []
        sid = self._id

        def read(conn: Connection) -> list[ChatMessage]:
            if limit is None:
                texts = conn.execute(_ALL, {"sid": sid}).scalars().all()
            else:
                texts = conn.execute(_LAST, {"sid": sid, "n": limit}).scalars().all()
            return trim_to_whole_steps(load_messages(texts, f"{self}: a stored message"))

        return await self._run(read, write=False)

    async def add_messages(self, messages: Sequence[ChatMessage]) -> None:
        batch = list(messages)
        sid = self._id
        if not batch:  # nothing to write; still refused when the history left calls open

            def check(conn: Connection) -> None:
                check_complete(batch, self._state(conn)[1])

            return await self._run(check, write=False)

        def write(conn: Connection) -> None:
            now = time.time()
            texts = [dump_message(m) for m in batch]
            grow = len(batch)
            if self._lock(conn, now, create=True, grow=grow):
                count, open_calls = self._state(conn)
            else:
                count, open_calls = grow, {}
            check_complete(batch, open_calls)
            flags = complete_flags(batch, open_calls)
            first = count - grow
            rows = [
                {"session_id": sid, "seq": first + i, "message": text, "complete": flag}
                | {"created_at": now}
                for i, (text, flag) in enumerate(zip(texts, flags, strict=True))
            ]
            conn.execute(_INSERT, rows)
            if open_calls:
                conn.execute(_SET_OPEN_CALLS, {"sid": sid, "calls": "{}"})

        await self._run(write, write=True)

    async def pop_message(self) -> ChatMessage | None:
        sid = self._id

        def pop(conn: Connection) -> ChatMessage | None:
            if not self._lock(conn, time.time(), create=False):
                return None
            count, open_calls = self._state(conn)
            if not count:
                return None
            text = conn.execute(_AT, {"sid": sid, "seq": count - 1}).scalar_one_or_none()
            if text is None:
                raise SessionStoreError(f"{self}: message {count - 1} is missing")
            popped = self._load(text)
            conn.execute(_DELETE_AT, {"sid": sid, "seq": count - 1})
            if popped.function_calls or popped.function_results:
                open_calls = open_after_pop(self._earlier(conn, count - 1), f"{self}")
            calls = dump_json(open_calls)
            conn.execute(_SET_STATE, {"sid": sid, "count": count - 1, "calls": calls})
            return popped

        return await self._run(pop, write=True)

    async def clear(self) -> None:
        sid = self._id

        def clear(conn: Connection) -> None:
            # Lock first: a batch being written to this session commits before, not after.
            self._lock(conn, time.time(), create=False)
            conn.execute(_DELETE_MESSAGES, {"sid": sid})
            conn.execute(_DELETE_SESSION, {"sid": sid})

        await self._run(clear, write=True)

    async def get_metadata(self) -> dict[str, Any]:
        sid = self._id

        def read(conn: Connection) -> dict[str, Any]:
            text = conn.execute(_METADATA, {"sid": sid}).scalar_one_or_none()
            return load_json(text, f"{self}: metadata")

        return await self._run(read, write=False)

    async def set_metadata(self, values: Mapping[str, Any]) -> None:
        data = json_values(values)
        sid = self._id

        def write(conn: Connection) -> None:
            self._lock(conn, time.time(), create=True)
            text = conn.execute(_METADATA, {"sid": sid}).scalar_one()
            metadata = merged(load_json(text, f"{self}: metadata"), data)
            conn.execute(_SET_METADATA, {"sid": sid, "data": dump_json(metadata)})

        await self._run(write, write=True)

    # -- internals (run on the worker thread) ----------------------------------------------

    async def _run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        try:
            return await self._worker.run(lambda: self._call(fn, write))
        except WorkerClosedError:
            raise SessionStoreError(f"{self} is closed") from None

    def _call(self, fn: Callable[[Connection], T], write: bool) -> T:
        try:
            self._ensure_tables()
            for attempt in range(3):
                try:
                    with self._engine.begin() as conn:
                        return fn(conn)
                except sa_exc.IntegrityError:
                    # Two writers created the session's row at once: the loser retries and now
                    # finds (and locks) the row. Anything else is not ours to retry.
                    if not write or attempt == 2:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover
        except sa_exc.SQLAlchemyError as error:
            raise self._error(error) from None

    def _ensure_tables(self) -> None:
        if not self._create_tables or self._engine in _TABLES_READY:
            return
        # Other writers (threads with their own engine, other processes) may create the tables
        # between our check and our CREATE, one table or index at a time: check again, a few
        # times, since each round creates what is still missing.
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                session_tables.create_all(self._engine, checkfirst=True)
                break
            except sa_exc.DBAPIError:
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
        _TABLES_READY.add(self._engine)

    def _lock(self, conn: Connection, now: float, *, create: bool, grow: int = 0) -> bool:
        """Lock the session's row for this transaction, adding ``grow`` to its message count
        (the row is created when ``create``); False when there was no row. The first statement
        of every write is this ``UPDATE``, so SQLite takes its write lock before reading and
        PostgreSQL makes other writers to the session wait here."""
        if conn.execute(_LOCK, {"sid": self._id, "now": now, "grow": grow}).rowcount:
            return True
        if create:
            conn.execute(
                _NEW_SESSION,
                {
                    "session_id": self._id,
                    "metadata": "{}",
                    "message_count": grow,
                    "open_calls": "{}",
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return False

    def _state(self, conn: Connection) -> tuple[int, dict[str, str]]:
        """The session's message count and the calls its history leaves open."""
        row = conn.execute(_STATE, {"sid": self._id}).first()
        if row is None:
            return 0, {}
        return row[0], load_json(row[1], f"{self}: open calls")

    def _earlier(self, conn: Connection, before: int) -> Iterator[tuple[str, bool]]:
        """The messages before number ``before`` (text, complete flag), newest first, a page
        at a time (the caller stops at the first complete one)."""
        page = 16
        while True:
            rows = conn.execute(_BEFORE, {"sid": self._id, "before": before, "n": page}).all()
            for seq, text, complete in rows:
                before = seq
                yield text, bool(complete)
            if len(rows) < page:
                return
            page = min(page * 4, 1024)

    def _load(self, text: str) -> ChatMessage:
        return load_message(text, f"{self}: a stored message")

    def _error(self, error: sa_exc.SQLAlchemyError) -> SessionStoreError:
        """``error`` as a :class:`SessionStoreError` naming the database (never its password,
        never the statement's parameters, which hold the conversation)."""
        cause = getattr(error, "orig", None) or error
        text = " ".join(str(cause).split()) or type(cause).__name__
        hint = ""
        missing_table = isinstance(error, sa_exc.ProgrammingError | sa_exc.OperationalError)
        if missing_table and not self._create_tables:
            hint = " (create_tables=False: create the tables first, e.g. from session_tables)"
        return SessionStoreError(f"session store {self._where}: {text}{hint}")


def _create_engine(url: str | URL) -> Engine:
    """An engine for ``url``, set up for sessions; clear errors for bad URLs and drivers."""
    try:
        parsed = make_url(url)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        raise SessionStoreError(
            f"{_hide_password(str(url))!r} is not a SQLAlchemy URL; expected e.g. "
            "'sqlite:///sessions.db' or 'postgresql+psycopg://user@host/database'"
        ) from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3 comes with loopkit[sql]
    shown = parsed.render_as_string(hide_password=True)
    try:
        dialect = parsed.get_dialect()
    except sa_exc.NoSuchModuleError:
        raise SessionStoreError(
            f"{shown}: SQLAlchemy has no database driver {parsed.drivername!r}"
        ) from None
    if getattr(dialect, "is_async", False):
        raise SessionStoreError(
            f"{shown} names an asyncio driver ({parsed.drivername}); SQLAlchemySession runs a "
            "synchronous engine off the event loop: use the synchronous driver, e.g. "
            "postgresql+psycopg:// or sqlite:///"
        )
    options: dict[str, Any] = {}
    sqlite_file = parsed.get_backend_name() == "sqlite" and parsed.database not in (
        None,
        "",
        ":memory:",
    )
    if parsed.get_backend_name() == "sqlite" and not sqlite_file:
        # One in-memory database, kept in one connection for the engine's life.
        options = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    try:
        engine = sa.create_engine(parsed, **options)
    except ImportError as error:
        raise SessionStoreError(
            f"{shown}: the database driver is not installed ({error}); "
            "pip install 'loopkit[sql]' installs psycopg for postgresql+psycopg://"
        ) from None
    if sqlite_file:
        sa.event.listen(engine, "connect", _sqlite_wal)
    return engine


def _sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    """A SQLite file set up as SQLiteSession sets it: WAL mode (readers never wait for the
    writer), and ``synchronous=NORMAL`` (a commit survives a crash of the process without an
    fsync; in WAL mode a power cut may lose the last commits, never corrupt the file)."""
    from loopkit.sessions.sqlite import enable_wal

    dbapi_connection.execute("PRAGMA synchronous=NORMAL")
    enable_wal(dbapi_connection, 5.0)


def _hide_password(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
