"""Progressive tool disclosure: the model sees a small core set of tools and loads the rest.

Every request carries the schemas of every tool it offers; with thirty tools they are most of a
card run's input. :class:`ToolDisclosure` offers the model only the tools of a configurable
core set (``fnmatch`` patterns over the names) and one more tool, ``load_tools``, whose
description lists the others by name. A successful ``load_tools`` call
adds the tools it names to every later request of the conversation: appended after the tools
already offered, in the order loaded, never reordering them. A load still changes the tools,
which come first in a provider's prompt: Anthropic documents that this invalidates the whole
cached prompt, so the request after a load writes it all again. Put what most runs need in the
core, and load the rest at once, early, while the conversation is short.

What the model is offered is worked out from the conversation itself (the ``load_tools`` calls
whose result was not an error, and any deferred tool the model called by name anyway whose
result was not an error: a model that knows a name from ``load_tools``' description may skip the
load, and a later request must then still offer the tool its history calls), never kept in the
middleware: one instance serves any number of
runs, a resumed or durable run sees the same tools as before, and a compacted history that drops
a load drops its tools. The loop above still holds every tool, so it can invoke any of them.

Schemas are sent compacted (:func:`compact_schema`): pydantic's ``title`` keys, the
``anyOf [..., null]`` + ``default: null`` spelling of an optional argument,
``additionalProperties: false`` and empty defaults go; descriptions, types, enums, bounds and
real defaults stay. The tools themselves, and what an MCP server tells
its other clients, are unchanged: they still validate every call against their full schema.
"""

from __future__ import annotations

import fnmatch
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import ChatMessage, FunctionCallContent, FunctionResultContent
from loopkit.abstractions.tools import Tool, ToolError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.providers.history_cache import CachedHistory, HistoryCache

__all__ = ["LOAD_TOOLS", "ToolDisclosure", "ToolDisclosureChatClient", "compact_schema"]

#: The name of the tool that loads the others.
LOAD_TOOLS = "load_tools"


