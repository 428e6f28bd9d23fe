"""How a conversation divides into steps, and how a compacted step reads.

A *step* is an assistant message with its function calls together with the tool message(s)
answering them (or a message that neither calls nor answers). Compaction cuts only between
steps, so a call never loses its result. The *head* (the system messages and the task, i.e. the
first user message) always stays verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)

__all__ = [
    "describe_call",
    "elide",
    "head_end",
    "pinned_cost",
    "pinned_messages",
    "result_stub",
    "steps",
    "transcript",
]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def describe_call(call: FunctionCallContent, max_chars: int = 200) -> str:
    """``name(arg='value', n=3)``: a call as the model could repeat it (long values cut)."""
    parts = []
    for key, value in call.arguments.items():
        text = repr(value) if isinstance(value, str) else _json(value)
        if len(text) > 60:
            text = text[:59] + "…"
        parts.append(f"{key}={text}")
    args = ", ".join(parts)
    if len(args) > max_chars:
        args = args[: max_chars - 1] + "…"
    return f"{call.name}({args})"


def result_stub(call: FunctionCallContent | None, result: FunctionResultContent) -> str:
    what = f"the result of {describe_call(call)}" if call is not None else "a tool result"
    return (
        f"[elided: {what}, {len(result.result):,} characters; call the tool again if you need it]"
    )


def elide(message: ChatMessage, stubs: dict[int, str]) -> ChatMessage:
    """A copy of ``message`` whose results at the given positions are replaced by stubs."""
    contents: list[Content] = [
        c.model_copy(update={"result": stubs[j]})
        if j in stubs and isinstance(c, FunctionResultContent)
        else c
        for j, c in enumerate(message.contents)
    ]
    return message.model_copy(update={"contents": contents})


def _update_open(open_calls: set[str], message: ChatMessage) -> None:
    for c in message.contents:
        if isinstance(c, FunctionCallContent):
            open_calls.add(c.call_id)
        elif isinstance(c, FunctionResultContent):
            open_calls.discard(c.call_id)


def head_end(messages: Sequence[ChatMessage]) -> int:
    """The end of what always stays verbatim: up to and including the first user message (the
    task), else the leading system messages; never between a call and its result."""
    end = next((i + 1 for i, m in enumerate(messages) if m.role == ChatRole.USER), None)
    if end is None:
        end = 0
        while end < len(messages) and messages[end].role == ChatRole.SYSTEM:
            end += 1
    open_calls: set[str] = set()
    for m in messages[:end]:
        _update_open(open_calls, m)
    while open_calls and end < len(messages):
        _update_open(open_calls, messages[end])
        end += 1
    return end


def steps(messages: Sequence[ChatMessage], start: int) -> list[tuple[int, int]]:
    """``messages[start:]`` as steps ``(begin, end)``: a new step starts where no call is open
    and the message answers no call, so a call and its results always share a step."""
    bounds: list[list[int]] = []
    open_calls: set[str] = set()
    for i in range(start, len(messages)):
        m = messages[i]
        answers = any(isinstance(c, FunctionResultContent) for c in m.contents)
        if not bounds or (not open_calls and not answers):
            bounds.append([i, i + 1])
        else:
            bounds[-1][1] = i + 1
        _update_open(open_calls, m)
    return [(b, e) for b, e in bounds]


def transcript(previous: str | None, messages: Sequence[ChatMessage], result_chars: int) -> str:
    """The summariser's input: the earlier summary, then each message as ``role: text``."""
    names = {c.call_id: c.name for m in messages for c in m.function_calls}
    lines = [f"Earlier summary:\n{previous}\n"] if previous else []
    for m in messages:
        parts = []
        for c in m.contents:
            if isinstance(c, TextContent) and c.text:
                parts.append(c.text)
            elif isinstance(c, FunctionCallContent):
                parts.append(f"called {describe_call(c)}")
            elif isinstance(c, FunctionResultContent):
                text = c.result
                if len(text) > result_chars:
                    text = text[:result_chars] + f" [... {len(c.result):,} characters in all]"
                label = "error from" if c.error else "result of"
                parts.append(f"{label} {names.get(c.call_id, 'a tool')}: {text}")
            elif isinstance(c, DataContent):
                parts.append(f"[{c.media_type} attachment]")
        if parts:
            lines.append(f"{m.role.value}: " + "\n".join(parts))
    return "\n\n".join(lines)


def pinned_messages(messages: Sequence[ChatMessage], head: int) -> frozenset[int]:
    """The messages after the head that stay verbatim even in a summarised range (placed before
    the summary): system messages, and the latest user message (the current request of a
    continued session)."""
    pinned = {i for i in range(head, len(messages)) if messages[i].role == ChatRole.SYSTEM}
    last_user = next(
        (i for i in range(len(messages) - 1, head - 1, -1) if messages[i].role == ChatRole.USER),
        None,
    )
    if last_user is not None:
        pinned.add(last_user)
    return frozenset(pinned)


def pinned_cost(pinned: frozenset[int], costs: list[int], start: int, end: int) -> int:
    return sum(costs[i] for i in pinned if start <= i < end)
