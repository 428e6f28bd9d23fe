"""``loopkit_ui.server_imports`` lists what the stdio server imports before it serves (a waiting
server imports them ahead): each is imported by the server's own start, and none is missing from
the list that the start needs most (the SDK and the backend)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from loopkit_ui.server_imports import ENTRY, STDIO_SERVER_IMPORTS

# A fresh interpreter does what `python -m loopkit_ui.server` does before it serves over stdio:
# the checks, the service (its backend), the MCP server; then says what of the list it loaded.
_PROBE = """
import json, sys
import loopkit_ui.server as server
from loopkit_ui.server_imports import STDIO_SERVER_IMPORTS
args = server._parser().parse_args(["--app-name", "no-such-app"])
server._check(args)
service = server._service(args, None)
from loopkit_ui.server_tools import build_server
build_server(service)
import anyio
print(json.dumps({"missing": [m for m in STDIO_SERVER_IMPORTS if m not in sys.modules]}))
"""


def test_the_server_start_imports_every_listed_module() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"missing": []}
    assert {"mcp", "loopkit_ui.server_tools", "loopkit_ui.service"} <= set(STDIO_SERVER_IMPORTS)
    assert ENTRY == ("-m", "loopkit_ui.server")
    assert "loopkit_ui.server" not in STDIO_SERVER_IMPORTS  # it runs as __main__ later
