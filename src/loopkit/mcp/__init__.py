"""MCP client: tools of MCP servers (stdio child processes or streamable HTTP) as loopkit tools.

The ``mcp`` SDK is imported only when a connection opens, and this package's names load on first
use (a program starts a :mod:`~loopkit.mcp.waiting_server` before its other imports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "MCPClient",
    "MCPServerConfig",
    "MCPTool",
    "WaitingPythonServer",
    "result_to_text",
]

_EXPORTS = {
    "DEFAULT_CALL_TIMEOUT": "loopkit.mcp.client",
    "DEFAULT_STARTUP_TIMEOUT": "loopkit.mcp.client",
    "MCPClient": "loopkit.mcp.client",
    "MCPServerConfig": "loopkit.mcp.config",
    "MCPTool": "loopkit.mcp.tools",
    "WaitingPythonServer": "loopkit.mcp.waiting_server",
    "result_to_text": "loopkit.mcp.tools",
}

if TYPE_CHECKING:
    from loopkit.mcp.client import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, MCPClient
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.tools import MCPTool, result_to_text
    from loopkit.mcp.waiting_server import WaitingPythonServer
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
