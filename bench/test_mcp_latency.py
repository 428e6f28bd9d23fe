"""MCP latency: server start + handshake, and per-call cost, stdio vs streamable HTTP.

loopkit's ``MCPClient`` is measured beside the bare ``mcp`` SDK ``Client`` on the same server, so
the ratio is loopkit's own overhead; an in-process SDK call is printed for scale. Prints figures,
asserts nothing about speed, but checks every answer: each call echoes its own text and must come
back a success with exactly that text (timing error answers would measure nothing). Run: ``.venv/bin/nox -s bench -- bench/test_mcp_latency.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from loopkit.mcp import MCPClient

SERVER = Path(__file__).parents[1] / "tests" / "mcp_client" / "servers" / "tool_server.py"
STARTS = 5
CALLS = 300


@asynccontextmanager
async def _http_server() -> AsyncIterator[str]:
    process = subprocess.Popen(  # noqa: ASYNC220 (a benchmark; blocking for a moment is fine)
        [sys.executable, str(SERVER), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)


def _sdk_text(result: Any) -> str:
    """The text of a bare-SDK ``CallToolResult``, which must be a success."""
    assert not result.is_error, result
    return "".join(getattr(block, "text", "") for block in result.content)


async def _per_call_ms(
    call: Callable[[str], Awaitable[Any]], text_of: Callable[[Any], str]
) -> float:
    """Milliseconds per ``call(text)``. Every answer is checked (a success that echoes this
    call's own text): timing errors or someone else's answers would measure nothing."""
    checked = 0

    async def checked_call(number: int) -> None:
        nonlocal checked
        text = f"echo {number}"
        answer = text_of(await call(text))
        assert answer == text, f"call {number} answered {answer!r}, expected {text!r}"
        checked += 1

    for number in range(20):  # warm-up
        await checked_call(number)
    start = time.perf_counter()
    for number in range(CALLS):
        await checked_call(number)
    elapsed = time.perf_counter() - start
    assert checked == CALLS + 20
    return elapsed / CALLS * 1000


def _row(label: str, value: float, unit: str, base: float | None = None) -> None:
    ratio = f"  ({value / base:.2f}x the bare SDK)" if base else ""
    print(f"  {label:<50} {value:8.2f} {unit}{ratio}")


@pytest.mark.integration
async def test_mcp_latency() -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
    sdk_starts, lk_starts, lk_closes = [], [], []
    for _ in range(STARTS):
        t = time.perf_counter()
        async with Client(params) as c:
            sdk_starts.append(time.perf_counter() - t)
            assert "echo" in {tool.name for tool in (await c.list_tools()).tools}
        t = time.perf_counter()
        client = MCPClient.stdio(sys.executable, [str(SERVER), "stdio"])
        await client.connect()
        lk_starts.append(time.perf_counter() - t)
        assert "echo" in {tool.name for tool in await client.list_tools()}
        t = time.perf_counter()
        await client.aclose()
        lk_closes.append(time.perf_counter() - t)

    def plain(answer: Any) -> str:  # MCPTool.invoke answers text and raises on an error
        assert isinstance(answer, str), answer
        return answer

    async with Client(params) as c:
        sdk_stdio = await _per_call_ms(lambda x: c.call_tool("echo", {"text": x}), _sdk_text)
    async with MCPClient.stdio(sys.executable, [str(SERVER), "stdio"]) as s:
        echo = {t.name: t for t in await s.list_tools()}["echo"]
        lk_stdio = await _per_call_ms(lambda x: echo.invoke({"text": x}), plain)
    async with _http_server() as url:
        async with Client(url) as c:
            sdk_http = await _per_call_ms(lambda x: c.call_tool("echo", {"text": x}), _sdk_text)
        async with MCPClient.http(url) as s:
            echo = {t.name: t for t in await s.list_tools()}["echo"]
            lk_http = await _per_call_ms(lambda x: echo.invoke({"text": x}), plain)

    spec = importlib.util.spec_from_file_location("bench_tool_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    async with Client(module.server) as c:
        in_process = await _per_call_ms(lambda x: c.call_tool("echo", {"text": x}), _sdk_text)

    sdk_start, lk_start = statistics.median(sdk_starts) * 1000, statistics.median(lk_starts) * 1000
    print(f"\nMCP latency (median of {STARTS} starts; {CALLS} calls of `echo` each, every "
          "answer checked: a success echoing its own call's text)")  # fmt: skip
    _row("stdio start + handshake, bare SDK Client", sdk_start, "ms")
    _row("stdio start + handshake, loopkit MCPClient", lk_start, "ms", sdk_start)
    _row("stdio close, loopkit MCPClient", statistics.median(lk_closes) * 1000, "ms")
    _row("call over stdio, bare SDK", sdk_stdio, "ms")
    _row("call over stdio, loopkit MCPTool.invoke", lk_stdio, "ms", sdk_stdio)
    _row("call over streamable HTTP, bare SDK", sdk_http, "ms")
    _row("call over streamable HTTP, loopkit MCPTool.invoke", lk_http, "ms", sdk_http)
    _row("call in process, bare SDK (for scale)", in_process, "ms")
