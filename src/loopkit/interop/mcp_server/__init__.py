"""An agent as an MCP server: :func:`~loopkit.interop.mcp_server.agent_mcp_server`, and the
command ``python -m loopkit.interop.mcp_server module:agent`` (stdio, or HTTP with a bearer
token). See ``docs/interop.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports

__all__ = ["agent_mcp_server", "output_model"]

_EXPORTS: dict[str, str] = {
    "agent_mcp_server": "loopkit.interop.mcp_server.server",
    "output_model": "loopkit.interop.mcp_server.server",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from loopkit.interop.mcp_server.server import agent_mcp_server, output_model
