"""The MCP client against a real MCP server under uvicorn on 127.0.0.1 (streamable HTTP)."""

from __future__ import annotations

import asyncio

import pytest

from loopkit.abstractions import ToolError
from loopkit.errors import MCPServerError
from loopkit.mcp import MCPClient
from tests.ports import closed_port

from .conftest import HttpServer

pytestmark = pytest.mark.integration


async def test_lists_tools_and_calls_return_plain_text(http_server: HttpServer) -> None:
    async with MCPClient.http(http_server.url) as server:
        tools = {t.name: t for t in await server.list_tools()}
        assert tools["echo"].parameters["properties"]["text"]["type"] == "string"
        assert await tools["echo"].invoke({"text": 'a "quoted"\nline'}) == 'a "quoted"\nline'
        assert await tools["add"].invoke({"a": 20, "b": 22}) == "42"
        assert len((await tools["long_text"].invoke({"lines": 2000})).split("\n")) == 2000
        with pytest.raises(ToolError, match="quota exceeded"):
            await tools["fail"].invoke({"reason": "quota exceeded"})


async def test_headers_reach_the_server(http_server: HttpServer) -> None:
    headers = {"Authorization": "Bearer t0ken", "X-Loopkit-Test": "yes"}
    async with MCPClient.http(http_server.url, headers=headers) as server:
        tools = {t.name: t for t in await server.list_tools()}
        assert await tools["header"].invoke({"name": "x-loopkit-test"}) == "yes"
        assert await tools["header"].invoke({"name": "authorization"}) == "Bearer t0ken"


async def test_hanging_tool_raises_after_the_call_timeout(http_server: HttpServer) -> None:
    async with MCPClient.http(http_server.url, call_timeout=1.0) as server:
        tools = {t.name: t for t in await server.list_tools()}
        with pytest.raises(MCPServerError, match=r"did not answer tool 'sleep' within 1 s"):
            await tools["sleep"].invoke({"seconds": 60})
        assert await tools["echo"].invoke({"text": "after"}) == "after"


async def test_server_that_dies_mid_call_is_a_clear_error(http_server: HttpServer) -> None:
    async with MCPClient.http(http_server.url, call_timeout=60) as server:
        tools = {t.name: t for t in await server.list_tools()}
        with pytest.raises(MCPServerError, match="closed the connection during tool 'die'"):
            await tools["die"].invoke({})
        assert http_server.process.wait(timeout=10) != 0
        # The next request finds nobody listening: a clear error, not a hang.
        with pytest.raises(MCPServerError, match=f"127.0.0.1:{http_server.port}/mcp"):
            await asyncio.wait_for(tools["echo"].invoke({"text": "hello?"}), timeout=60)


async def test_unreachable_url_is_a_clear_error_without_secrets() -> None:
    with closed_port() as port, pytest.raises(MCPServerError) as failed:  # nobody listens there
        url = f"http://user:hunter2@127.0.0.1:{port}/mcp?token=hunter2"
        async with MCPClient.http(url, headers={"Authorization": "Bearer hunter2"}):
            pass
    message = str(failed.value)
    assert f"http://127.0.0.1:{port}/mcp" in message
    assert "ConnectError" in message
    assert "hunter2" not in message


def test_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPClient.http("ftp://example.org/mcp")
