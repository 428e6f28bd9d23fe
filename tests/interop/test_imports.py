"""``import loopkit`` stays light: the protocol packages load only when an interop name is used;
and the interop modules (a library part) never import the companions."""

from __future__ import annotations

import json
import subprocess
import sys

PROTOCOL_PACKAGES = ["ag_ui", "a2a", "jsonpatch", "starlette", "uvicorn", "google.protobuf"]
COMPANIONS = ["loopkit_ui", "loopkit_tools", "loopkit_board"]


def _modules(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_import_loopkit_and_loopkit_interop_load_no_protocol_package() -> None:
    loaded = _modules("import loopkit, loopkit.interop, loopkit.interop.ag_ui, loopkit.interop.a2a")
    assert [m for m in PROTOCOL_PACKAGES if m in loaded] == []


def test_the_interop_modules_import_no_companion() -> None:
    loaded = _modules(
        "import asyncio\n"
        "from loopkit import Agent, FunctionChatClient\n"
        "from loopkit.interop import AGUIApp, A2ATool, agent_mcp_server, to_a2a\n"
        "import loopkit.interop.mcp_server.__main__, loopkit.mcp.http_serving\n"
        "from ag_ui.core import RunAgentInput, UserMessage\n"
        "agent = Agent(FunctionChatClient(lambda m, o: 'hi'), name='a')\n"
        "app = AGUIApp(agent)\n"
        "run = RunAgentInput(thread_id='t', run_id='r', messages=[UserMessage(id='u', content='x')])\n"
        "async def go():\n"
        "    return [e async for e in app.run_events(run)]\n"
        "assert asyncio.run(go())[-1].type == 'RUN_FINISHED'\n"
        "to_a2a(agent, url='http://127.0.0.1:1'); agent_mcp_server(agent)\n"
        "A2ATool('http://127.0.0.1:1', name='r')"
    )
    assert {"ag_ui", "a2a", "starlette", "mcp"} <= set(loaded)  # the servers were really built
    assert [m for m in loaded if m.split(".")[0] in COMPANIONS] == []
