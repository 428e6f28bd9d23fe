"""MCP client: tools of MCP servers (stdio child processes or streamable HTTP) as loopkit tools.

The ``mcp`` SDK is imported only when a connection opens, so importing this package is cheap.
"""

from loopkit.mcp.client import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, MCPClient
from loopkit.mcp.config import MCPServerConfig
from loopkit.mcp.tools import MCPTool, result_to_text

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "MCPClient",
    "MCPServerConfig",
    "MCPTool",
    "result_to_text",
]
