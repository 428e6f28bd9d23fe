"""The ``Session`` protocol: a conversation that outlives one run (and, stored, one process).

Small on purpose, in the spirit of the OpenAI Agents SDK's session: read, append, pop, clear,
plus metadata. An :class:`~loopkit.agents.Agent` reads a session's messages before a run and
appends each complete step as the run makes it, so a run that dies leaves the session consistent.

The one rule every store keeps: **a function call is never stored without its result**. A batch
given to :meth:`Session.add_messages` must answer every call it contains (or that the stored
history left open); :func:`check_complete` says what is wrong otherwise. Reading with a limit
never starts with a result whose call was cut off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self, runtime_checkable

from loopkit.abstractions.content import (
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
)

__all__ = [
    "IncompleteStepError",
    "Session",
    "check_complete",
    "open_calls_of",
    "trim_to_whole_steps",
]


class IncompleteStepError(ValueError):
    """Messages to store leave a function call without its result (or a result without its
    call)."""


@runtime_checkable
class Session(Protocol):
    """A stored conversation. Implementations: :class:`~loopkit.sessions.InMemorySession`,
    :class:`~loopkit.sessions.SQLiteSession`, :class:`~loopkit.sessions.SQLAlchemySession`.

    A session holds resources (a connection, a worker thread, an engine): a long-lived program
    closes each one it opened, with ``await session.close()`` or ``async with``::

        async with SQLiteSession("chats.db", "user-42") as session:
            await agent.run("Hello", session=session)
    """

    @property
    def session_id(self) -> str:
        """The conversation's id (unique within its store)."""
        ...

    async def get_messages(self, limit: int | None = None) -> list[ChatMessage]:
        """The stored messages, oldest first; with ``limit``, at most the last ``limit`` of them
        (fewer when the cut would split a call from its result)."""
        ...

    async def add_messages(self, messages: Sequence[ChatMessage]) -> None:
        """Append ``messages`` atomically (all or none); raises :class:`IncompleteStepError`
        when they would leave a call without its result."""
        ...

    async def pop_message(self) -> ChatMessage | None:
        """Remove and return the newest message (None when empty). Popping the tool message
        that answered some calls leaves them open: the next :meth:`add_messages` must answer
        them (or pop the calls too)."""
        ...

    async def clear(self) -> None:
        """Remove every message and the metadata."""
        ...

    async def get_metadata(self) -> dict[str, Any]:
        """The session's metadata (JSON values)."""
        ...

    async def set_metadata(self, values: Mapping[str, Any]) -> None:
        """Merge ``values`` (JSON-serialisable) into the metadata; a ``None`` value removes a
        key."""
        ...

    async def close(self) -> None:
        """Release what the store holds (a connection, a thread, an engine it created) after
        the calls already made; later calls raise
        :class:`~loopkit.sessions.SessionStoreError`. Closing twice is harmless. The stored
        conversation stays stored: close ends this object's use of it."""
        ...

    async def __aenter__(self) -> Self:
        """``async with SQLiteSession(...) as session:`` closes it when the block ends."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the session (see :meth:`close`)."""
        ...


def _open_calls(messages: Sequence[ChatMessage], open_calls: dict[str, str]) -> dict[str, str]:
    """The calls (id -> tool name) still unanswered after ``messages``, starting from
    ``open_calls``; raises on a result that answers no open call."""
    pending = dict(open_calls)
    for index, message in enumerate(messages):
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                pending[content.call_id] = content.name
            elif isinstance(content, FunctionResultContent):
                if content.call_id not in pending:
                    raise IncompleteStepError(
                        f"message {index} answers call {content.call_id!r}, which was never "
                        "made (or already answered)"
                    )
                del pending[content.call_id]
    return pending


def check_complete(
    messages: Sequence[ChatMessage], open_calls: Mapping[str, str] | None = None
) -> None:
    """Raise :class:`IncompleteStepError` unless ``messages`` (after a history that left
    ``open_calls`` unanswered) answer every call and answer only calls that were made."""
    pending = _open_calls(messages, dict(open_calls or {}))
    if pending:
        shown = ", ".join(f"{name} ({call_id})" for call_id, name in pending.items())
        raise IncompleteStepError(
            f"the messages leave calls without results: {shown}; store a call together with "
            "the message that answers it"
        )


def open_calls_of(messages: Sequence[ChatMessage]) -> dict[str, str]:
    """The calls (id -> name) a stored history leaves unanswered (after a ``pop_message``)."""
    return _open_calls(messages, {})


def trim_to_whole_steps(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` without leading results whose calls are not among them (what a ``limit``
    cut off)."""
    made: set[str] = set()
    start = 0
    for index, message in enumerate(messages):
        orphan = any(
            isinstance(c, FunctionResultContent) and c.call_id not in made for c in message.contents
        )
        if orphan:
            start = index + 1
            made.clear()
            continue
        made.update(c.call_id for c in message.contents if isinstance(c, FunctionCallContent))
    return messages[start:]
