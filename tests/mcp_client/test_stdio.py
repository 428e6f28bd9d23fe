"""The MCP client against a real MCP server in a child process, over stdio."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from loopkit.abstractions import Tool, ToolError
from loopkit.errors import MCPServerError
from loopkit.mcp import MCPClient, MCPTool

from .helpers import process_state, stdio_server

pytestmark = pytest.mark.integration


async def _tools(server: MCPClient, prefix: str | None = None) -> dict[str, MCPTool]:
    return {t.name: t for t in await server.list_tools(prefix=prefix)}


async def test_lists_tools_with_their_schemas() -> None:
    async with stdio_server() as server:
        tools = await _tools(server)
        assert {"echo", "add", "fail", "sleep", "die", "long_text", "pid"} <= set(tools)
        echo = tools["echo"]
        assert isinstance(echo, Tool)
        assert echo.description == "Return the text unchanged."
        assert echo.parameters["type"] == "object"
        assert echo.parameters["properties"]["text"]["type"] == "string"
        assert echo.parameters["required"] == ["text"]
        assert tools["add"].parameters["properties"]["b"]["type"] == "integer"
        assert tools["pid"].parameters["properties"] == {}
        assert server.server_name == "loopkit-test-server"
        assert server.instructions == "Tools for loopkit's MCP client tests."


async def test_results_are_plain_text_not_json() -> None:
    async with stdio_server() as server:
        tools = await _tools(server)
        quoted = 'he said "hi"\nand left \\ quietly'
        assert await tools["echo"].invoke({"text": quoted}) == quoted
        assert await tools["add"].invoke({"a": 2, "b": 3}) == "5"
        assert await tools["two_blocks"].invoke({}) == (
            'first "block"\nsecond block\n[image: image/png, 8 bytes, not shown]'
        )
        assert await tools["structured_only"].invoke({}) == '{"answer":42,"names":["a","b"]}'
        long = await tools["long_text"].invoke({"lines": 3000})
        lines = long.split("\n")
        assert len(lines) == 3000
        assert lines[2999] == 'line 2999: "quoted" \\ back-slashed'


async def test_is_error_result_raises_tool_error_with_the_server_text() -> None:
    async with stdio_server() as server:
        tools = await _tools(server)
        with pytest.raises(ToolError, match="disk is full"):
            await tools["fail"].invoke({"reason": "disk is full"})
        # Arguments the server rejects are an is_error result too: the model reads why.
        with pytest.raises(ToolError, match="validation error"):
            await tools["add"].invoke({"a": "x"})
        # The connection is fine afterwards.
        assert await tools["echo"].invoke({"text": "still here"}) == "still here"


async def test_prefix_renames_tools_but_calls_the_server_name() -> None:
    async with stdio_server(tool_prefix="calc_") as server:
        tools = await _tools(server)
        assert "calc_add" in tools and "add" not in tools
        assert tools["calc_add"].server_tool_name == "add"
        assert await tools["calc_add"].invoke({"a": 1, "b": 1}) == "2"
        assert "x_echo" in await _tools(server, prefix="x_")


async def test_hanging_tool_raises_after_the_call_timeout_and_the_server_stays_usable() -> None:
    async with stdio_server(call_timeout=1.0) as server:
        tools = await _tools(server)
        with pytest.raises(MCPServerError, match=r"did not answer tool 'sleep' within 1 s"):
            await tools["sleep"].invoke({"seconds": 60})
        assert await tools["echo"].invoke({"text": "next"}) == "next"
        # A per-call override of the timeout.
        result = await server.call_tool("sleep", {"seconds": 0.2}, call_timeout=5)
        assert result.content[0].text == "slept 0.2"  # type: ignore[union-attr]


async def test_server_that_dies_mid_call_is_a_clear_error_with_its_stderr() -> None:
    async with stdio_server(call_timeout=60) as server:
        tools = await _tools(server)
        pid = int(await tools["pid"].invoke({}))
        with pytest.raises(MCPServerError) as died:
            await tools["die"].invoke({"message": "fatal: out of widgets"})
        message = str(died.value)
        assert "closed the connection during tool 'die'" in message
        assert "tool_server.py" in message  # names the server
        assert "fatal: out of widgets" in message  # the last lines of its stderr
        with pytest.raises(MCPServerError, match="no longer connected"):
            await tools["echo"].invoke({"text": "anyone?"})
        assert not server.is_connected
    assert process_state(pid) is None


async def test_server_killed_from_outside_during_a_call_fails_the_call_not_by_timeout() -> None:
    async with stdio_server(call_timeout=120) as server:
        tools = await _tools(server)
        pid = int(await tools["pid"].invoke({}))
        call = asyncio.create_task(tools["sleep"].invoke({"seconds": 100}))
        await asyncio.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(MCPServerError, match="closed the connection during tool 'sleep'"):
            await asyncio.wait_for(call, timeout=30)  # the guard; the error comes at once
    assert process_state(pid) is None


async def test_close_leaves_no_child_process() -> None:
    async with stdio_server() as server:
        pid = int(await (await _tools(server))["pid"].invoke({}))
        assert process_state(pid) not in (None, "Z")
    assert process_state(pid) is None
    with pytest.raises(MCPServerError, match="is closed"):
        await server.call_tool("echo", {"text": "late"})


async def test_close_after_a_cancelled_call_and_a_hung_tool_leaves_no_child() -> None:
    async with stdio_server() as server:
        tools = await _tools(server)
        pid = int(await tools["pid"].invoke({}))
        call = asyncio.create_task(tools["sleep"].invoke({"seconds": 100}))
        await asyncio.sleep(0.3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # Another call is still running in the server when we close.
        running = asyncio.create_task(tools["sleep"].invoke({"seconds": 100}))
        await asyncio.sleep(0.2)
    assert process_state(pid) is None
    with pytest.raises(MCPServerError, match="was closed while tool 'sleep' was running"):
        await asyncio.wait_for(running, timeout=30)


async def test_cancelling_the_task_that_holds_the_connection_stops_the_child() -> None:
    pids: list[int] = []
    started = asyncio.Event()

    async def use_server() -> None:
        async with stdio_server() as server:
            pids.append(int(await (await _tools(server))["pid"].invoke({})))
            started.set()
            await server.call_tool("sleep", {"seconds": 100})

    task = asyncio.create_task(use_server())
    await asyncio.wait_for(started.wait(), timeout=60)
    await asyncio.sleep(0.2)  # let the sleep call reach the server
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert process_state(pids[0]) is None


async def test_connection_opened_in_one_task_can_be_closed_in_another() -> None:
    server = stdio_server()
    await asyncio.create_task(server.connect())
    pid = int(await (await _tools(server))["pid"].invoke({}))
    await asyncio.create_task(server.aclose())
    assert process_state(pid) is None
    await server.aclose()  # twice is fine


async def test_server_stderr_is_captured_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    async with stdio_server() as server:
        with pytest.raises(ToolError):
            await (await _tools(server))["fail"].invoke({"reason": "noisy"})
        tail = server.stderr_tail()
    assert "loopkit test server starting (stdio)" in tail
    assert "loopkit test server starting" not in capfd.readouterr().err


async def test_environment_is_not_inherited_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPKIT_TEST_SETTING", "plain")
    monkeypatch.setenv("DISPLAY", ":77")
    async with stdio_server(env={"LOOPKIT_GIVEN": "yes"}) as server:
        tools = await _tools(server)
        assert await tools["getenv"].invoke({"name": "LOOPKIT_GIVEN"}) == "yes"
        assert await tools["getenv"].invoke({"name": "LOOPKIT_TEST_SETTING"}) == "(unset)"
        assert await tools["getenv"].invoke({"name": "DISPLAY"}) == "(unset)"
    async with stdio_server(inherit_env=True, env={"LOOPKIT_GIVEN": "too"}) as server:
        tools = await _tools(server)
        assert await tools["getenv"].invoke({"name": "LOOPKIT_TEST_SETTING"}) == "plain"
        assert await tools["getenv"].invoke({"name": "DISPLAY"}) == ":77"
        assert await tools["getenv"].invoke({"name": "LOOPKIT_GIVEN"}) == "too"


SECRET_VARIABLES = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Mc9" * 30,
    "OPENAI_API_KEY": "sk-proj-" + "Mc7" * 16,
    "MY_SERVICE_TOKEN": "service-token-mcp-42",
    "GITHUB_PAT": "github_pat_" + "Mc1" * 25,
    "LOOPKIT_TEST_SECRET": "s3cret-but-loopkit-named",
}


async def test_inherit_env_never_passes_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's UI server runs with inherit_env=True: it must not see the provider key."""
    for name, value in SECRET_VARIABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    async with stdio_server(inherit_env=True) as server:
        getenv = (await _tools(server))["getenv"]
        seen = {name: await getenv.invoke({"name": name}) for name in SECRET_VARIABLES}
        assert await getenv.invoke({"name": "QT_QPA_PLATFORM"}) == "xcb"
        assert await getenv.invoke({"name": "PATH"}) == os.environ["PATH"]
    leaked = [name for name, value in seen.items() if value != "(unset)"]
    print(f"MCP server: secret variables tried {len(SECRET_VARIABLES)}, leaked {len(leaked)}")
    assert leaked == []


