"""Sessions: conversations that outlive a run. See :class:`Session`.

Stores: :class:`InMemorySession` (a list), :class:`SQLiteSession` (one SQLite file, the embedded
default, standard library only) and :class:`SQLAlchemySession` (any SQLAlchemy URL, e.g.
PostgreSQL; needs ``pip install 'loopkit[sql]'``, and is imported only when first used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports
from loopkit.sessions._rows import SessionStoreError
from loopkit.sessions.memory import InMemorySession
from loopkit.sessions.protocol import (
    IncompleteStepError,
    Session,
    check_complete,
    open_calls_of,
    trim_to_whole_steps,
)
from loopkit.sessions.sqlite import SQLiteSession

__all__ = [
    "InMemorySession",
    "IncompleteStepError",
    "SQLAlchemySession",
    "SQLiteSession",
    "Session",
    "SessionStoreError",
    "check_complete",
    "open_calls_of",
    "trim_to_whole_steps",
]

# SQLAlchemy is an optional extra: loaded on first use of the name, never by `import loopkit`.
__getattr__, __dir__ = lazy_exports(
    __name__, {"SQLAlchemySession": "loopkit.sessions.sqlalchemy_store"}
)

if TYPE_CHECKING:
    from loopkit.sessions.sqlalchemy_store import SQLAlchemySession
