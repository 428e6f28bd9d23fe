"""The demo's UI server, started before the demo checks its settings.

The UI server spends about a second of CPU importing (the MCP SDK, the accessibility backend)
before it can answer; the demo spends half a second importing and checking its settings on one
core before it starts the desktop and the run. Started first, as a
:class:`~loopkit.mcp.WaitingPythonServer`, the server does its imports on the other core
meanwhile and is told its command line and environment (the desktop's) when the run opens it.
A run whose UI server is configured otherwise spawns its own, and an unused waiting server is
ended (bad input, a durable run, ``--resume``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopkit.mcp.waiting_server import WaitingPythonServer

__all__ = ["start_waiting_ui_server"]


def start_waiting_ui_server() -> WaitingPythonServer | None:
    """The default UI server (``python -m loopkit_ui.server`` with this interpreter), started
    and importing; None where that cannot be done (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    from loopkit.mcp.waiting_server import WaitingPythonServer
    from loopkit_ui.server_imports import ENTRY, STDIO_SERVER_IMPORTS

    return WaitingPythonServer.start(ENTRY, preload=STDIO_SERVER_IMPORTS)
