"""``EarlyToolSource``: a tool source that starts opening before the run enters it.

Starting a tool server (the UI server: a Python process importing the MCP SDK and reaching the
accessibility bus) takes about a second; a demo run spends that long before its first model
request anyway (the scratch repository, the model, the run log). :meth:`EarlyToolSource.start`
opens the source in a task of the running loop, so the two overlap; the run then enters it as
usual and waits only for what is left. Opening fails the same way either way: the error is
raised where the run enters the source. Closing stays with whoever entered it; a source started
but never entered is closed by :meth:`aclose`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopkit.abstractions.tools import Tool
    from loopkit.cards.runner import ToolSource

__all__ = ["EarlyToolSource"]


class EarlyToolSource:
    """Wraps ``source``; :meth:`start` begins opening it (the source must be safe to enter in
    one task and leave in another, as :class:`~loopkit.cards.runner.MCPToolSource` is: its MCP
    client keeps the session in a task of its own)."""

    def __init__(self, source: ToolSource) -> None:
        self.source = source
        self._opening: asyncio.Task[Any] | None = None
        self._entered = False
        #: The source's tools, once entered.
        self.tools: list[Tool] = []

    def start(self) -> None:
        """Begin opening the source in the background (inside a running event loop)."""
        if self._opening is None:
            self._opening = asyncio.create_task(self.source.__aenter__(), name="open tool source")

    async def __aenter__(self) -> EarlyToolSource:
        self.start()
        assert self._opening is not None
        await self._opening  # raises what opening raised, as entering the source would
        self._entered = True
        self.tools = self.source.tools
        return self

    async def __aexit__(self, *exc: object) -> None:
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