def _says_nothing(default: Any) -> bool:
    """Whether a default is the empty value of its type: ``""``, ``false`` or ``[]`` (not ``0``)."""
    return default is False or (isinstance(default, str | list) and not default)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as a model needs it: no ``title`` strings, an optional argument spelled
    ``{"anyOf": [X, {"type": "null"}], "default": null}`` becomes ``X`` (it is optional because it
    is not ``required``), no ``additionalProperties: false`` (the tool still validates every
    call against its full schema) and no empty defaults (``""``, ``false``, ``[]``: what an
    optional argument left out means anyway). Everything else (descriptions, enums, bounds, real
    defaults such as ``true``, ``0`` or ``"auto"``) stays."""

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if in_properties:  # keys are argument names, values are schemas
            return {k: walk(v) for k, v in node.items()}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "additionalProperties" and value is False:
                continue  # the tool still refuses unknown arguments
            if key == "default" and _says_nothing(value):
                continue  # an optional argument left out is empty or off anyway
            out[key] = walk(value, in_properties=key in ("properties", "$defs", "definitions"))
        options = out.get("anyOf")
        if (
            isinstance(options, list)
            and len(options) == 2
            and {"type": "null"} in options
            and "default" in out
            and out["default"] is None
        ):
            (kept,) = [o for o in options if o != {"type": "null"}]
            if isinstance(kept, dict):
                merged = {k: v for k, v in out.items() if k not in ("anyOf", "default")}
                out = {**kept, **merged}
        return out

    result: dict[str, Any] = walk(schema)
    return result


@dataclass(frozen=True, slots=True)
class _Shown:
    """A tool as the model is shown it (compacted schema); invoking it invokes the tool."""

    tool: Tool
    parameters: dict[str, Any]

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        return await self.tool.invoke(arguments)


class _LoadTools:
    """The ``load_tools`` tool for one set of deferred tools: their names in its description
    (as Claude Code lists deferred MCP tools), their schemas once loaded."""

    def __init__(self, deferred: Sequence[Tool], name: str) -> None:
        self._names = [t.name for t in deferred]
        self.name = name
        self.description = (
            "Load more tools by name, callable from your next turn on (each then comes with its "
            f"description). Load all you will need at once, early. Available: "
            f"{', '.join(self._names)}."
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            },
            "required": ["names"],
            "additionalProperties": False,
        }

    async def invoke(self, arguments: dict[str, Any]) -> str:
        names = arguments.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ToolError('names: expected a list of tool names, e.g. ["ui_tree"]')
        unknown = [n for n in names if n not in self._names]
        if unknown:
            raise ToolError(
                f"no tool to load named {', '.join(unknown)}; available: {', '.join(self._names)}"
            )
        return f"Loaded {', '.join(dict.fromkeys(names))}."


_Loads = tuple[list[tuple[str, list[str]]], list[str]]


def _loads_of(loader: str) -> Callable[[int, ChatMessage], _Loads]:
    """What one message adds: its calls (call id, the names they load: a ``loader`` call its
    ``names``, any other call its own tool) and the call ids of its successful results."""

    def compute(index: int, message: ChatMessage) -> _Loads:
        calls: list[tuple[str, list[str]]] = []
        ok: list[str] = []
        for c in message.contents:
            if isinstance(c, FunctionCallContent) and c.name == loader:
                names = c.arguments.get("names")
                if isinstance(names, list):
                    calls.append((c.call_id, [n for n in names if isinstance(n, str)]))
            elif isinstance(c, FunctionCallContent):
                calls.append((c.call_id, [c.name]))
            elif isinstance(c, FunctionResultContent) and not c.error:
                ok.append(c.call_id)
        return calls, ok

    return compute


class _Loaded:
    """The running fold over a conversation: loader calls waiting for their result, and the
    names loaded so far in order."""

    __slots__ = ("names", "pending")

    def __init__(self) -> None:
        self.pending: dict[str, list[str]] = {}
        self.names: dict[str, None] = {}

    def add(self, value: _Loads) -> _Loaded:
        calls, ok = value
        self.pending.update(calls)
        for call_id in ok:
            names = self.pending.pop(call_id, None)
            if names is not None:
                self.names.update(dict.fromkeys(names))
        return self


def _loaded_names(history: CachedHistory[_Loads]) -> list[str]:
    return list(history.fold("loaded", _Loaded, _Loaded.add).names)


class ToolDisclosure:
    """Which tools the model is offered: those matching ``core`` (``fnmatch`` patterns such as
    ``"read_file"`` or ``"ui_get_*"``) or not matching ``defer`` (default ``["*"]``: every tool
    outside the core is deferred), ``load_tools``, and those it loaded. ``defer`` keeps tool sets
    nobody listed visible: ``defer=["ui_*"]`` defers only the UI server's tools outside the core.

    Use :meth:`tools` for the loop's tool list (the tools plus ``load_tools``) and
    :meth:`middleware` below the loop (``Agent(middleware=[disclosure.middleware])``,
    ``ChatClientBuilder(...).use(disclosure.middleware)``). With nothing to defer (every tool in
    the core) no ``load_tools`` is added and requests pass unchanged (schemas still compacted
    when ``compact`` is set).
    """

    def __init__(
        self,
        core: Sequence[str],
        *,
        defer: Sequence[str] = ("*",),
        load_tool_name: str = LOAD_TOOLS,
        compact: bool = True,
    ) -> None:
        for what, value in (("core", core), ("defer", defer)):
            if isinstance(value, str):
                raise TypeError(f"{what}: expected a list of tool-name patterns, not one string")
        self.core = list(core)
        self.defer = list(defer)
        self.load_tool_name = load_tool_name
        self.compact = compact

    def is_core(self, name: str) -> bool:
        """Whether the tool named ``name`` is always offered."""
        if name == self.load_tool_name or any(fnmatch.fnmatchcase(name, p) for p in self.core):
            return True
        return not any(fnmatch.fnmatchcase(name, p) for p in self.defer)

    def tools(self, tools: Sequence[Tool]) -> list[Tool]:
        """``tools`` plus the ``load_tools`` tool that loads the deferred ones (``tools`` alone
        when none is deferred)."""
        deferred = [t for t in tools if not self.is_core(t.name)]
        if not deferred:
            return list(tools)
        return [*tools, _LoadTools(deferred, self.load_tool_name)]

    def middleware(self, inner: ChatClient) -> ToolDisclosureChatClient:
        """The middleware below the loop (a factory ``client -> client``)."""
        return ToolDisclosureChatClient(inner, self)


class ToolDisclosureChatClient(DelegatingChatClient):
    """Sends each request with the core tools, ``load_tools`` and the tools loaded so far in
    the conversation (see :class:`ToolDisclosure`), their schemas compacted."""

    def __init__(self, inner: ChatClient, disclosure: ToolDisclosure) -> None:
        super().__init__(inner)
        self.disclosure = disclosure
        self._history: HistoryCache[_Loads] = HistoryCache(_loads_of(disclosure.load_tool_name))
        self._shown: dict[int, tuple[Tool, _Shown]] = {}

    def _show(self, tool: Tool) -> Tool:
        if not self.disclosure.compact:
            return tool
        kept = self._shown.get(id(tool))
        if kept is None or kept[0] is not tool:
            kept = (tool, _Shown(tool, compact_schema(tool.parameters)))
            self._shown[id(tool)] = kept
        return kept[1]

    def offered(self, messages: Sequence[ChatMessage], options: ChatOptions) -> list[Tool]:
        """The tools the model is offered for a request of ``messages`` with ``options``."""
        loader = self.disclosure.load_tool_name
        by_name = {t.name: t for t in options.tools}
        if loader not in by_name:
            return [self._show(t) for t in options.tools]
        shown = [t for t in options.tools if self.disclosure.is_core(t.name)]
        for name in self._history.read(messages, _loaded_names):
            tool = by_name.get(name)
            if tool is not None and not self.disclosure.is_core(name):
                shown.append(tool)
        return [self._show(t) for t in shown]

    def _options(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> ChatOptions | None:
        if options is None or not options.tools:
            return options
        return options.copy(tools=self.offered(messages, options))

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self.inner.get_response(messages, self._options(messages, options))

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return self.inner.get_streaming_response(messages, self._options(messages, options))
