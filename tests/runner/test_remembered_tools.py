"""A stdio MCP server's tool list remembered between runs (``RememberedToolList``), and
``EarlyToolSource`` offering it before the server has answered.

The server is real: the SDK's ``MCPServer`` in a package written to a temp folder and run as
``python -m`` (the fingerprint reads that package's files), over stdio.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from loopkit.cards.early_source import EarlyToolSource
from loopkit.cards.runner import MCPToolSource
from loopkit.mcp import MCPServerConfig
from loopkit.mcp.remembered_tools import RememberedToolList

pytestmark = pytest.mark.integration

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("remember-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """DESCRIPTION"""
    return text


server.run()
'''


def write_server(folder: Path, description: str = "Return the text unchanged.") -> None:
    package = folder / "remember_srv"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(SERVER.replace("DESCRIPTION", description))


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MCPServerConfig:
    packages = tmp_path / "packages"
    write_server(packages)
    monkeypatch.syspath_prepend(str(packages))  # the fingerprint finds the package here
    return MCPServerConfig(
        name="remember-test",
        command=[sys.executable, "-m", "remember_srv"],
        env={"PYTHONPATH": str(packages)},
        cwd=packages,
    )


def remembered(config: MCPServerConfig, tmp_path: Path) -> RememberedToolList:
    assert config.command is not None
    found = RememberedToolList.for_python_server(
        config.command, cwd=config.cwd, folder=tmp_path / "cache"
    )
    assert found is not None
    return found


async def test_first_start_waits_and_remembers_the_next_is_offered_at_once(
    server: MCPServerConfig, tmp_path: Path
) -> None:
    memory = remembered(server, tmp_path)
    assert memory.recall() is None
    async with EarlyToolSource(MCPToolSource(server), memory) as first:
        assert [t.name for t in first.tools] == ["add", "echo"]
        assert await first.tools[0].invoke({"a": 2, "b": 3}) == "5"
    kept = json.loads(memory.path.read_text())["tools"]
    assert [t["name"] for t in kept] == ["add", "echo"]
    assert kept[0]["parameters"]["required"] == ["a", "b"]

    early = EarlyToolSource(MCPToolSource(server), memory)
    async with early as second:
        assert early._opening is not None and not early._opening.done()  # not waited for
        assert [(t.name, t.description) for t in second.tools] == [
            (t["name"], t["description"]) for t in kept
        ]
        # A call waits for the server, then goes to it.
        assert await second.tools[0].invoke({"a": 20, "b": 22}) == "42"
        assert await second.tools[1].invoke({"text": "hi"}) == "hi"


async def test_a_list_that_changed_is_brought_in_line_and_remembered(
    server: MCPServerConfig, tmp_path: Path
) -> None:
    memory = remembered(server, tmp_path)
    async with EarlyToolSource(MCPToolSource(server), memory):
        pass
    stale = json.loads(memory.path.read_text())["tools"]
    stale[1]["description"] = "an old description"
    memory.remember(stale)
    early = EarlyToolSource(MCPToolSource(server), memory)
    async with early as entered:
        echo = entered.tools[1]
        assert echo.description == "an old description"  # offered before the server answered
        assert await echo.invoke({"text": "x"}) == "x"
        assert early._opening is not None
        await asyncio.wait({early._opening})
        await asyncio.sleep(0)  # the comparison runs as the opening's done-callback
        assert echo.description == "Return the text unchanged."
    assert json.loads(memory.path.read_text())["tools"][1]["description"] == (
        "Return the text unchanged."
    )


async def test_an_opening_error_is_raised_by_the_first_call(
    server: MCPServerConfig, tmp_path: Path
) -> None:
    memory = remembered(server, tmp_path)
    async with EarlyToolSource(MCPToolSource(server), memory):
        pass
    # The same command line, but the server cannot start (its package is not on its path).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    broken = server.model_copy(update={"env": {"PYTHONPATH": str(elsewhere)}, "cwd": elsewhere})
    async with EarlyToolSource(MCPToolSource(broken), memory) as entered:
        with pytest.raises(Exception, match=r"remember.srv|remember-test|exited|closed"):
            await entered.tools[0].invoke({"a": 1, "b": 2})


def test_the_fingerprint_follows_the_server_code_and_command(
    server: MCPServerConfig, tmp_path: Path
) -> None:
    assert server.command is not None
    before = remembered(server, tmp_path).path
    assert remembered(server, tmp_path).path == before  # stable
    write_server(tmp_path / "packages", description="Echo the text back.")
    changed = remembered(server, tmp_path).path
    assert changed != before
    other_args = RememberedToolList.for_python_server(
        [*server.command, "--flag"], cwd=server.cwd, folder=tmp_path / "cache"
    )
    assert other_args is not None and other_args.path not in (before, changed)


def test_only_python_module_servers_are_remembered(tmp_path: Path) -> None:
    for command in (["/usr/bin/some-server"], ["python3", "-m", "x"], [sys.executable, "x.py"]):
        assert RememberedToolList.for_python_server(command, folder=tmp_path) is None


def test_a_file_that_is_not_a_tool_list_is_not_recalled(tmp_path: Path) -> None:
    memory = RememberedToolList(tmp_path / "list.json")
    for text in ("not json", "[]", '{"tools": [{"description": "no name"}]}'):
        memory.path.write_text(text)
        assert memory.recall() is None
    memory.remember([{"name": "a", "description": "", "parameters": {}, "title": None}])
    assert memory.recall() == [{"name": "a", "description": "", "parameters": {}, "title": None}]
