"""Unknown arguments to a tool are refused, not dropped.

The ``mcp`` SDK validates a tool's arguments with a pydantic model that ignores extra keys, so
``ui_screenshot(path="after.png")`` would run as ``ui_screenshot()`` and the caller would never
learn that ``path`` did nothing. loopkit's local tools refuse such calls (their argument models
forbid extra keys); this middleware does the same for the MCP server, through the SDK's
middleware chain (``MCPServer.middleware``): a ``tools/call`` naming an argument the tool's input
schema lacks is answered with an error that lists the tool's arguments, before the tool runs, and
``tools/list`` marks every input schema ``additionalProperties: false`` so clients know.

Arguments of the wrong type or out of range are refused the same way, in the same plain words
(``invalid arguments for ui_get_cell: row: 'x' is not an integer. Expected: ...``), checked
against the input schema before the SDK's own validation, whose pydantic text (with a link to
pydantic's site) would otherwise reach the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult, TextContent

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = ["refuse_unknown_arguments", "type_problems"]


def _type(schema: Mapping[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    options = [str(s.get("type", "any")) for s in schema.get("anyOf", []) if isinstance(s, Mapping)]
    return " or ".join(o for o in options if o != "null") or "any"


def _type_message(tool: str, problems: list[str], schema: Mapping[str, Any]) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    expected = ", ".join(f"{name} ({_type(p)})" for name, p in properties.items())
    return (
        f"invalid arguments for {tool}: {'; '.join(problems)}. "
        f"Expected: {expected or 'no arguments'}."
    )


def _unknown_message(tool: str, unknown: list[str], schema: Mapping[str, Any]) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    expected = ", ".join(f"{name} ({_type(p)})" for name, p in properties.items())
    what = "argument" if len(unknown) == 1 else "arguments"
    return (
        f"invalid arguments for {tool}: unknown {what} {', '.join(map(repr, unknown))}. "
        f"Expected: {expected or 'no arguments'}."
    )


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "array": "a list", "object": "an object",
               "null": "null"}  # fmt: skip


def _expected_words(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    if "const" in schema:
        return repr(schema["const"])
    if "type" in schema:
        return _TYPE_WORDS.get(str(schema["type"]), str(schema["type"]))
    options = [s for s in schema.get("anyOf", []) if isinstance(s, Mapping)]
    words = [_expected_words(o) for o in options]
    return " or ".join(w for w in words if w) or "something else"


def _coerced(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether pydantic's lax mode turns this string into what the schema wants."""
    if not isinstance(value, str):
        return False
    kinds = {schema.get("type")} | {o.get("type") for o in schema.get("anyOf", [])}
    text = value.strip()
    if "integer" in kinds and text.lstrip("+-").isdigit():
        return True
    if "number" in kinds:
        try:
            float(text)
        except ValueError:
            pass
        else:
            return True
    return "boolean" in kinds and text.lower() in ("true", "false", "1", "0", "yes", "no")


_VALIDATORS: dict[int, Any] = {}  # id(schema) -> its validator (tool schemas live as long)


def type_problems(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Plain-worded problems of ``arguments`` against a tool's input schema (empty: none)."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None or validator.schema is not schema:
        import jsonschema

        validator = jsonschema.Draft202012Validator(schema)
        _VALIDATORS[id(schema)] = validator
    if validator.is_valid(dict(arguments)):
        return []
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    for error in sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path)):
        if error.validator == "required":
            problems.append(error.message.replace("is a required property", "is missing"))
            continue
        if error.validator == "additionalProperties":
            continue  # unknown arguments are answered before this, with the valid ones
        where = ".".join(str(p) for p in error.path) or "arguments"
        top = properties.get(str(error.path[0]), {}) if error.path else {}
        if error.validator in ("type", "anyOf") and _coerced(error.instance, top):
            continue  # the SDK's lax validation takes "3" for 3: so do we
        if error.validator in ("type", "anyOf", "enum", "const") and len(error.path) == 1:
            problems.append(f"{where}: {error.instance!r} is not {_expected_words(top)}")
        else:
            problems.append(f"{where}: {error.message}")
    return problems


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
                problems = type_problems(arguments, schema)
                if problems:
                    text = _type_message(str(name), problems, schema)
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
