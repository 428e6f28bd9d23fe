"""The wire formats the fake model server speaks, built from a :class:`~tests.fakes.llm_script.Turn`:
OpenAI chat completions (JSON and SSE chunks) and Anthropic messages (JSON and SSE events)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

from tests.fakes.llm_script import ScriptedUsage, Turn


def _pieces(text: str, n: int) -> list[str]:
    if not text:
        return [text]
    n = max(1, min(n, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI chat completions ------------------------------------------------------------------


def _openai_usage(u: ScriptedUsage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
    }


def _openai_finish(turn: Turn) -> str:
    return "tool_calls" if turn.tool_calls else "stop"


def openai_body(turn: Turn, model: str) -> dict[str, Any]:
    """The non-streaming chat-completions JSON for ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _openai_finish(turn)},
        ],
        "usage": _openai_usage(turn.usage),
    }


def openai_stream(turn: Turn, model: str, include_usage: bool) -> Iterator[str]:
    """The SSE ``data:`` payloads of a streamed chat completion (without the ``data: `` prefix)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps(
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    yield chunk({"role": "assistant", "content": ""})
    if turn.text:
        for piece in _pieces(turn.text, turn.stream_pieces):
            yield chunk({"content": piece})
    for index, call in enumerate(turn.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(call.arguments_json, turn.stream_pieces):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _openai_finish(turn))
    if include_usage:
        yield json.dumps({**base, "choices": [], "usage": _openai_usage(turn.usage)})


def openai_error(turn: Turn) -> dict[str, Any]:
    return {
        "error": {
            "message": turn.error_message or "error",
            "type": turn.error_type or "api_error",
            "param": None,
            "code": None,
        }
    }


# --- Anthropic messages -----------------------------------------------------------------------


def _anthropic_usage(u: ScriptedUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
    }


def _anthropic_stop(turn: Turn) -> str:
    return "tool_use" if turn.tool_calls else "end_turn"


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        # Anthropic always sends ``input`` as an object. Arguments scripted as a raw string are
        # parsed; a string that is not JSON is sent as a string (a deliberately broken reply).
        arguments: Any = call.arguments
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def anthropic_body(turn: Turn, model: str) -> dict[str, Any]:
    """The non-streaming messages JSON for ``turn``."""
    return {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(turn),
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn.usage),
    }


def anthropic_stream(turn: Turn, model: str) -> Iterator[tuple[str, str]]:
    """The SSE ``(event, data)`` pairs of a streamed message, in Anthropic's order."""

    def ev(name: str, payload: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **payload})

    usage = _anthropic_usage(turn.usage)
    start_usage = {**usage, "output_tokens": 1}
    yield ev(
        "message_start",
        {
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:16]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            }
        },
    )
    index = 0
    if turn.text:
        yield ev(
            "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        )
        yield ev("ping", {})
        for piece in _pieces(turn.text, turn.stream_pieces):
            yield ev(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        yield ev("content_block_stop", {"index": index})
        index += 1
    for call in turn.tool_calls:
        yield ev(
            "content_block_start",
            {
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": {},
                },
            },
        )
        for piece in _pieces(call.arguments_json, turn.stream_pieces):
            yield ev(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
        yield ev("content_block_stop", {"index": index})
        index += 1
    yield ev(
        "message_delta",
        {
            "delta": {"stop_reason": _anthropic_stop(turn), "stop_sequence": None},
            "usage": {"output_tokens": turn.usage.output_tokens},
        },
    )
    yield ev("message_stop", {})


def anthropic_error(turn: Turn) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": turn.error_type or "api_error", "message": turn.error_message or "error"},
    }
