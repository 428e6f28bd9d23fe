"""``InMemorySession``: a session in a list, for tests and short-lived programs."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions._rows import SessionStoreError
from loopkit.sessions.protocol import (
    check_complete,
    open_calls_of,
    trim_to_whole_steps,
)

__all__ = ["InMemorySession"]


class InMemorySession:
    """A :class:`~loopkit.sessions.Session` kept in memory (gone with the process).

    Messages are copied in and out, so a caller changing a message it stored or read does not
    change the session.
    """

    def __init__(self, session_id: str = "default") -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
        self._id = session_id
        self._messages: list[ChatMessage] = []
        self._metadata: dict[str, Any] = {}
        # the calls the stored history leaves open, kept up to date so that an append costs
        # what the batch costs, not the whole history (recomputed only after a pop)
        self._open: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def session_id(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"InMemorySession({self._id!r}, {len(self._messages)} messages)"

    async def __aenter__(self) -> InMemorySession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Forget the messages; later calls raise :class:`SessionStoreError`, as a stored
        session's do. Closing twice is harmless."""
        async with self._lock:
            self._closed = True
            self._messages, self._metadata, self._open = [], {}, {}

    def _check_open(self) -> None:
        if self._closed:
            raise SessionStoreError(f"InMemorySession({self._id!r}) is closed")

    async def get_messages(self, limit: int | None = None) -> list[ChatMessage]:
        self._check_open()
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit}")
        async with self._lock:
            chosen = self._messages if limit is None else self._messages[-limit:] if limit else []
            return trim_to_whole_steps([m.model_copy(deep=True) for m in chosen])

    async def add_messages(self, messages: Sequence[ChatMessage]) -> None:
        self._check_open()
        batch = [m.model_copy(deep=True) for m in messages]
        async with self._lock:
            check_complete(batch, self._open)  # raises before anything is stored
            self._messages.extend(batch)
            self._open = {}  # a complete batch answered every open call

    async def pop_message(self) -> ChatMessage | None:
        self._check_open()
        async with self._lock:
            if not self._messages:
                return None
            popped = self._messages.pop()
            self._open = open_calls_of(self._messages)
            return popped

    async def clear(self) -> None:
        self._check_open()
        async with self._lock:
            self._messages.clear()
            self._metadata.clear()
            self._open = {}

    async def get_metadata(self) -> dict[str, Any]:
        self._check_open()
        async with self._lock:
            return copy.deepcopy(self._metadata)

    async def set_metadata(self, values: Mapping[str, Any]) -> None:
        try:  # the same values a stored session accepts: JSON only
            data = json.loads(json.dumps(dict(values)))
        except (TypeError, ValueError) as e:
            raise ValueError(f"session metadata must be JSON-serialisable: {e}") from None
        self._check_open()
        async with self._lock:
            for key, value in data.items():
                if value is None:
                    self._metadata.pop(key, None)
                else:
                    self._metadata[key] = value
