"""Sessions by id for the protocol servers: a thread (AG-UI), a context or a task (A2A) names
a loopkit :class:`~loopkit.sessions.Session`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from loopkit.sessions.memory import InMemorySession

if TYPE_CHECKING:
    from loopkit.sessions.protocol import Session

__all__ = ["SessionFactory", "memory_sessions", "open_session"]

#: Opens a session by id: ``sessions(session_id) -> Session`` (sync or async), e.g.
#: ``lambda sid: SQLiteSession("chats.db", sid)``.
SessionFactory = Callable[[str], "Session | Awaitable[Session]"]


def memory_sessions() -> SessionFactory:
    """A factory of in-memory sessions, one per id, kept for the life of the factory (gone
    with the process)."""
    made: dict[str, InMemorySession] = {}

    def open_one(session_id: str) -> InMemorySession:
        session = made.get(session_id)
        if session is None:
            session = made[session_id] = InMemorySession(session_id)
        return session

    return open_one


async def open_session(factory: SessionFactory, session_id: str) -> Session:
    """``factory(session_id)``, awaited when it gives an awaitable."""
    made = factory(session_id)
    return await made if inspect.isawaitable(made) else made
