"""The durable runs' database connection: engines that know an outage when they see one.

DBOS waits through a lost database by itself: a database call that fails because the connection
is gone is retried with backoff until the database answers again, so a run in progress pauses
instead of failing. It recognises a lost connection by the driver's error, and psycopg 3.3
words a refused or missing server ("connection is bad: connection to server ... failed") in a
way DBOS does not match: the call raised ``OperationalError`` at once, and a worker's poll loop
died of it. loopkit therefore gives DBOS its own PostgreSQL engine (DBOS's settings) with a
``handle_error`` hook that names every lost connection as one, in either of two ways:

- ``wait`` (a process that runs workflows: a worker, the demo): SQLAlchemy marks the error a
  disconnect, and DBOS retries it (the run pauses through the outage, then goes on).
- ``raise`` (a process that only reads and queues: the board, the Slack bot, ``loopkit.runs``):
  the error becomes :class:`~loopkit.durable.errors.DatabaseUnavailableError` at once, which
  DBOS does not retry, so a page or a command can say "try again" instead of hanging.

:func:`is_database_unavailable` tells such an error from any other, whichever form it takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from loopkit.durable.errors import DatabaseUnavailableError

__all__ = [
    "OnLostDatabase",
    "create_postgres_database",
    "describe_unavailable",
    "is_database_unavailable",
    "postgres_engine",
    "sqlite_engine",
    "unavailable",
]

#: What a database call does when the connection is lost (see the module docstring).
OnLostDatabase = Literal["wait", "raise"]

# SQLSTATE classes of a lost or refused connection: 08 connection exception, 57P01-57P03 the
# server is shutting down or starting up, 53300 too many connections.
_LOST_STATES = ("08", "57P01", "57P02", "57P03", "53300")


def _lost_connection(error: BaseException) -> bool:
    """A psycopg error that means the server is gone or refusing connections (not a bad query,
    a bad password or a missing table)."""
    try:
        import psycopg
    except ImportError:
        return False
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = getattr(error, "sqlstate", None)
    # No SQLSTATE: the client could not reach the server at all (refused, no socket, timeout)
    # or the connection broke mid-statement.
    return state is None or state.startswith(_LOST_STATES)


def is_database_unavailable(error: BaseException) -> bool:
    """True when ``error`` means the database cannot be reached now (an outage: retry later),
    not that a statement was wrong."""
    if isinstance(error, DatabaseUnavailableError):
        return True
    try:
        import sqlalchemy as sa
    except ImportError:
        return False
    if isinstance(error, sa.exc.TimeoutError):  # no pooled connection came free in time
        return True
    if isinstance(error, sa.exc.DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        # A SQLite file whose folder went away (a lost network share) is an outage too.
        return (orig is not None and _lost_connection(orig)) or (
            isinstance(error, sa.exc.OperationalError) and "unable to open database" in str(orig)
        )
    return _lost_connection(error)


def describe_unavailable(error: BaseException) -> str:
    """The driver's reason, one line, for a log line (no statement, no parameters)."""
    if isinstance(error, DatabaseUnavailableError) and error.reason:
        return error.reason
    orig = getattr(error, "orig", None) or error
    text = str(orig).strip().splitlines()
    line = text[0] if text else type(orig).__name__
    return line if len(line) <= 200 else line[:200] + "…"


def unavailable(
    error: BaseException, what: str = "the durable runs' database"
) -> DatabaseUnavailableError:
    """A :class:`DatabaseUnavailableError` for ``error`` (the driver's)."""
    reason = describe_unavailable(error)
    return DatabaseUnavailableError(f"{what} cannot be reached ({reason})", reason=reason)


def postgres_engine(url: str, *, on_lost: OnLostDatabase = "wait") -> Any:
    """A SQLAlchemy engine for DBOS's system database on PostgreSQL: DBOS's own settings (a
    pool of 20 that checks each connection before use, a 10-second connect timeout, idle
    transactions ended after 60 s), and a lost connection named as such (``on_lost``)."""
    import sqlalchemy as sa

    engine = sa.create_engine(
        sa.make_url(url).set(drivername="postgresql+psycopg"),
        connect_args={"application_name": "dbos_transact", "connect_timeout": 10},
        pool_timeout=30,
        max_overflow=0,
        pool_size=20,
        pool_pre_ping=True,
    )

    @sa.event.listens_for(engine, "connect")
    def _idle_timeout(dbapi_conn: Any, _record: Any) -> None:
        # As DBOS sets it on the engines it makes: a frozen client cannot hold locks for long.
        with dbapi_conn.cursor() as cursor:
            cursor.execute("SET idle_in_transaction_session_timeout = 60000")
        dbapi_conn.commit()

    @sa.event.listens_for(engine, "handle_error")
    def _classify(context: Any) -> BaseException | None:
        if not (context.is_disconnect or _lost_connection(context.original_exception)):
            return None
        if on_lost == "raise":
            return unavailable(context.original_exception)
        context.is_disconnect = True
        return None

    return engine


def create_postgres_database(url: str) -> None:
    """Create the database ``url`` names if it does not exist, as DBOS does for the engines it
    makes itself (it does not for one it is given). A failure is left to the first real use,
    which says what is wrong."""
    import sqlalchemy as sa

    target = sa.make_url(url).set(drivername="postgresql+psycopg")
    name = target.database
    if not name:
        return
    engine = sa.create_engine(
        target.set(database="postgres"), connect_args={"connect_timeout": 10}, poolclass=sa.NullPool
    )
    try:
        with engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            found = connection.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).scalar()
            if not found:
                quoted = engine.dialect.identifier_preparer.quote_identifier(name)
                connection.execute(sa.text(f"CREATE DATABASE {quoted}"))
    except Exception:  # no right to create it, the server is down, ...: the launch will say
        pass
    finally:
        engine.dispose()


def sqlite_engine(url: str) -> Any:
    """DBOS's SQLite engine, in WAL mode with ``synchronous=NORMAL``: a committed checkpoint
    survives the process being killed (only a power cut can lose the last ones), and a
    checkpoint costs no disk sync, which is what makes one per model request and tool call
    affordable. The rest is as DBOS sets it up: IMMEDIATE transactions, a long busy timeout,
    foreign keys."""
    import sqlalchemy as sa

    Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url)

    @sa.event.listens_for(engine, "connect")
    def _setup(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    return engine
