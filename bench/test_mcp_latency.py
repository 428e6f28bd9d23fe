"""MCP latency: server start + handshake, and per-call cost, stdio vs streamable HTTP.

loopkit's ``MCPClient`` is measured beside the bare ``mcp`` SDK ``Client`` on the same server, so
the ratio is loopkit's own overhead; an in-process SDK call is printed for scale. Prints figures,
asserts nothing about speed. Run: ``.venv/bin/nox -s bench -- bench/test_mcp_latency.py``.
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


async def _per_call_ms(call: Callable[[], Awaitable[Any]]) -> float:
    for _ in range(20):  # warm-up
        await call()
    start = time.perf_counter()
    for _ in range(CALLS):
        await call()
    return (time.perf_counter() - start) / CALLS * 1000


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
            await c.list_tools()
        t = time.perf_counter()
        client = MCPClient.stdio(sys.executable, [str(SERVER), "stdio"])
        await client.connect()
        lk_starts.append(time.perf_counter() - t)
        await client.list_tools()
        t = time.perf_counter()
        await client.aclose()
        lk_closes.append(time.perf_counter() - t)

    async with Client(params) as c:
        sdk_stdio = await _per_call_ms(lambda: c.call_tool("echo", {"text": "x"}))
    async with MCPClient.stdio(sys.executable, [str(SERVER), "stdio"]) as s:
        echo = {t.name: t for t in await s.list_tools()}["echo"]
        lk_stdio = await _per_call_ms(lambda: echo.invoke({"text": "x"}))
    async with _http_server() as url:
        async with Client(url) as c:
            sdk_http = await _per_call_ms(lambda: c.call_tool("echo", {"text": "x"}))
        async with MCPClient.http(url) as s:
            echo = {t.name: t for t in await s.list_tools()}["echo"]
            lk_http = await _per_call_ms(lambda: echo.invoke({"text": "x"}))

    spec = importlib.util.spec_from_file_location("bench_tool_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    async with Client(module.server) as c:
        in_process = await _per_call_ms(lambda: c.call_tool("echo", {"text": "x"}))

    sdk_start, lk_start = statistics.median(sdk_starts) * 1000, statistics.median(lk_starts) * 1000
    print(f"\nMCP latency (median of {STARTS} starts; {CALLS} calls of `echo` each)")
    _row("stdio start + handshake, bare SDK Client", sdk_start, "ms")
    _row("stdio start + handshake, loopkit MCPClient", lk_start, "ms", sdk_start)
    _row("stdio close, loopkit MCPClient", statistics.median(lk_closes) * 1000, "ms")
    _row("call over stdio, bare SDK", sdk_stdio, "ms")
    _row("call over stdio, loopkit MCPTool.invoke", lk_stdio, "ms", sdk_stdio)
    _row("call over streamable HTTP, bare SDK", sdk_http, "ms")
    _row("call over streamable HTTP, loopkit MCPTool.invoke", lk_http, "ms", sdk_http)
    _row("call in process, bare SDK (for scale)", in_process, "ms")
