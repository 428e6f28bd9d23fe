"""What the stored sessions (SQLite, SQLAlchemy) share: the tables, a message as one JSON row,
metadata as JSON, the calls a pop re-opens, and the error a store raises.

Both stores use the same two tables, so a file written by :class:`SQLiteSession` reads with
``SQLAlchemySession("sqlite:///that-file", ...)`` and back:

- ``loopkit_sessions``: one row per session: ``session_id`` (primary key, at most 255
  characters), ``metadata`` (JSON object), ``open_calls`` (JSON object, call id -> tool name: the
  calls a ``pop_message`` left unanswered, so a new batch is checked without reading the
  history), ``created_at``, ``updated_at`` (Unix seconds).
- ``loopkit_messages``: one row per message, in order of ``id``: ``session_id``, ``message``
  (the ``ChatMessage`` as JSON), ``created_at``; indexed on ``(session_id, id)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from loopkit.abstractions.content import ChatMessage, FunctionCallContent, FunctionResultContent
from loopkit.errors import LoopkitError

SESSIONS_TABLE = "loopkit_sessions"
MESSAGES_TABLE = "loopkit_messages"
MESSAGES_INDEX = "loopkit_messages_session"
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


def _answers(popped: ChatMessage) -> list[tuple[str, str | None]]:
    """Each result of ``popped`` as (call id, name of its call made earlier in ``popped``, or
    None when the call was made in an earlier message)."""
    made: dict[str, str] = {}
    answers: list[tuple[str, str | None]] = []
    for content in popped.contents:
        if isinstance(content, FunctionCallContent):
            made[content.call_id] = content.name
        elif isinstance(content, FunctionResultContent):
            answers.append((content.call_id, made.get(content.call_id)))
    return answers


def answered_elsewhere(popped: ChatMessage) -> set[str]:
    """The call ids ``popped`` answers whose calls were made in earlier messages."""
    return {call_id for call_id, name in _answers(popped) if name is None}


def call_names(earlier_newest_first: Iterable[ChatMessage], wanted: set[str]) -> dict[str, str]:
    """The tool names of the calls ``wanted``, from the newest earlier message that made each;
    stops reading as soon as all are found."""
    names: dict[str, str] = {}
    if not wanted:
        return names
    for message in earlier_newest_first:
        for content in reversed(message.contents):
            if isinstance(content, FunctionCallContent) and content.call_id in wanted:
                names.setdefault(content.call_id, content.name)
        if len(names) == len(wanted):
            break
    return names


def open_calls_before(
    popped: ChatMessage, open_after: Mapping[str, str], names: Mapping[str, str]
) -> dict[str, str]:
    """The calls left open once ``popped`` (the newest message) is removed: those it answered
    open again, those it made are gone. ``names`` gives the tool names of the calls it answered
    that earlier messages made (from :func:`call_names`)."""
    pending = dict(open_after)
    answers = iter(reversed(_answers(popped)))
    # Undo the message content by content, newest first: the exact inverse of the fold that
    # protocol.open_calls_of applies, so a store agrees with InMemorySession after any pop.
    for content in reversed(popped.contents):
        if isinstance(content, FunctionResultContent):
            call_id, name = next(answers)
            pending[call_id] = name if name is not None else names.get(call_id, "")
        elif isinstance(content, FunctionCallContent):
            pending.pop(content.call_id, None)
    return pending
