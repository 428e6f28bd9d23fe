"""SQLAlchemySession beyond the shared contract: an optional extra loaded only when used, URLs
and drivers, shared engines, closing, and errors that never show a password."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.sessions import SessionStoreError
from tests.installed import import_or_unavailable
from tests.sessions.conftest import child_env, say

sa = import_or_unavailable("sqlalchemy", install="loopkit[sql]")
from loopkit.sessions import SQLAlchemySession  # noqa: E402 - after the extra's check


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_loopkit_and_its_sessions_does_not_load_sqlalchemy() -> None:
    out = run_python(
        "import sys, loopkit, loopkit.sessions\n"
        "from loopkit.sessions import InMemorySession, SQLiteSession, Session\n"
        "print('sqlalchemy' in sys.modules)\n"
        "loopkit.sessions.SQLAlchemySession\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    assert out.splitlines() == ["False", "True"]


def test_without_the_extra_the_error_names_it() -> None:
    # SQLAlchemy is installed here; the child blocks its import (sys.modules[...] = None makes
    # `import sqlalchemy` fail as it does on a machine without the extra).
    out = run_python(
        "import sys\n"
        "sys.modules['sqlalchemy'] = None\n"
        "from loopkit.sessions import SQLiteSession\n"
        "try:\n"
        "    from loopkit.sessions import SQLAlchemySession\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    assert "SQLAlchemySession needs SQLAlchemy" in out
    assert "pip install 'loopkit[sql]'" in out


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "is not a SQLAlchemy URL"),
        ("nosuchdb://u:hunter2@host/db", "has no database driver 'nosuchdb'"),
        ("postgresql+asyncpg://u:hunter2@host/db", "asyncio driver"),
        ("sqlite+aiosqlite:///x.db", "asyncio driver"),
    ],
)
def test_bad_urls_are_clear_errors(url: str, expected: str) -> None:
    with pytest.raises(SessionStoreError, match=expected) as raised:
        SQLAlchemySession(url, "s")
    assert "hunter2" not in str(raised.value)


def test_a_missing_driver_names_the_extra() -> None:
    candidates = {
        "mssql+pymssql": "pymssql",
        "mysql+pymysql": "pymysql",
        "oracle+oracledb": "oracledb",
    }
    missing = [
        url for url, module in candidates.items() if importlib.util.find_spec(module) is None
    ]
    assert missing, "every candidate driver is installed; pick another for this test"
    with pytest.raises(SessionStoreError, match="driver is not installed") as raised:
        SQLAlchemySession(f"{missing[0]}://u:hunter2@host/db", "s")
    assert "loopkit[sql]" in str(raised.value) and "hunter2" not in str(raised.value)


async def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://app:hunter2@/db?host={tmp_path}/no-server&port=5999"
    session = SQLAlchemySession(url, "s")
    assert "hunter2" not in repr(session) and "***" in repr(session)
    with pytest.raises(
        SessionStoreError, match=r"session store postgresql\+psycopg://app:\*\*\*@"
    ) as raised:
        await session.get_messages()
    assert "hunter2" not in str(raised.value)
    assert str(tmp_path) in str(raised.value)  # the server it could not reach
    await session.close()


async def test_plain_postgresql_urls_use_psycopg_3(postgres_url: str) -> None:
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    session = SQLAlchemySession(plain, "plain-url")
    assert session.engine.url.drivername == "postgresql+psycopg"
    await session.add_messages([say("user", "hi")])
    assert [m.text for m in await session.get_messages()] == ["hi"]
    await session.clear()
    await session.close()


async def test_tables_managed_elsewhere(tmp_path: Path) -> None:
    from loopkit.sessions.sqlalchemy_store import session_tables

    url = f"sqlite:///{tmp_path / 'app.db'}"
    session = SQLAlchemySession(url, "s", create_tables=False)
    with pytest.raises(SessionStoreError, match=r"no such table.*create_tables=False"):
        await session.add_messages([say("user", "x")])
    session_tables.create_all(session.engine)  # what a migration would do
    await session.add_messages([say("user", "x")])
    assert len(await session.get_messages()) == 1
    await session.close()


async def test_sessions_sharing_an_engine(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'shared.db'}")
    a = SQLAlchemySession(session_id="a", engine=engine)
    b = SQLAlchemySession(session_id="b", engine=engine)
    await a.add_messages([say("user", "for a")])
    await a.close()  # a shared engine stays open for the others
    await b.add_messages([say("user", "for b")])
    assert [m.text for m in await b.get_messages()] == ["for b"]
    with pytest.raises(SessionStoreError, match="is closed"):
        await a.get_messages()
    async with SQLAlchemySession(session_id="a", engine=engine) as again:
        assert [m.text for m in await again.get_messages()] == ["for a"]
    await b.close()
    engine.dispose()


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    with pytest.raises(ValueError, match="exactly one"):
        SQLAlchemySession(session_id="s")
    with pytest.raises(ValueError, match="exactly one"):
        SQLAlchemySession(url, "s", engine=sa.create_engine(url))
    with pytest.raises(TypeError, match="synchronous sqlalchemy Engine"):
        SQLAlchemySession(session_id="s", engine="sqlite://")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session_id"):
        SQLAlchemySession(url, "")
    with pytest.raises(ValueError, match="at most 255"):
        SQLAlchemySession(url, "x" * 256)
