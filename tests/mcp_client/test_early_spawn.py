"""A stdio server starts before the client imports the ``mcp`` SDK (each takes most of a
second), and it gets the environment the SDK's own transport would give it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from loopkit.mcp.stdio_process import SDK_DEFAULT_ENV_VARS

from .helpers import SERVER_SCRIPT

pytestmark = pytest.mark.integration

# A fresh interpreter (this one has imported the SDK already) records, with an audit hook,
# whether `mcp` was imported when it started the server, then calls a tool to show it works.
_PROBE = textwrap.dedent(
    """
    import asyncio, json, sys
    started = []
    def hook(event, args):
        if event == "subprocess.Popen" and sys.argv[1] in [str(a) for a in args[1]]:
            started.append({"mcp imported": "mcp" in sys.modules})
    sys.addaudithook(hook)
    from loopkit.mcp import MCPClient
    async def main():
        async with MCPClient.stdio(sys.executable, [sys.argv[1], "stdio"]) as server:
            tools = {t.name: t for t in await server.list_tools()}
            answer = await tools["echo"].invoke({"text": "hi"})
        print(json.dumps({"started": started, "answer": answer, "mcp": "mcp" in sys.modules}))
    asyncio.run(main())
    """
)


def test_the_server_starts_before_the_sdk_is_imported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(SERVER_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"started": [{"mcp imported": False}], "answer": "hi", "mcp": True}


def test_the_default_environment_is_the_sdks() -> None:
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    assert list(SDK_DEFAULT_ENV_VARS) == list(DEFAULT_INHERITED_ENV_VARS)
