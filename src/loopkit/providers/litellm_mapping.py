"""Translation between loopkit's types and the OpenAI-format dicts litellm takes and returns.

Nothing here imports litellm: requests are plain dicts, and responses are read by attribute (or
key) so the functions work on litellm's ``ModelResponse`` objects as well as on plain dicts.
litellm translates the OpenAI format to each provider's wire format (Anthropic messages included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopkit.abstractions.chat import ChatOptions, FinishReason, ToolMode
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UsageDetails,
)
from loopkit.abstractions.tools import Tool
from loopkit.providers.history_cache import CachedHistory

#: Anthropic's prompt-cache breakpoint marker; litellm copies it onto the Anthropic blocks.
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def attr(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]`` (litellm objects support both; dicts only the second)."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


# --- requests -----------------------------------------------------------------------------------


def _user_parts(contents: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for c in contents:
        if isinstance(c, TextContent):
            if c.text:
                parts.append({"type": "text", "text": c.text})
        elif isinstance(c, DataContent):
            parts.append({"type": "image_url", "image_url": {"url": c.data_uri()}})
    return parts


def _simplify(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A single text part is sent as a plain string (accepted by every OpenAI-compatible server)."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """loopkit messages → OpenAI chat-completions messages.

    Function results become one ``tool`` message each (whatever the role of the loopkit message
    that carried them); function calls go into the assistant message's ``tool_calls``.
    """
    out: list[dict[str, Any]] = []
    for index, m in enumerate(messages):
        out.extend(message_to_openai(index, m))
    return out


def message_to_openai(index: int, m: ChatMessage) -> list[dict[str, Any]]:
    """One loopkit message → its OpenAI messages (none, one, or one per function result);
    ``index`` (its place in the conversation) is for the error message only."""
    if not isinstance(m, ChatMessage):
        raise TypeError(f"messages[{index}] must be a loopkit ChatMessage, got {type(m).__name__}")
    out: list[dict[str, Any]] = []
    results = [c for c in m.contents if isinstance(c, FunctionResultContent)]
    calls = [c for c in m.contents if isinstance(c, FunctionCallContent)]
    parts = _user_parts([c for c in m.contents if isinstance(c, TextContent | DataContent)])
    if m.role == ChatRole.ASSISTANT:
        if parts or calls:
            msg: dict[str, Any] = {"role": "assistant", "content": _simplify(parts) or None}
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ]
            out.append(msg)
    elif m.role in (ChatRole.SYSTEM, ChatRole.USER) and parts:
        out.append({"role": m.role.value, "content": _simplify(parts)})
    elif m.role == ChatRole.TOOL and parts and not results:
        # Text in a tool message without a call id has nowhere to go but a user turn.
        out.append({"role": "user", "content": _simplify(parts)})
    for r in results:
        out.append({"role": "tool", "tool_call_id": r.call_id, "content": r.result})
    return out


class WireHistory:
    """A conversation's OpenAI-format messages, flattened, and where its last system one is."""

    __slots__ = ("last_system", "messages")

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.last_system = -1

    def add(self, wires: list[dict[str, Any]]) -> WireHistory:
        for wire in wires:
            if wire["role"] == "system":
                self.last_system = len(self.messages)
            self.messages.append(wire)
        return self


def request_messages(
    history: CachedHistory[list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], int]:
    """(A :meth:`HistoryCache.read` reader.) A request's own list of the conversation's wire
    messages (the dicts are the kept ones: never change them) and the index of its last system
    message."""
    wire = history.fold("wire", WireHistory, WireHistory.add)
    return list(wire.messages), wire.last_system


