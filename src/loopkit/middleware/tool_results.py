"""What the model reads of a tool call: the tool's value as plain text, cut when it is long,
or what failed when the tool raised."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = [
    "cut_result",
    "failure_text",
    "not_approved_text",
    "tool_result_to_text",
    "unknown_tool_text",
]


def tool_result_to_text(value: Any) -> str:
    """Plain text for a tool's return value: strings as they are, data as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return f"(binary result, {len(value)} bytes, not shown)"
    if isinstance(value, dict | list | tuple | int | float | bool):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    from pydantic import BaseModel  # loaded already: a run's messages are pydantic models

    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return str(value)


def cut_result(text: str, max_chars: int | None) -> str:
    """``text`` cut to ``max_chars`` with a note that says how much was left out and what to do."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return (
        text[:max_chars]
        + f"\n[cut: the result has {len(text)} characters, only the first {max_chars} are shown."
        " Ask for less, for example one folder, one window or one element.]"
    )


def failure_text(name: str, error: Exception, detailed: bool) -> str:
    """What the model reads when tool ``name`` raised ``error`` (not a :class:`ToolError`): which
    tool and the exception's type, so it can tell a bug from a bad argument; the message only
    when detailed errors are on (it may hold paths, data or secrets)."""
    kind = type(error).__name__
    if not detailed:
        return f"Error: {name} failed with {kind}."
    try:
        message = str(error)
    except Exception:
        message = ""
    return (
        f"Error: {name} failed with {kind}: {message}"
        if message
        else f"Error: {name} failed with {kind}."
    )


def unknown_tool_text(name: str, available: Iterable[str]) -> str:
    """What the model reads when it called ``name``, which is not among ``available``."""
    return (
        f'Error: there is no tool named "{name}". Available tools: {", ".join(sorted(available))}.'
    )


def not_approved_text(name: str) -> str:
    """What the model reads when a call to ``name`` was refused by the approver: an answer to
    act on, not a failure to retry."""
    return (
        f"Error: the call to {name} was not approved. Do not retry it unchanged; "
        "continue without it or explain in your answer why it is needed."
    )
