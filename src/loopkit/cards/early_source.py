"""``EarlyToolSource``: a tool source that starts opening before the run enters it.

Starting a tool server (the UI server: a Python process importing the MCP SDK and reaching the
accessibility bus) takes about a second; a demo run spends that long before its first model
request anyway (the scratch repository, the model, the run log). :meth:`EarlyToolSource.start`
opens the source in a task of the running loop, so the two overlap; the run then enters it as
usual and waits only for what is left. Opening fails the same way either way: the error is
raised where the run enters the source. Closing stays with whoever entered it; a source started
but never entered is closed by :meth:`aclose`.

With a :class:`~loopkit.mcp.remembered_tools.RememberedToolList` of the server (an MCP server
whose tool list is known from an earlier start of the same code), entering does not wait at
all: the run is offered the remembered tools at once, and a call waits for the server (an
opening error is then raised by the call). When the server answers, its own list is compared
with the remembered one: descriptions and schemas that changed are updated in place and the new
list is remembered for the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopkit.abstractions.tools import Tool
    from loopkit.cards.runner import ToolSource
    from loopkit.mcp.remembered_tools import RememberedToolList, ToolEntry

__all__ = ["EarlyToolSource"]


class EarlyToolSource:
    """Wraps ``source``; :meth:`start` begins opening it (the source must be safe to enter in
    one task and leave in another, as :class:`~loopkit.cards.runner.MCPToolSource` is: its MCP
    client keeps the session in a task of its own). ``remembered``: the source's tool list from
    an earlier start (an MCP source: its ``tools`` are :class:`~loopkit.mcp.tools.MCPTool`)."""

    def __init__(self, source: ToolSource, remembered: RememberedToolList | None = None) -> None:
        self.source = source
        self.remembered = remembered
        self._opening: asyncio.Task[Any] | None = None
        self._entered = False
        self._ahead = False  # entered with the remembered tools, before the source opened
        #: The source's tools, once entered.
        self.tools: list[Tool] = []

    def start(self) -> None:
        """Begin opening the source in the background (inside a running event loop)."""
        if self._opening is None:
            self._opening = asyncio.create_task(self.source.__aenter__(), name="open tool source")

    async def __aenter__(self) -> EarlyToolSource:
        self.start()
        assert self._opening is not None
        recalled = self.remembered.recall() if self.remembered is not None else None
        if recalled is not None and not self._opening.done():
            self.tools = self._remembered_tools(recalled)
            self._entered = self._ahead = True
            self._opening.add_done_callback(self._compare)
            return self
        await self._opening  # raises what opening raised, as entering the source would
        self._entered = True
        self.tools = self.source.tools
        self._remember(self.source.tools)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ahead and self._opening is not None:
            if not self._opening.done():  # the run never needed the server: stop starting it
                self._opening.cancel()
            await asyncio.wait({self._opening})
            if self._opening.cancelled() or self._opening.exception() is not None:
                return  # nothing was opened, nothing to close
        await self.source.__aexit__(*exc)

    async def aclose(self) -> None:
        """Close a source that was started but never entered (its opening stopped or undone)."""
        if self._opening is None or self._entered:
            return
        if not self._opening.done():
            self._opening.cancel()
        await asyncio.wait({self._opening})  # its outcome is read below, never raised here
        if not self._opening.cancelled() and self._opening.exception() is None:
            await self.source.__aexit__(None, None, None)

    # -- the remembered list -----------------------------------------------------------------

    async def _opened(self) -> list[Tool]:
        """The source's own tools once it is open (raises what opening raised)."""
        assert self._opening is not None
        await asyncio.shield(self._opening)
        return self.source.tools

    def _remembered_tools(self, entries: list[ToolEntry]) -> list[Tool]:
        from loopkit.mcp.tools import MCPTool

        prefix = getattr(getattr(self.source, "config", None), "tool_prefix", "") or ""
        client: Any = _WhenOpen(self)
        return [
            MCPTool(
                client,
                server_tool_name=e["name"],
                description=e.get("description"),
                parameters=e.get("parameters"),
                prefix=prefix,
                title=e.get("title"),
            )
            for e in entries
        ]

    def _remember(self, tools: list[Tool]) -> None:
        if self.remembered is not None:
            entries = _entries(tools)
            if entries is not None and entries != self.remembered.recall():
                self.remembered.remember(entries)

    def _compare(self, opening: asyncio.Task[Any]) -> None:
        """The server answered: bring the offered tools in line with its own list and
        remember that list (when they differ)."""
        if opening.cancelled() or opening.exception() is not None:
            return
        live = {getattr(t, "server_tool_name", t.name): t for t in self.source.tools}
        for tool in self.tools:
            now = live.get(getattr(tool, "server_tool_name", tool.name))
            if now is not None and (
                now.description != tool.description or now.parameters != tool.parameters
            ):
                with contextlib.suppress(AttributeError):
                    tool.description = now.description  # type: ignore[misc]
                    tool._parameters = now.parameters  # type: ignore[attr-defined]
        self._remember(self.source.tools)


def _entries(tools: list[Tool]) -> list[ToolEntry] | None:
    """The tools as remembered entries; None when one is not an MCP server's tool."""
    from loopkit.mcp.tools import MCPTool

    if not all(isinstance(t, MCPTool) for t in tools):
        return None
    return [
        {
            "name": t.server_tool_name,  # type: ignore[attr-defined]
            "description": t.description,
            "parameters": t.parameters,
            "title": t.title,  # type: ignore[attr-defined]
        }
        for t in tools
    ]


class _WhenOpen:
    """The client of the remembered tools: each call waits for the source to open, then goes
    to the server through the source's own client."""

    def __init__(self, early: EarlyToolSource) -> None:
        self._early = early

    @property
    def label(self) -> str:
        config = getattr(self._early.source, "config", None)
        return str(getattr(config, "name", None) or "MCP server")

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **options: Any
    ) -> Any:
        tools = await self._early._opened()
        client = next((t.client for t in tools if hasattr(t, "client")), None)
        if client is None:
            from loopkit.abstractions.tools import ToolError

            raise ToolError(f"the server offers no tools any more (asked for {name})")
        return await client.call_tool(name, arguments, **options)