def to_openai_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Tools → OpenAI function-tool declarations."""
    declared: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in tools:
        if t.name in seen:
            raise ValueError(f"ChatOptions.tools has two tools named {t.name!r}; names must differ")
        seen.add(t.name)
        declared.append(
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters or {"type": "object", "properties": {}},
                },
            }
        )
    return declared


def to_tool_choice(mode: ToolMode, tool_names: Sequence[str]) -> str | dict[str, Any]:
    """ToolMode → OpenAI ``tool_choice`` (litellm maps it to Anthropic's ``tool_choice``)."""
    if mode.kind == "auto":
        return "auto"
    if mode.kind == "none":
        return "none"
    if mode.kind == "required":
        if mode.function_name is None:
            return "required"
        if mode.function_name not in tool_names:
            raise ValueError(
                f"ToolMode.required({mode.function_name!r}) names a tool that is not in "
                f"ChatOptions.tools ({', '.join(tool_names) or 'no tools'})"
            )
        return {"type": "function", "function": {"name": mode.function_name}}
    raise ValueError(f"ToolMode.kind must be 'auto', 'none' or 'required', got {mode.kind!r}")


def options_to_kwargs(options: ChatOptions | None) -> dict[str, Any]:
    """ChatOptions → litellm ``completion`` keyword arguments. Unset sampling parameters are left
    out entirely, because some models reject e.g. ``temperature`` outright."""
    if options is None:
        return {}
    kwargs: dict[str, Any] = {}
    if options.tools:
        kwargs["tools"] = to_openai_tools(options.tools)
    if options.tool_mode is not None:
        names = [t.name for t in options.tools]
        if options.tools:
            kwargs["tool_choice"] = to_tool_choice(options.tool_mode, names)
        elif options.tool_mode.kind == "required":
            raise ValueError("ToolMode.required needs at least one tool in ChatOptions.tools")
        # With no tools, "auto"/"none" mean the same as leaving tool_choice out, and OpenAI
        # rejects a tool_choice without tools.
    if options.allow_multiple_tool_calls is not None and options.tools:
        kwargs["parallel_tool_calls"] = options.allow_multiple_tool_calls
    optional = {
        "max_tokens": options.max_output_tokens,
        "temperature": options.temperature,
        "top_p": options.top_p,
        "top_k": options.top_k,
        "stop": list(options.stop_sequences) if options.stop_sequences else None,
        "seed": options.seed,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    # ``response_format`` arrives with helper A's ChatOptions field; getattr until then.
    response_format = to_response_format(getattr(options, "response_format", None))
    if response_format is not None:
        kwargs["response_format"] = response_format
    kwargs.update(options.additional_properties)
    return kwargs


#: The schema's name when a ResponseFormat gives none (OpenAI requires one: [a-zA-Z0-9_-]{1,64}).
DEFAULT_SCHEMA_NAME = "response"


def _format_parts(fmt: Any) -> tuple[str, Mapping[str, Any] | None, str | None, bool]:
    """(kind, schema, name, strict) of a :class:`~loopkit.abstractions.response_format.
    ResponseFormat`: ``kind`` is ``text``, ``json`` or ``json_schema``."""
    kind = getattr(fmt, "kind", None)
    # A pydantic model cannot call a field ``schema`` (BaseModel has one): ``schema_`` then.
    schema = next(
        (
            v
            for v in (getattr(fmt, "schema_", None), getattr(fmt, "schema", None))
            if isinstance(v, Mapping)
        ),
        None,
    )
    name = getattr(fmt, "name", None)
    return (
        str(kind),
        schema,
        name if isinstance(name, str) else None,
        getattr(fmt, "strict", True) is not False,
    )


def to_response_format(fmt: Any) -> dict[str, Any] | None:
    """``ChatOptions.response_format`` → litellm's (OpenAI's) ``response_format``; None for
    plain text (the default, so nothing is sent).

    - ``ResponseFormat.json()`` → ``{"type": "json_object"}``;
    - ``ResponseFormat.json_schema(schema, name, strict)`` (and ``for_type``) →
      ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``.

    litellm passes both to OpenAI-compatible servers as they are; for Anthropic it sends the
    schema as Anthropic's structured output (``output_format``) where the model has it, else as a
    forced tool whose call it turns back into the answer's text (tests/providers/
    test_litellm_response_format.py shows which, with the installed litellm).
    """
    if fmt is None:
        return None
    kind, schema, name, strict = _format_parts(fmt)
    if kind == "text":
        return None
    if kind in ("json", "json_object"):
        return {"type": "json_object"}
    if kind == "json_schema":
        if schema is None:
            raise ValueError(
                f"ChatOptions.response_format {fmt!r} is a json_schema format without a schema; "
                "expected a JSON schema (a dict) with it"
            )
        return {
            "type": "json_schema",
            "json_schema": {
                "name": name or DEFAULT_SCHEMA_NAME,
                "schema": dict(schema),
                "strict": strict,
            },
        }
    raise ValueError(
        f"ChatOptions.response_format has kind {kind!r}; expected 'text', 'json' or 'json_schema'"
    )


def add_cache_breakpoints(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> None:
    """Mark Anthropic prompt-cache breakpoints in place: the last system message, the last tool,
    and the latest turn (the last message).

    Anthropic caches the prefix up to each breakpoint: system prompt + tools change rarely, and the
    latest-turn breakpoint lets the next round of a tool loop read everything before it from the
    cache. Three breakpoints stay under Anthropic's limit of four. litellm copies ``cache_control``
    from OpenAI-format content blocks, tools and tool messages onto the Anthropic request.
    """
    last_system = -1
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "system":
            last_system = i
            break
    mark_cache_breakpoints(messages, tools, last_system)


def mark_cache_breakpoints(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, last_system: int
) -> None:
    """:func:`add_cache_breakpoints` with the index of the last system message known (-1: none).

    The marked messages are replaced by marked copies: the dicts given are never changed, so a
    cache of them stays as it was (the list, and ``tools``, are changed in place).
    """
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
    if last_system >= 0:
        messages[last_system] = _marked(messages[last_system])
    if messages and messages[-1].get("role") != "system":
        messages[-1] = _marked(messages[-1])


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` carrying a cache breakpoint."""
    if message.get("role") == "tool":
        # litellm puts a tool message's cache_control on the Anthropic tool_result block.
        return {**message, "cache_control": dict(EPHEMERAL)}
    content = message.get("content")
    if isinstance(content, str) and content:
        block = {"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}
        return {**message, "content": [block]}
    if isinstance(content, list) and content:
        last = {**content[-1], "cache_control": dict(EPHEMERAL)}
        return {**message, "content": [*content[:-1], last]}
    return message


# --- client settings ----------------------------------------------------------------------------

#: Request arguments the client sets itself: never from ``litellm_params``.
_SET_PER_REQUEST = frozenset({"model", "messages", "stream", "stream_options"})
#: litellm arguments with a keyword of their own on the client: pass them there.
_OWN_KEYWORDS = frozenset(
    {
        "api_base",
        "api_key",
        "api_version",
        "timeout",
        "temperature",
        "max_tokens",
        "extra_headers",
        "extra_body",
    }
)
#: Headers whose whole value is a credential, whatever it looks like.
AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
#: One retry layer only (RetryingChatClient): these stay 0.
_RETRY_SETTINGS = frozenset({"num_retries", "max_retries"})


def str_mapping(what: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    """``value`` as a dict (empty for None); a clear error naming ``what`` for anything else."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{what} must be a mapping with string keys, got {value!r}")
    return dict(value)


def checked_litellm_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``litellm_params`` as a dict, refusing what the client sets itself or has a keyword for."""
    checked = str_mapping("litellm_params", params)
    for key in checked:
        if key in _SET_PER_REQUEST:
            raise ValueError(
                f"litellm_params may not set {key!r}: LiteLLMChatClient sets it per request"
            )
        if key in _OWN_KEYWORDS:
            raise ValueError(
                f"litellm_params may not set {key!r}: pass it as LiteLLMChatClient({key}=...)"
            )
        if key in _RETRY_SETTINGS:
            raise ValueError(
                f"litellm_params may not set {key!r}: loopkit keeps one retry layer "
                "(ChatClientBuilder.use_retries())"
            )
    return checked


# --- responses ----------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}


def map_finish_reason(reason: Any) -> FinishReason | None:
    return _FINISH.get(reason) if isinstance(reason, str) else None


def parse_arguments(name: str, raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as sent by the model → (arguments, error message or None)."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # a call without arguments
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as e:
        shown = raw if len(str(raw)) <= 200 else f"{str(raw)[:200]}..."
        return {}, (
            f"The arguments for tool {name!r} were not valid JSON ({e}); "
            f"received: {shown}. Send a JSON object."
        )
    if not isinstance(value, dict):
        return {}, (
            f"The arguments for tool {name!r} must be a JSON object, "
            f"got {type(value).__name__}: {str(raw)[:200]}"
        )
    return value, None


def function_call_from(call_id: Any, name: Any, raw_arguments: Any) -> FunctionCallContent:
    arguments, error = parse_arguments(str(name), raw_arguments)
    return FunctionCallContent(
        call_id=str(call_id or ""), name=str(name or ""), arguments=arguments, arguments_error=error
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def map_usage(usage: Any) -> UsageDetails | None:
    """litellm ``Usage`` → :class:`UsageDetails`.

    ``input_tokens`` is litellm's ``prompt_tokens``: all input tokens, cache reads and writes
    included (litellm adds Anthropic's ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens`` to ``input_tokens``, as OpenAI counts cached tokens in
    ``prompt_tokens``). ``cached_input_tokens`` and ``cache_creation_input_tokens`` are parts of it.
    """
    if usage is None:
        return None
    details = attr(usage, "prompt_tokens_details")
    cached = _int(attr(details, "cached_tokens")) or _int(attr(usage, "cache_read_input_tokens"))
    creation = (
        _int(attr(usage, "cache_creation_input_tokens"))
        or _int(attr(details, "cache_creation_tokens"))
        or _int(attr(details, "cache_write_tokens"))
    )
    return UsageDetails(
        input_tokens=_int(attr(usage, "prompt_tokens")),
        output_tokens=_int(attr(usage, "completion_tokens")),
        cached_input_tokens=cached,
        cache_creation_input_tokens=creation,
    )
