"""An MCP server's tool as a loopkit :class:`~loopkit.abstractions.Tool`, and MCP results as text.

Nothing here imports the ``mcp`` SDK: results are read by duck typing (``.content``, ``.is_error``,
``.structured_content``), so this module costs nothing at ``import loopkit``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from loopkit.abstractions.tools import ToolError

__all__ = ["MCPTool", "ToolCaller", "result_to_text"]


class _CallToolResultLike(Protocol):
    """The parts of ``mcp_types.CallToolResult`` this module reads."""

    @property
    def content(self) -> Sequence[Any]: ...

    @property
    def structured_content(self) -> Any: ...

    @property
    def is_error(self) -> bool: ...


class ToolCaller(Protocol):
    """What an :class:`MCPTool` needs of its connection (an
    :class:`~loopkit.mcp.MCPClient`, or anything that reaches one): a label for messages and a
    tool call by the server's name."""

    @property
    def label(self) -> str: ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> _CallToolResultLike: ...


def _approx_decoded_size(b64: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    return len(b64) * 3 // 4 - b64[-2:].count("=") if b64 else 0


def _block_to_text(block: Any) -> str | None:
    """One MCP content block as text; ``None`` for a block type this version does not know."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        # The run log and the model's tool result are text; a base64 blob would only burn tokens.
        size = _approx_decoded_size(str(getattr(block, "data", "")))
        return f"[{kind}: {block.mime_type}, {size} bytes, not shown]"
    if kind == "resource_link":
        label = getattr(block, "title", None) or getattr(block, "name", None) or "resource"
        return f"[resource link: {label} <{block.uri}>]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        mime = getattr(resource, "mime_type", None) or "application/octet-stream"
        size = _approx_decoded_size(str(getattr(resource, "blob", "")))
        return f"[resource {resource.uri}: {mime}, {size} bytes, not shown]"
    return None


def result_to_text(result: _CallToolResultLike) -> str:
    """Turn an MCP ``CallToolResult`` into the plain text a model reads.

    Text blocks become their text, joined by newlines (never a JSON object with escaped quotes).
    Images, audio and binary resources become a one-line note with their type and size. When the
    result has no text at all, its structured content becomes compact JSON. An empty result is
    the empty string.
    """
    parts: list[str] = []
    for block in result.content:
        text = _block_to_text(block)
        if text is None:
            kind = getattr(block, "type", type(block).__name__)
            text = f"[unsupported MCP content block: {kind}]"
        parts.append(text)
    has_text = any(getattr(b, "type", None) in ("text", "resource") for b in result.content)
    if not has_text and result.structured_content is not None:
        structured = json.dumps(
            result.structured_content, ensure_ascii=False, separators=(",", ":"), default=str
        )
        parts.insert(0, structured)
    return "\n".join(parts)


def _normalize_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The server's input schema, with ``properties`` present (OpenAI rejects an object without)."""
    normalized = dict(schema or {})
    normalized.setdefault("type", "object")
    if normalized.get("type") == "object":
        normalized.setdefault("properties", {})
    return normalized


class MCPTool:
    """One tool of a connected MCP server, usable wherever loopkit takes a ``Tool``.

    ``name`` is the server's tool name with the connection's prefix in front (if any);
    ``server_tool_name`` is the name sent to the server. ``parameters`` is the server's
    ``inputSchema``. :meth:`invoke` returns plain text (see :func:`result_to_text`) and raises
    :class:`~loopkit.abstractions.ToolError` with the server's text when the result is an error;
    a server that died or did not answer in time raises :class:`~loopkit.errors.MCPServerError`.
    """

    __slots__ = ("_client", "_parameters", "description", "name", "server_tool_name", "title")

    def __init__(
        self,
        client: ToolCaller,
        *,
        server_tool_name: str,
        description: str | None,
        parameters: dict[str, Any] | None,
        prefix: str = "",
        title: str | None = None,
    ) -> None:
        self._client = client
        self.server_tool_name = server_tool_name
        self.name = f"{prefix}{server_tool_name}"
        self.description = description or ""
        self.title = title
        self._parameters = _normalize_schema(parameters)

    @property
    def parameters(self) -> dict[str, Any]:
        """The server's JSON schema for the arguments."""
        return self._parameters

    @property
    def client(self) -> ToolCaller:
        """The connection this tool calls through."""
        return self._client

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Call the tool on the server and return its result as plain text."""
        result = await self._client.call_tool(self.server_tool_name, arguments)
        text = result_to_text(result)
        if result.is_error:
            raise ToolError(text or f"tool {self.name} failed without saying why")
        return text

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self._client.label!r})"
