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
    MESSAGES_INDEX,
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    SessionStoreError,
    answered_elsewhere,
    call_names,
    checked_session_id,
    dump_json,
    dump_message,
    json_values,
    load_json,
    load_message,
    merged,
    open_calls_before,
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
    sa.Column("open_calls", sa.Text, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
)
_messages = sa.Table(
    MESSAGES_TABLE,
    session_tables,
    # INTEGER on SQLite: only that type makes the column the rowid (ordered, no extra index).
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column(
        "session_id",
        sa.String(MAX_SESSION_ID),
        sa.ForeignKey(f"{SESSIONS_TABLE}.session_id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Index(MESSAGES_INDEX, "session_id", "id"),
)

# Statements built once (SQLAlchemy caches their compiled form); values go in as parameters.
_SID = sa.bindparam("sid")
_S, _M = _sessions.c, _messages.c
_LOCK = sa.update(_sessions).where(_S.session_id == _SID).values(updated_at=sa.bindparam("now"))
_NEW_SESSION = sa.insert(_sessions)
_OPEN_CALLS = sa.select(_S.open_calls).where(_S.session_id == _SID)
_SET_OPEN_CALLS = (
    sa.update(_sessions).where(_S.session_id == _SID).values(open_calls=sa.bindparam("calls"))
)
_METADATA = sa.select(_S.metadata).where(_S.session_id == _SID)
_SET_METADATA = (
    sa.update(_sessions).where(_S.session_id == _SID).values(metadata=sa.bindparam("data"))
)
_INSERT = sa.insert(_messages)
_ALL = sa.select(_M.message).where(_M.session_id == _SID).order_by(_M.id)
_LAST = (
    sa.select(_M.message)
    .where(_M.session_id == _SID)
    .order_by(_M.id.desc())
    .limit(sa.bindparam("n", type_=sa.Integer))
)
_NEWEST = sa.select(_M.id, _M.message).where(_M.session_id == _SID).order_by(_M.id.desc()).limit(1)
_BEFORE = (
    sa.select(_M.id, _M.message)
    .where(_M.session_id == _SID, _M.id < sa.bindparam("before"))
    .order_by(_M.id.desc())
    .limit(sa.bindparam("n", type_=sa.Integer))
)
_DELETE_ONE = sa.delete(_messages).where(_M.id == sa.bindparam("id"))
_DELETE_MESSAGES = sa.delete(_messages).where(_M.session_id == _SID)
_DELETE_SESSION = sa.delete(_sessions).where(_S.session_id == _SID)

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
                texts = list(conn.execute(_ALL, {"sid": sid}).scalars())
            else:
                texts = list(conn.execute(_LAST, {"sid": sid, "n": limit}).scalars())
                texts.reverse()
            return trim_to_whole_steps([self._load(text) for text in texts])

        return await self._run(read, write=False)

    async def add_messages(self, messages: Sequence[ChatMessage]) -> None:
        batch = list(messages)
        sid = self._id
        if not batch:  # nothing to write; still refused when the history left calls open

            def check(conn: Connection) -> None:
                check_complete(batch, self._open_calls(conn))

            return await self._run(check, write=False)

        def write(conn: Connection) -> None:
            now = time.time()
            rows = [{"session_id": sid, "message": dump_message(m), "created_at": now} for m in batch]
            open_calls = self._open_calls(conn) if self._lock(conn, now, create=True) else {}
            check_complete(batch, open_calls)
            if open_calls:
                conn.execute(_SET_OPEN_CALLS, {"sid": sid, "calls": "{}"})
            conn.execute(_INSERT, rows)

        await self._run(write, write=True)

    async def pop_message(self) -> ChatMessage | None:
        sid = self._id

        def pop(conn: Connection) -> ChatMessage | None:
            if not self._lock(conn, time.time(), create=False):
                return None
            row = conn.execute(_NEWEST, {"sid": sid}).first()
            if row is None:
                return None
            newest_id, text = row
            popped = self._load(text)
            conn.execute(_DELETE_ONE, {"id": newest_id})
            if popped.function_calls or popped.function_results:
                names = call_names(self._earlier(conn, newest_id), answered_elsewhere(popped))
                still_open = open_calls_before(popped, self._open_calls(conn), names)
                conn.execute(_SET_OPEN_CALLS, {"sid": sid, "calls": dump_json(still_open)})
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
        try:
            session_tables.create_all(self._engine, checkfirst=True)
        except sa_exc.DBAPIError:
            # Another process created them between our check and our CREATE: check again.
            session_tables.create_all(self._engine, checkfirst=True)
        _TABLES_READY.add(self._engine)

    def _lock(self, conn: Connection, now: float, *, create: bool) -> bool:
        """Lock the session's row for this transaction (created when ``create``); False when
        there is no row. The first statement of every write is this ``UPDATE``, so SQLite
        takes its write lock before reading and PostgreSQL makes other writers wait here."""
        if conn.execute(_LOCK, {"sid": self._id, "now": now}).rowcount:
            return True
        if create:
            conn.execute(
                _NEW_SESSION,
                {
                    "session_id": self._id,
                    "metadata": "{}",
                    "open_calls": "{}",
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return False

    def _open_calls(self, conn: Connection) -> dict[str, str]:
        text = conn.execute(_OPEN_CALLS, {"sid": self._id}).scalar_one_or_none()
        return load_json(text, f"{self}: open calls")

    def _earlier(self, conn: Connection, before_id: int) -> Iterator[ChatMessage]:
        """The messages before row ``before_id``, newest first, read a page at a time."""
        page = 16
        while True:
            rows = conn.execute(_BEFORE, {"sid": self._id, "before": before_id, "n": page}).all()
            for row_id, text in rows:
                before_id = row_id
                yield self._load(text)
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
        if not self._create_tables and isinstance(error, sa_exc.ProgrammingError | sa_exc.OperationalError):
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
    """WAL mode on a SQLite file, as SQLiteSession sets it (readers never wait for writers)."""
    from loopkit.sessions.sqlite import enable_wal

    enable_wal(dbapi_connection, 5.0)


def _hide_password(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
