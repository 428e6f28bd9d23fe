"""A Python server started before its command line is known (``WaitingPythonServer``): the
client runs a matching command in it (arguments, environment and stderr as a spawned one gets
them), spawns any other command as always, also from a child forked after the start, and
nothing is left running however it ends."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from loopkit.errors import MCPServerError
from loopkit.mcp import MCPClient, WaitingPythonServer

from .helpers import SERVER_SCRIPT, process_state

pytestmark = pytest.mark.integration


def _start() -> WaitingPythonServer:
    waiting = WaitingPythonServer.start([str(SERVER_SCRIPT)], preload=["mcp"])
    assert waiting is not None
    return waiting


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process_state(pid) in (None, "Z"):
            return True
        time.sleep(0.02)
    return False


def _client(waiting: WaitingPythonServer, *args: str, **kwargs: object) -> MCPClient:
    return MCPClient.stdio(
        sys.executable,
        [str(SERVER_SCRIPT), *args],
        prestarted=waiting,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_matching_command_runs_in_the_waiting_server() -> None:
    waiting = _start()

    async def use() -> tuple[int, str, str, str]:
        async with _client(waiting, "stdio", env={"GREETING": "hello"}) as server:
            tools = {t.name: t for t in await server.list_tools()}
            pid = int(await tools["pid"].invoke({}))
            greeting = await tools["getenv"].invoke({"name": "GREETING"})
            echoed = await tools["echo"].invoke({"text": "hi"})
            return pid, greeting, echoed, server.stderr_tail()

    try:
        pid, greeting, echoed, stderr = asyncio.run(use())
    finally:
        waiting.close()
    assert pid == waiting.pid and waiting.used
    assert (greeting, echoed) == ("hello", "hi")
    # Its stderr went to the client's capture from the handover on.
    assert "loopkit test server starting (stdio)" in stderr
    assert _gone(waiting.pid)


def test_another_command_is_spawned_and_the_waiting_server_is_ended() -> None:
    waiting = _start()

    async def use() -> int:
        # Interpreter options before the script: not the waiting server's command.
        client = MCPClient.stdio(
            sys.executable, ["-X", "utf8", str(SERVER_SCRIPT), "stdio"], prestarted=waiting
        )
        async with client as server:
            tools = {t.name: t for t in await server.list_tools()}
            return int(await tools["pid"].invoke({}))

    try:
        pid = asyncio.run(use())
        assert pid != waiting.pid and not waiting.used
    finally:
        waiting.close()
    assert _gone(waiting.pid, within=1.0)  # ended at once: it never ran anything


def test_a_waiting_server_is_used_once() -> None:
    waiting = _start()

    async def use() -> list[int]:
        pids = []
        for _ in range(2):
            async with _client(waiting, "stdio") as server:
                tools = {t.name: t for t in await server.list_tools()}
                pids.append(int(await tools["pid"].invoke({})))
        return pids

    try:
        first, second = asyncio.run(use())
    finally:
        waiting.close()
    assert first == waiting.pid and second != waiting.pid


def test_a_server_that_dies_after_the_handover_is_reported_with_its_stderr() -> None:
    waiting = _start()

    async def use() -> str:
        async with _client(waiting, "stdio") as server:
            tools = {t.name: t for t in await server.list_tools()}
            with pytest.raises(MCPServerError) as caught:
                await tools["die"].invoke({"message": "gone for good"})
            return str(caught.value)

    try:
        message = asyncio.run(use())
    finally:
        waiting.close()
    assert "gone for good" in message
    assert _gone(waiting.pid)


def test_a_child_forked_after_the_start_uses_it_and_nothing_is_left() -> None:
    waiting = _start()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the demo's run forked on its desktop
        status = 1
        try:
            os.close(read_fd)

            async def use() -> str:
                async with _client(waiting, "stdio") as server:
                    tools = {t.name: t for t in await server.list_tools()}
                    return f"{await tools['pid'].invoke({})} {await tools['add'].invoke({'a': 2, 'b': 3})}"

            os.write(write_fd, asyncio.run(use()).encode())
            waiting.close()
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    waiting.forked()  # the parent's ends of the pipes: the child's now
    _, status = os.waitpid(pid, 0)
    answer = os.read(read_fd, 100).decode()
    os.close(read_fd)
    waiting.close()
    assert os.waitstatus_to_exitcode(status) == 0
    assert answer == f"{waiting.pid} 5"
    assert process_state(waiting.pid) is None  # ended and reaped


def test_an_unused_waiting_server_is_ended_and_reaped() -> None:
    waiting = _start()
    waiting.close()
    assert process_state(waiting.pid) is None
    waiting.close()  # twice is fine
