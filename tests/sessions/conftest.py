"""The stores the conformance suite runs against, and message builders.

``store`` is parametrized over every store: in memory, SQLite, SQLAlchemy on SQLite and
SQLAlchemy on a real PostgreSQL (a private cluster, started once per test session on first
use). ``persistent_store`` is the same without the in-memory one (for restarts and processes).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
)
from loopkit.sessions import InMemorySession, Session, SQLiteSession
from tests.installed import import_or_unavailable
from tests.sessions.postgres import private_cluster

PERSISTENT = ["sqlite", "sqlalchemy-sqlite", "sqlalchemy-postgresql"]
STORES = ["memory", *PERSISTENT]


def call(*call_ids: str, name: str = "read_file") -> ChatMessage:
    """An assistant message calling ``name`` once per id."""
    return ChatMessage(
        role=ChatRole.ASSISTANT,
        contents=[FunctionCallContent(call_id=c, name=name, arguments={"n": c}) for c in call_ids],
    )


def result(*call_ids: str, text: str = "ok") -> ChatMessage:
    """A tool message answering each id."""
    return ChatMessage(
        role=ChatRole.TOOL,
        contents=[FunctionResultContent(call_id=c, result=f"{text} {c}") for c in call_ids],
    )


def say(role: str, text: str) -> ChatMessage:
    return ChatMessage.from_text(role, text)


@dataclass
class Store:
    """One store under test: opens session objects on the same storage."""

    kind: str
    opener: Callable[[str], Session]
    #: Python source of an expression opening a session id in another process (None: memory).
    source: Callable[[str], str] | None
    prefix: str = field(default_factory=lambda: uuid.uuid4().hex[:8] + "-")
    opened: list[Session] = field(default_factory=list)

    def session(self, name: str = "s") -> Session:
        """A new session object for ``name`` (the same conversation each time on a stored
        store; closed after the test)."""
        session = self.opener(self.id(name))
        self.opened.append(session)
        return session

    def id(self, name: str) -> str:
        return self.prefix + name

    def open_source(self, name: str) -> str:
        assert self.source is not None, f"{self.kind} does not outlive its process"
        return self.source(self.id(name))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with private_cluster() as url:
        yield url


def _make_store(kind: str, request: pytest.FixtureRequest, folder: Path) -> Store:
    if kind == "memory":
        # One object per id: "another object on the same session" is the same list here.
        sessions: dict[str, InMemorySession] = {}
        return Store(kind, lambda sid: sessions.setdefault(sid, InMemorySession(sid)), None)
    if kind == "sqlite":
        path = str(folder / "sessions.db")
        return Store(
            kind,
            lambda sid: SQLiteSession(path, sid),
            lambda sid: f"SQLiteSession({path!r}, {sid!r})",
        )
    import_or_unavailable("sqlalchemy", install="loopkit[sql]")
    from loopkit.sessions import SQLAlchemySession

    if kind == "sqlalchemy-sqlite":
        url = f"sqlite:///{folder / 'sessions.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    return Store(
        kind,
        lambda sid: SQLAlchemySession(url, sid),
        lambda sid: f"SQLAlchemySession({url!r}, {sid!r})",
    )


async def _close_all(store: Store) -> None:
    for session in store.opened:
        close = getattr(session, "close", None)
        if close is not None:
            await close()


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    opened = _make_store(request.param, request, tmp_path)
    yield opened
    await _close_all(opened)


@pytest.fixture(params=PERSISTENT)
async def persistent_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    opened = _make_store(request.param, request, tmp_path)
    yield opened
    await _close_all(opened)


CHILD_PRELUDE = """
import asyncio, json, sys
from loopkit.abstractions.content import ChatMessage
from loopkit.sessions import SQLiteSession
try:
    from loopkit.sessions import SQLAlchemySession
except ImportError:
    pass
"""


def child_env() -> dict[str, str]:
    """The environment for a child Python that imports this worktree's loopkit."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def child_command(code: str) -> list[str]:
    return [sys.executable, "-c", CHILD_PRELUDE + code]


def dump(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]
