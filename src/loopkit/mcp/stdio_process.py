"""A stdio MCP server started before the ``mcp`` SDK is imported, and the transport over it.

``import mcp`` costs most of a second, and a server (a Python process importing the SDK in its
turn) takes about as long to start. The SDK's own stdio transport spawns the server only once
the SDK is imported, so the two add up. :func:`spawn_stdio_server` starts the child with asyncio
alone; :func:`process_transport` then speaks MCP over its pipes once the SDK is there (an MCP
transport is any async context manager that yields the SDK's read and write streams), so the
server starts while this process imports the SDK.

The transport does what the SDK's stdio transport does: one JSON-RPC message a line each way,
the child in its own session (process group), and on close: stdin closed, a grace period, then
SIGTERM and SIGKILL to the whole group, shielded from cancellation so no server outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = [
    "SDK_DEFAULT_ENV_VARS",
    "ServerProcess",
    "process_transport",
    "sdk_default_environment",
    "spawn_stdio_server",
]

#: What the SDK's stdio transport passes to a server by default (``mcp.client.stdio``'s
#: ``DEFAULT_INHERITED_ENV_VARS``; a test keeps the two equal).
SDK_DEFAULT_ENV_VARS = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)

# As the SDK: seconds for the server to exit after its stdin closes, then after SIGTERM.
_EXIT_GRACE = 2.0
_TERM_GRACE = 2.0
_READ_CHUNK = 65536


class ServerProcess(Protocol):
    """What the transport needs of a started server: an ``asyncio.subprocess.Process`` or a
    :class:`~loopkit.mcp.waiting_server.AdoptedProcess`."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...


def sdk_default_environment() -> dict[str, str]:
    """The variables the SDK passes to a stdio server by default (no shell functions)."""
    return {
        k: v
        for k in SDK_DEFAULT_ENV_VARS
        if (v := os.environ.get(k)) is not None and not v.startswith("()")
    }


async def spawn_stdio_server(
    command: str,
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: TextIO,
) -> asyncio.subprocess.Process:
    """Start ``command`` with pipes on stdin and stdout, stderr to ``errlog``, in its own
    session (so closing can end its whole process group). Raises ``OSError`` when it cannot
    start."""
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )


@asynccontextmanager
async def process_transport(process: ServerProcess) -> AsyncIterator[Any]:
    """The SDK's read and write streams over a started server's pipes (the SDK is imported
    first, in a worker thread); leaving stops the server (stdin closed, then SIGTERM, then
    SIGKILL to its group) and reaps it, also when that import fails or is cancelled."""
    try:
        # In a worker thread: the event loop runs on (the caller's other start-up work) while
        # the server starts and the SDK loads.
        await asyncio.to_thread(importlib.import_module, "mcp")
    except BaseException:
        await _finish(_stop(process))
        raise
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        delivering = True
        async with read_send:
            buffer = b""
            while chunk := await stdout.read(_READ_CHUNK):
                if not delivering:
                    continue  # drain: a server blocked writing its stdout would never exit
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    message: SessionMessage | Exception
                    try:
                        parsed = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                        message = SessionMessage(parsed)
                    except ValueError as e:  # the session reports it, as with the SDK's
                        message = e
                    try:
                        await read_send.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        delivering = False  # the session is gone
                        break

    async def write_lines() -> None:
        try:
            async with write_receive:
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the session's reads too, so a request in flight
            # sees the connection close instead of waiting for an answer that cannot come.
            await read_send.aclose()

    tasks = [
        asyncio.create_task(read_lines(), name="mcp stdio reader"),
        asyncio.create_task(write_lines(), name="mcp stdio writer"),
    ]
    try:
        yield read_receive, write_send
    finally:
        # Closing must finish even when the caller is cancelled, or the server would outlive us.
        await _finish(_close(process, tasks, read_receive, write_send))


async def _finish(closing: Coroutine[Any, Any, None]) -> None:
    """Run ``closing`` to its end even when this task is cancelled meanwhile (bounded: every
    wait inside has a timeout); the cancellation is raised after it."""
    task = asyncio.ensure_future(closing)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError


async def _close(
    process: ServerProcess,
    tasks: list[asyncio.Task[None]],
    *streams: Any,
) -> None:
    for stream in streams:
        await stream.aclose()
    await _stop(process)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _stop(process: ServerProcess) -> None:
    """Close the server's stdin (MCP's shutdown), then SIGTERM, then SIGKILL its group."""
    assert process.stdin is not None
    with contextlib.suppress(OSError):
        process.stdin.close()
    if not await _exited(process, _EXIT_GRACE):
        _signal_group(process.pid, signal.SIGTERM)
        if not await _exited(process, _TERM_GRACE):
            _signal_group(process.pid, signal.SIGKILL)
            await _exited(process, _TERM_GRACE)


async def _exited(process: ServerProcess, within: float) -> bool:
    # The return code, not process.wait(): that also waits for the pipes to close, which a
    # grandchild holding them (an app the server launched) would delay.
    deadline = asyncio.get_running_loop().time() + within
    while process.returncode is None:
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
