"""What ``python -m loopkit_ui.server`` imports to serve over stdio on Linux, for a launcher that
starts it before its command line is known (:class:`loopkit.mcp.WaitingPythonServer`), so the
imports are done while the launcher does its own work. Not the server module itself: it runs as
``__main__`` later. tests/ui/test_server_imports.py checks that the server's start imports each
of them."""

from __future__ import annotations

__all__ = ["ENTRY", "STDIO_SERVER_IMPORTS"]

#: The server's entry (``python -m loopkit_ui.server ...``).
ENTRY = ("-m", "loopkit_ui.server")

STDIO_SERVER_IMPORTS = (
    "anyio",
    "mcp",
    "loopkit_ui.cli_input",
    "loopkit_ui.http_security",
    "loopkit_ui.private_files",
    "loopkit_ui.server_tools",
    "loopkit_ui.service",
    "loopkit_ui.headless_desktop",
    "loopkit_ui.backends.atspi",
)
