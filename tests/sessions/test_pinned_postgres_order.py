"""The SQLAlchemy store reads a history in order on PostgreSQL after deletes and re-inserts
(issue 21: an outside reviewer dropped the ``ORDER BY`` without any test noticing).

PostgreSQL returns rows without an ``ORDER BY`` in whatever order the plan reads them: a
sequential or bitmap scan reads the table's pages in physical order, and a row inserted after
a ``VACUUM`` freed space earlier in the table lands before older rows. Each test builds exactly
that layout in a fresh database of the private cluster, and reads with index scans off (the plan
PostgreSQL picks for a small table, or a bitmap scan, which also reads in physical order), so
the only thing that can put the rows in order is the query itself.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Iterator

import pytest

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions import IncompleteStepError
from tests.installed import import_or_unavailable

from .conftest import call, result, say

sa = import_or_unavailable("sqlalchemy", install="loopkit[sql]")

from loopkit.sessions import SQLAlchemySession  # noqa: E402  (needs sqlalchemy)

# About 1.5 kB of text that does not compress: five rows to an 8 kB page, stored inline.
_RANDOM = random.Random(21)


def bulky(label: str) -> str:
    return label + " " + "".join(_RANDOM.choices(string.ascii_letters, k=1500))


@pytest.fixture
def database(postgres_url: str) -> Iterator[str]:
    """A database of its own (the messages table's pages hold only this test's rows)."""
    name = f"pin_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    url = sa.engine.make_url(postgres_url).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def physical_order_engine(url: str) -> sa.Engine:
    """An engine whose plans read the table in physical order (no index scans)."""
    options = "-c enable_indexscan=off -c enable_indexonlyscan=off"
    return sa.create_engine(url, connect_args={"options": options})


def vacuum(engine: sa.Engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM loopkit_messages"))


def physical_seqs(engine: sa.Engine, session_id: str) -> list[int]:
    """The session's message numbers in the order the table holds them (no ORDER BY)."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT seq FROM loopkit_messages WHERE session_id = :sid"),
            {"sid": session_id},
        )
        return [row[0] for row in rows]


def texts(messages: list[ChatMessage]) -> list[str]:
    return [m.text.split(" ")[0] for m in messages]


async def test_history_reads_in_order_after_deletes_and_reinserts(database: str) -> None:
    engine = physical_order_engine(database)
    filler = SQLAlchemySession(session_id="filler", engine=engine)
    history = SQLAlchemySession(session_id="history", engine=engine)
    await filler.add_messages([say("user", bulky(f"f{i}")) for i in range(12)])  # pages 0-2
    await history.add_messages([say("user", bulky(f"m{i}")) for i in range(5)])  # after them
    await filler.clear()
    vacuum(engine)  # the filler's pages are free again: the next rows land there
    await history.add_messages([say("assistant", bulky(f"m{i}")) for i in range(5, 10)])
    # pop the last two and write them again (a retried step)
    assert texts([m for m in [await history.pop_message(), await history.pop_message()] if m]) == [
        "m9",
        "m8",
    ]
    vacuum(engine)
    await history.add_messages([say("assistant", bulky("m8")), say("assistant", bulky("m9"))])

    stored = physical_seqs(engine, "history")
    assert sorted(stored) == list(range(10))
    assert stored != sorted(stored), "the layout this test needs did not happen: " + str(stored)

    expected = [f"m{i}" for i in range(10)]
    assert texts(await history.get_messages()) == expected
    for limit in (1, 3, 7, 10, 50):
        assert texts(await history.get_messages(limit)) == expected[-limit:]
    # another object on the same session (a new process would be one) reads the same
    again = SQLAlchemySession(session_id="history", engine=engine)
    assert texts(await again.get_messages()) == expected
    for session in (filler, history, again):
        await session.close()
    engine.dispose()


async def test_a_pop_after_reinserts_answers_the_open_calls_in_order(database: str) -> None:
    """Popping a tool result reads the earlier messages newest first to find the calls it left
    open: with the rows out of physical order it must still find the right ones."""
    engine = physical_order_engine(database)
    filler = SQLAlchemySession(session_id="filler", engine=engine)
    history = SQLAlchemySession(session_id="history", engine=engine)
    await filler.add_messages([say("user", bulky(f"f{i}")) for i in range(12)])
    await history.add_messages([say("user", bulky("task")), call("a"), result("a")])
    await filler.clear()
    vacuum(engine)
    await history.add_messages([call("b", "c"), result("b", "c")])
    assert physical_seqs(engine, "history") != sorted(physical_seqs(engine, "history"))
    popped = await history.pop_message()
    assert popped is not None and [r.call_id for r in popped.function_results] == ["b", "c"]
    # b and c are open again: the next batch must answer them before anything else
    with pytest.raises(IncompleteStepError, match=r"read_file \(b\), read_file \(c\)"):
        await history.add_messages([say("user", "something else")])
    await history.add_messages([result("b", "c", text="again")])
    assert [m.role for m in await history.get_messages()] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    for session in (filler, history):
        await session.close()
    engine.dispose()


async def test_a_pop_reads_the_earlier_messages_newest_first(database: str) -> None:
    """A pop finds the calls it leaves open in the messages before it, newest first, up to the
    last one after which nothing was open: read oldest first, it would stop at the task and
    leave ``c`` answered."""
    engine = physical_order_engine(database)
    history = SQLAlchemySession(session_id="history", engine=engine)
    await history.add_messages([say("user", "task"), call("b", "c"), result("b"), result("c")])
    popped = await history.pop_message()
    assert popped is not None and [r.call_id for r in popped.function_results] == ["c"]
    with pytest.raises(IncompleteStepError, match=r"without results: read_file \(c\)"):
        await history.add_messages([say("user", "something else")])
    with pytest.raises(IncompleteStepError, match="answers call 'b', which was never made"):
        await history.add_messages([result("b")])  # b was answered already
    await history.add_messages([result("c", text="again")])
    [last] = (await history.get_messages())[-1:]
    assert [(r.call_id, r.result) for r in last.function_results] == [("c", "again c")]
    await history.close()
    engine.dispose()