async def test_env_passthrough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_APP_MODE", "fast")
    monkeypatch.setenv("MY_APP_TOKEN", "pattern-is-not-enough")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "named-exactly")
    for inherit in (False, True):
        async with stdio_server(
            inherit_env=inherit, env_passthrough=["MY_APP_*", "MY_SERVICE_TOKEN"]
        ) as server:
            getenv = (await _tools(server))["getenv"]
            assert await getenv.invoke({"name": "MY_APP_MODE"}) == "fast"
            assert await getenv.invoke({"name": "MY_APP_TOKEN"}) == "(unset)"
            assert await getenv.invoke({"name": "MY_SERVICE_TOKEN"}) == "named-exactly"
            assert await getenv.invoke({"name": "HOME"}) == os.environ["HOME"]


async def test_nonexistent_command_is_a_clear_error_naming_it() -> None:
    with pytest.raises(MCPServerError, match=r"no-such-mcp-server-xyz.*not found on PATH"):
        async with MCPClient.stdio("no-such-mcp-server-xyz", ["--flag"]):
            pass
    with pytest.raises(MCPServerError, match=r"'\./missing/server\.sh' does not exist"):
        async with MCPClient.stdio("./missing/server.sh"):
            pass


async def test_command_that_exits_at_once_reports_its_stderr() -> None:
    script = "import sys; sys.stderr.write('config.toml: no such file\\n'); sys.exit(3)"
    with pytest.raises(MCPServerError) as failed:
        async with MCPClient.stdio(sys.executable, ["-c", script]):
            pass
    assert "during the MCP handshake" in str(failed.value)
    assert "config.toml: no such file" in str(failed.value)


async def test_command_that_never_answers_hits_the_startup_timeout_and_is_stopped(
    tmp_path: os.PathLike[str],
) -> None:
    pid_file = os.path.join(tmp_path, "pid")
    script = f"import os, time; open({pid_file!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    with pytest.raises(MCPServerError, match=r"did not finish starting .* within 1 s"):
        async with MCPClient.stdio(sys.executable, ["-c", script], startup_timeout=1):
            pass
    pid = int(Path(pid_file).read_text())  # noqa: ASYNC240 (a tiny local file)
    assert process_state(pid) is None


def test_bad_arguments_are_rejected_before_starting_anything() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        MCPClient.stdio("python", "server.py")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="call_timeout must be a positive"):
        MCPClient.stdio("python", call_timeout=0)
