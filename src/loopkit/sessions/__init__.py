"""Sessions: conversations that outlive a run. See :class:`Session`."""

from __future__ import annotations

from loopkit.sessions.memory import InMemorySession
from loopkit.sessions.protocol import (
    IncompleteStepError,
    Session,
    check_complete,
    open_calls_of,
    trim_to_whole_steps,
)

__all__ = [
    "InMemorySession",
    "IncompleteStepError",
    "Session",
    "check_complete",
    "open_calls_of",
    "trim_to_whole_steps",
]
