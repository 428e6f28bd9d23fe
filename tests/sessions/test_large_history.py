"""A 10,000-message history read with a limit costs what the limit costs, not what the history
costs. Measured as work, never as time: SQLite's virtual-machine steps and statements (the
stores on SQLite), PostgreSQL's own account of the rows each plan node produced
(``EXPLAIN ANALYZE`` of the very statement the store sent)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions import Session
from tests.sessions.conftest import Store, call, dump, result, say
from tests.sessions.postgres import fresh_database

LIMIT = 20


@pytest.fixture
def postgres_url(postgres_url: str) -> Iterator[str]:
    """A database of this module's tests' own (the store fixture reads ``postgres_url``): the
    plan test counts the rows of whole tables, which other tests fill in the shared one."""
    with fresh_database(postgres_url) as url:
        yield url


def history(size: int) -> list[ChatMessage]:
    """``size`` messages of whole steps: a user turn, two calls and their results, an answer."""
    messages: list[ChatMessage] = []
    step = 0
    while len(messages) < size:
        tag = f"s{step}"
        messages += [say("user", tag), call(f"{tag}a", f"{tag}b"), result(f"{tag}a", f"{tag}b")]
        messages.append(say("assistant", f"{tag} " + "x" * 200))
        step += 1
    return messages[:size] if size % 4 == 0 else messages


class SQLiteWork:
    """Counts what every new SQLite connection does from now on: virtual-machine steps (in
    units of 10) and statements. The connection is the store's real one; only the counters
    are added, through sqlite3's own hooks."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = 0
        self.statements: list[str] = []
        real = sqlite3.connect

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real(*args, **kwargs)
            conn.set_progress_handler(self._tick, 10)
            conn.set_trace_callback(self.statements.append)
            return conn

        # Both names: SQLiteSession calls sqlite3.connect, SQLAlchemy sqlite3.dbapi2.connect.
        monkeypatch.setattr(sqlite3, "connect", connect)
        monkeypatch.setattr(sqlite3.dbapi2, "connect", connect)

    def _tick(self) -> int:
        self.steps += 1
        return 0  # 0: carry on

    def reset(self) -> None:
        self.steps, self.statements[:] = 0, []


async def read_work(store: Store, name: str, work: SQLiteWork) -> tuple[list[ChatMessage], int]:
    reader = store.session(name)  # a new object: its connection opens under the counters
    await reader.get_messages(1)  # connected, tables checked
    work.reset()
    got = await reader.get_messages(LIMIT)
    selects = [s for s in work.statements if "SELECT" in s.upper() and "loopkit_messages" in s]
    assert len(selects) == 1, work.statements  # one statement reads the messages
    return got, work.steps


def plan_rows(plan: dict[str, Any]) -> Iterator[tuple[str, int]]:
    """(node, rows it produced plus rows it read and threw away), for each plan node."""
    touched = (
        plan["Actual Rows"]
        + plan.get("Rows Removed by Filter", 0)
        + plan.get("Rows Removed by Index Recheck", 0)
    )
    name = f"{plan['Node Type']} {plan.get('Relation Name', plan.get('Index Name', ''))}"
    yield name.strip(), touched * plan.get("Actual Loops", 1)
    for child in plan.get("Plans", []):
        yield from plan_rows(child)


async def postgres_rows_read(session: Session) -> list[tuple[str, int]]:
    """Run ``get_messages(LIMIT)``, then ask PostgreSQL to execute the statement it sent again
    under ``EXPLAIN ANALYZE``: each plan node with the rows it really produced."""
    from sqlalchemy import event

    engine = session.engine  # type: ignore[attr-defined]
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "loopkit_messages" in statement and statement.lstrip().upper().startswith("SELECT"):
            sent.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        await session.get_messages(LIMIT)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert len(sent) == 1, sent
    statement, parameters = sent[0]
    with engine.connect() as conn:
        raw = conn.exec_driver_sql(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters
        ).scalar_one()
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return list(plan_rows(plan))


async def test_a_limit_reads_the_last_rows_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    big, small = history(10_000), history(4 * LIMIT)
    work = SQLiteWork(monkeypatch) if store.kind in ("sqlite", "sqlalchemy-sqlite") else None
    await store.session("big").add_messages(big)
    await store.session("small").add_messages(small)
    await store.session("other").add_messages(history(400))  # rows of another session around

    if work is not None:
        got_small, small_steps = await read_work(store, "small", work)
        got_big, big_steps = await read_work(store, "big", work)
        # The same work for 80 and for 10,000 messages (a scan or a sort of the session's
        # rows would cost hundreds of times more).
        assert big_steps <= 1.5 * small_steps + 10, (big_steps, small_steps)
    else:
        got_big = await store.session("big").get_messages(LIMIT)
        got_small = await store.session("small").get_messages(LIMIT)
    assert dump(got_big) == dump(big[-LIMIT:]) and dump(got_small) == dump(small[-LIMIT:])

    if store.kind == "sqlalchemy-postgresql":
        nodes = await postgres_rows_read(store.session("big"))
        assert all(rows <= LIMIT for _, rows in nodes), nodes  # no node touched more rows
    assert len(await store.session("big").get_messages()) == 10_000
