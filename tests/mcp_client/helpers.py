"""Helpers for the MCP client tests: the real test server script and process checks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from loopkit.mcp import MCPClient

SERVER_SCRIPT = Path(__file__).parent / "servers" / "tool_server.py"


def stdio_server(**kwargs: Any) -> MCPClient:
    """An (unopened) client for the test server run as a child process over stdio."""
    return MCPClient.stdio(sys.executable, [str(SERVER_SCRIPT), "stdio"], **kwargs)


def process_state(pid: int) -> str | None:
    """The process's state letter from /proc (``Z`` for a zombie), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]
