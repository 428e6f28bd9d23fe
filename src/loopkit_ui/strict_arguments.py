"""Unknown arguments to a tool are refused, not dropped.

The ``mcp`` SDK validates a tool's arguments with a pydantic model that ignores extra keys, so
``ui_screenshot(path="after.png")`` would run as ``ui_screenshot()`` and the caller would never
learn that ``path`` did nothing. loopkit's local tools refuse such calls (their argument models
forbid extra keys); this middleware does the same for the MCP server, through the SDK's
middleware chain (``MCPServer.middleware``): a ``tools/call`` naming an argument the tool's input
schema lacks is answered with an error that lists the tool's arguments, before the tool runs, and
``tools/list`` marks every input schema ``additionalProperties: false`` so clients know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult, TextContent

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = ["refuse_unknown_arguments"]


def _type(schema: Mapping[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    options = [str(s.get("type", "any")) for s in schema.get("anyOf", []) if isinstance(s, Mapping)]
    return " or ".join(o for o in options if o != "null") or "any"


def _unknown_message(tool: str, unknown: list[str], schema: Mapping[str, Any]) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    expected = ", ".join(f"{name} ({_type(p)})" for name, p in properties.items())
    what = "argument" if len(unknown) == 1 else "arguments"
    return (
        f"invalid arguments for {tool}: unknown {what} {', '.join(map(repr, unknown))}. "
        f"Expected: {expected or 'no arguments'}."
    )


def refuse_unknown_arguments(server: MCPServer[Any]) -> None:
    """Add the middleware to ``server`` (call once, after its tools are added)."""
    schemas: dict[str, Mapping[str, Any]] = {}

    async def schema_of(name: str) -> Mapping[str, Any] | None:
        if not schemas:  # the tools are fixed once the server runs: read them once
            schemas.update({t.name: t.input_schema for t in await server.list_tools()})
        return schemas.get(name)

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            name, arguments = params.get("name"), params.get("arguments")
            schema = await schema_of(name) if isinstance(name, str) else None
            if schema is not None and isinstance(arguments, Mapping):
                unknown = sorted(set(arguments) - set(schema.get("properties", {})))
                if unknown:
                    text = _unknown_message(str(name), unknown, schema)
                    return CallToolResult(
                        content=[TextContent(type="text", text=text)], is_error=True
                    )
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict):
            for tool in result.get("tools", []):
                if isinstance(tool, dict) and isinstance(tool.get("inputSchema"), dict):
                    tool["inputSchema"] = {**tool["inputSchema"], "additionalProperties": False}
        return result

    server.middleware.append(middleware)
