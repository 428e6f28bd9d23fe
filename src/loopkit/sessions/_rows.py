"""What the stored sessions (SQLite, SQLAlchemy) share: the tables, a message as one JSON row,
metadata as JSON, the calls a pop leaves open, and the error a store raises.

Both stores use the same two tables, so a file written by :class:`SQLiteSession` reads with
``SQLAlchemySession("sqlite:///that-file", ...)`` and back:

- ``loopkit_sessions``: one row per session: ``session_id`` (primary key, at most 255
  characters), ``metadata`` (JSON object), ``message_count``, ``open_calls`` (JSON object, call
  id -> tool name: the calls a ``pop_message`` left unanswered, so a new batch is checked
  without reading the history), ``created_at``, ``updated_at`` (Unix seconds). Every write
  locks this row first.
- ``loopkit_messages``: one row per message: ``session_id`` and ``seq`` (0, 1, 2, ... within the
  session; together the primary key), ``message`` (the ``ChatMessage`` as JSON), ``complete``
  (no call is open after this message), ``created_at``.

Numbering messages per session makes "the last N" a range of the primary key
(``seq >= message_count - N``): the database reads N rows whatever the history's length and
whatever its planner believes about the data.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from loopkit.abstractions.content import ChatMessage, FunctionCallContent, FunctionResultContent
from loopkit.errors import LoopkitError
from loopkit.sessions.protocol import open_calls_of

SESSIONS_TABLE = "loopkit_sessions"
MESSAGES_TABLE = "loopkit_messages"
MAX_SESSION_ID = 255


class SessionStoreError(LoopkitError):
    """A stored session cannot be read or written: the store (a file, a database) is missing,
    unreadable, unwritable, locked too long, or holds something that is not a session."""


def checked_session_id(session_id: object) -> str:
    """``session_id`` when a store can keep it (a non-empty string of at most 255 characters,
    valid UTF-8, without NUL), else a ``ValueError`` saying what is wrong."""
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    if len(session_id) > MAX_SESSION_ID:
        raise ValueError(
            f"session_id must be at most {MAX_SESSION_ID} characters, got {len(session_id)}"
        )
    if "\x00" in session_id or _unencodable(session_id):
        raise ValueError(f"session_id must be UTF-8 text without NUL, got {session_id!r}")
    return session_id


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def dump_message(message: ChatMessage) -> str:
    """``message`` as one JSON text (the row's ``message`` column)."""
    try:
        return message.model_dump_json()
    except PydanticSerializationError:
        # Text with lone surrogates (bytes decoded with errors="surrogateescape") is a valid
        # ``str`` but not UTF-8: json escapes them as \\udXXX, which load_message reads back.
        return json.dumps(message.model_dump(mode="json"))


def load_message(text: str, where: str) -> ChatMessage:
    """The ``ChatMessage`` a row holds; ``where`` names the row in the error if it holds none."""
    try:
        return ChatMessage.model_validate_json(text)
    except ValidationError:
        pass
    try:  # pydantic's JSON parser refuses \\udXXX escapes of lone surrogates; json does not
        return ChatMessage.model_validate(json.loads(text))
    except (ValueError, TypeError) as error:
        raise SessionStoreError(f"{where} does not hold a chat message: {error}") from None


@functools.cache
def _message_list() -> TypeAdapter[list[ChatMessage]]:
    return TypeAdapter(list[ChatMessage])


def load_messages(texts: Sequence[str], where: str) -> list[ChatMessage]:
    """The messages of several rows, validated in one call (a third faster than row by row);
    row by row when that fails, to read surrogates and to name a bad row."""
    if not texts:
        return []
    try:
        return _message_list().validate_json("[" + ",".join(texts) + "]")
    except ValidationError:
        return [load_message(text, where) for text in texts]


def json_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as plain JSON data (what metadata may hold), or a ``ValueError``."""
    try:
        data: dict[str, Any] = json.loads(json.dumps(dict(values)))
    except (TypeError, ValueError) as e:
        raise ValueError(f"session metadata must be JSON-serialisable: {e}") from None
    return data


def merged(metadata: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` updated with ``values``; a ``None`` value removes its key."""
    result = dict(metadata)
    for key, value in values.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def dump_json(value: dict[str, Any]) -> str:
    """A JSON column's text (ASCII, so any string survives any database's encoding)."""
    return json.dumps(value, separators=(",", ":"))


def load_json(text: str | None, where: str) -> dict[str, Any]:
    """A JSON object column (``{}`` for a missing row)."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SessionStoreError(f"{where} is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise SessionStoreError(f"{where} is not a JSON object: {text[:80]!r}")
    return value


def complete_flags(batch: Sequence[ChatMessage], open_before: Mapping[str, str]) -> list[bool]:
    """For each message of ``batch`` (already checked), whether no call is open after it (the
    ``complete`` column). A ``pop_message`` reads back only to the last complete row to know
    which calls it leaves open, never the whole history."""
    pending = set(open_before)
    flags = []
    for message in batch:
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                pending.add(content.call_id)
            elif isinstance(content, FunctionResultContent):
                pending.discard(content.call_id)
        flags.append(not pending)
    return flags


def open_after_pop(tail_newest_first: Iterable[tuple[str, bool]], where: str) -> dict[str, str]:
    """The calls left open once the newest message is removed, from the rows before it (their
    ``message`` text and ``complete`` flag), newest first; reads only up to the first complete
    row (nothing is open after it), then replays the rest as ``open_calls_of`` does."""
    tail: list[ChatMessage] = []
    for text, complete in tail_newest_first:
        if complete:
            break
        tail.append(load_message(text, where))
    tail.reverse()
    return open_calls_of(tail)
