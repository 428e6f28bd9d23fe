"""SQLiteSession beyond the shared contract: bad paths, locks, closing, idle connections, and the
file shared with SQLAlchemySession."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from loopkit.sessions import IncompleteStepError, SessionStoreError, SQLiteSession
from loopkit.sessions import sqlite as sqlite_module
from tests.sessions.conftest import call, dump, result, say


async def test_a_folder_is_refused_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(SessionStoreError, match=f"{tmp_path} is a folder") as raised:
        SQLiteSession(tmp_path, "s")
    assert "sessions.db" in str(raised.value)  # says what to give instead


async def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(SessionStoreError, match=f"the folder {tmp_path / 'nope'} does not exist"):
        SQLiteSession(tmp_path / "nope" / "s.db", "s")


async def test_a_file_that_is_not_a_database_is_named_and_left_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n" * 100)
    before = notes.read_bytes()
    session = SQLiteSession(notes, "s")
    with pytest.raises(SessionStoreError, match=f"{notes} is not an SQLite database"):
        await session.get_messages()
    with pytest.raises(SessionStoreError, match="not an SQLite database"):
        await session.add_messages([say("user", "x")])
    await session.close()
    assert notes.read_bytes() == before


async def test_an_unwritable_place_is_a_clear_error() -> None:
    # /proc takes no new files, not even from root.
    session = SQLiteSession("/proc/self/sessions.db", "s")
    with pytest.raises(SessionStoreError, match=r"cannot write /proc/self/sessions\.db") as raised:
        await session.add_messages([say("user", "x")])
    assert "writable" in str(raised.value)
    await session.close()


async def test_an_unwritable_file_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    writer = SQLiteSession(db, "s")
    await writer.add_messages([say("user", "kept")])
    await writer.close()
    if os.geteuid() == 0:  # root ignores file modes, not the immutable attribute
        lock, undo = ["chattr", "+i", str(db)], ["chattr", "-i", str(db)]
    else:
        lock, undo = ["chmod", "444", str(db)], ["chmod", "644", str(db)]
    made = await asyncio.to_thread(subprocess.run, lock, capture_output=True, text=True)
    if made.returncode != 0:  # a container without CAP_LINUX_IMMUTABLE: the /proc test stays
        assert os.geteuid() == 0, made.stderr
        return
    try:
        session = SQLiteSession(db, "s")
        with pytest.raises(SessionStoreError, match=f"cannot write {db}") as raised:
            await session.add_messages([say("user", "x")])
        assert "writable" in str(raised.value)
        await session.close()
    finally:
        await asyncio.to_thread(subprocess.run, undo, check=True)
    async with SQLiteSession(db, "s") as session:
        assert [m.text for m in await session.get_messages()] == ["kept"]


async def test_a_writer_waits_for_another_process_lock_then_says_so(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    session = SQLiteSession(db, "s", busy_timeout=0.2)
    await session.add_messages([say("user", "first")])
    other = sqlite3.connect(db, isolation_level=None)  # another writer, holding the lock
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(SessionStoreError, match=r"stayed locked by another writer for more"):
            await session.add_messages([say("user", "blocked")])
        assert [m.text for m in await session.get_messages()] == ["first"]  # readers never wait
    finally:
        other.execute("ROLLBACK")
        other.close()
    await session.add_messages([say("user", "after")])
    assert [m.text for m in await session.get_messages()] == ["first", "after"]
    await session.close()


async def test_the_file_is_in_wal_mode(tmp_path: Path) -> None:
    async with SQLiteSession(tmp_path / "s.db", "s") as session:
        await session.add_messages([say("user", "x")])
    conn = sqlite3.connect(tmp_path / "s.db")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


async def test_a_closed_session_says_so(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "s.db", "s")
    await session.add_messages([say("user", "x")])
    pending = asyncio.ensure_future(session.add_messages([say("user", "queued before close")]))
    await asyncio.sleep(0)
    await session.close()
    await session.close()  # twice is harmless
    await pending  # a call made before close completes
    with pytest.raises(SessionStoreError, match="is closed"):
        await session.get_messages()
    async with SQLiteSession(tmp_path / "s.db", "s") as again:
        assert [m.text for m in await again.get_messages()] == ["x", "queued before close"]


async def test_an_idle_session_lets_its_thread_and_connection_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "IDLE_SECONDS", 0.05)
    session = SQLiteSession(tmp_path / "s.db", "idle")
    memory = SQLiteSession(":memory:", "idle-memory")
    await session.add_messages([say("user", "one")])
    await memory.add_messages([say("user", "kept in memory")])
    threads = {t.name for t in threading.enumerate()}
    assert "SQLiteSession idle" in threads
    assert "SQLiteSession idle-memory" not in threads  # in memory: calls run at once
    for _ in range(200):
        if "SQLiteSession idle" not in {t.name for t in threading.enumerate()}:
            break
        await asyncio.sleep(0.02)
    assert "SQLiteSession idle" not in {t.name for t in threading.enumerate()}, "thread stayed"
    # The thread and the connection come back on the next call.
    await session.add_messages([say("user", "two")])
    assert [m.text for m in await session.get_messages()] == ["one", "two"]
    await asyncio.sleep(0.2)
    assert [m.text for m in await memory.get_messages()] == ["kept in memory"]
    await session.close()
    await memory.close()
    with pytest.raises(SessionStoreError, match="is closed"):
        await memory.get_messages()


async def test_a_corrupt_row_is_named(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SQLiteSession(db, "s") as session:
        await session.add_messages([say("user", "x")])
    conn = sqlite3.connect(db)
    conn.execute('UPDATE loopkit_messages SET message = \'{"role": "nobody"}\'')
    conn.commit()
    conn.close()
    async with SQLiteSession(db, "s") as session:
        with pytest.raises(SessionStoreError, match=r"SQLiteSession\(.*'s'\): a stored message"):
            await session.get_messages()


async def test_sqlalchemy_session_reads_and_writes_the_same_file(tmp_path: Path) -> None:
    from loopkit.sessions import SQLAlchemySession

    db = tmp_path / "shared.db"
    lite = SQLiteSession(db, "s")
    alchemy = SQLAlchemySession(f"sqlite:///{db}", "s")
    await lite.add_messages([say("user", "from sqlite"), call("c1"), result("c1")])
    await lite.set_metadata({"by": "sqlite"})
    assert [m.role.value for m in await alchemy.get_messages()] == ["user", "assistant", "tool"]
    await alchemy.pop_message()  # leaves c1 open, seen by the other store
    with pytest.raises(IncompleteStepError, match="c1"):
        await lite.add_messages([say("user", "x")])
    await lite.add_messages([result("c1", text="again")])
    await alchemy.set_metadata({"also": "sqlalchemy"})
    assert await lite.get_metadata() == {"by": "sqlite", "also": "sqlalchemy"}
    # Both writing at once, to one session, from one event loop.
    await asyncio.gather(
        *(
            s.add_messages([say("user", f"{n}-{i}"), call(f"{n}-{i}"), result(f"{n}-{i}")])
            for i in range(10)
            for n, s in (("lite", lite), ("alchemy", alchemy))
        )
    )
    history = await lite.get_messages()
    assert dump(history) == dump(await alchemy.get_messages())
    assert len(history) == 3 + 60
    for start in range(3, len(history), 3):
        tag = history[start].text
        assert dump(history[start : start + 3]) == dump([say("user", tag), call(tag), result(tag)])
    await lite.close()
    await alchemy.close()


async def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteSession(tmp_path / "s.db", "s", synchronous="OFF")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="busy_timeout"):
        SQLiteSession(tmp_path / "s.db", "s", busy_timeout=-1)
    with pytest.raises(TypeError, match="path"):
        SQLiteSession(42, "s")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 255"):
        SQLiteSession(tmp_path / "s.db", "x" * 256)
    with pytest.raises(ValueError, match="without NUL"):
        SQLiteSession(tmp_path / "s.db", "a\x00b")
    with pytest.raises(ValueError, match="without NUL"):
        SQLiteSession(tmp_path / "s.db", "a\udc80")
    assert (
        repr(SQLiteSession(tmp_path / "s.db", "s"))
        == f"SQLiteSession({str(tmp_path / 's.db')!r}, 's')"
    )
