"""An agent as an MCP tool (``python -m loopkit.interop.mcp_server``), called by clients nobody
here wrote: the MCP Inspector's CLI (npm, over stdio and over HTTP with the bearer token) and
pydantic-ai's MCP client (``MCPToolset``, on fastmcp); progress notifications, one per round,
through the ``mcp`` SDK's own client; bad input on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from .conftest import CLIENTS, ROOT

pytestmark = pytest.mark.integration

SERVER = [sys.executable, "-m", "loopkit.interop.mcp_server"]
INVOICER = [
    "tests.interop.agents:invoice_agent",
    "--input-type",
    "tests.interop.agents:InvoiceRequest",
]
# The Inspector CLI (v1) imports its package.json relative to the *working directory*
# ("../package.json"), so it runs from its build folder; the server command then gets the
# repository on PYTHONPATH through env (the SDK's stdio transport passes no environment).
INSPECTOR_DIR = CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"


def inspector(node: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([node, "index.js", *args], cwd=INSPECTOR_DIR, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, f"the Inspector CLI failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def stdio_target() -> list[str]:
    return ["/usr/bin/env", f"PYTHONPATH={ROOT}", *SERVER, *INVOICER]


def check_invoice_tool(tools: list[dict[str, Any]], result: dict[str, Any]) -> None:
    [tool] = tools
    assert tool["name"] == "invoicer"
    assert tool["inputSchema"]["required"] == ["customer", "amounts"]
    assert tool["outputSchema"]["title"] == "Invoice"
    assert result["isError"] is False
    assert result["structuredContent"] == {"customer": "ACME", "total": 33.0, "lines": 2}
    jsonschema.Draft202012Validator(tool["outputSchema"]).validate(result["structuredContent"])
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_the_inspector_cli_over_stdio(node: str) -> None:
    listed = inspector(node, *stdio_target(), "--method", "tools/list")
    called = inspector(node, *stdio_target(), "--method", "tools/call", "--tool-name", "invoicer",
                       "--tool-arg", "customer=ACME", "amounts=[10, 20]")  # fmt: skip
    check_invoice_tool(listed["tools"], called)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    token_file = tmp_path / "token"
    token_file.write_text("a-test-token-of-enough-length-123\n")
    token_file.chmod(0o600)
    process = subprocess.Popen([*SERVER, *INVOICER, "--http", "127.0.0.1:0", "--token-file", str(token_file)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "MCP server on http://127.0.0.1:" in line, (
        line,
        process.stderr.read() if process.stderr else "",
    )
    url = line.split(" on ", 1)[1].strip()
    try:
        yield url, "a-test-token-of-enough-length-123"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_inspector_cli_over_http_with_the_token(
    node: str, http_server: tuple[str, str]
) -> None:
    url, token = http_server
    auth = ["--transport", "http", "--header", f"Authorization: Bearer {token}"]
    listed = inspector(node, url, *auth, "--method", "tools/list")
    called = inspector(node, url, *auth, "--method", "tools/call", "--tool-name", "invoicer",
                       "--tool-arg", "customer=ACME", "amounts=[10, 20]")  # fmt: skip
    check_invoice_tool(listed["tools"], called)
    # Without the token, or with a Host that is not the bound address: refused.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(url, json=body, headers=headers).status_code == 401
    wrong_host = {**headers, "Authorization": f"Bearer {token}", "Host": "evil.example:80"}
    assert httpx.post(url, json=body, headers=wrong_host).status_code in (403, 421)


async def test_pydantic_ais_mcp_client(http_server: tuple[str, str]) -> None:
    from pydantic_ai.mcp import MCPToolset

    url, token = http_server
    toolset = MCPToolset(url, headers={"Authorization": f"Bearer {token}"}, init_timeout=60)
    async with toolset:
        tools = await toolset.list_tools()
        assert [t.name for t in tools] == ["invoicer"]
        result = await toolset.direct_call_tool(
            "invoicer", {"customer": "ACME", "amounts": [10, 20]}
        )
    assert result == {"customer": "ACME", "total": 33.0, "lines": 2}


async def test_pydantic_ais_mcp_client_over_stdio() -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    transport = StdioTransport(command=sys.executable, args=["-m", "loopkit.interop.mcp_server", "tests.interop.agents:echo_agent"],
                               cwd=str(ROOT), env={**os.environ})  # fmt: skip
    # A generous start-up time: the server's process imports loopkit and the mcp SDK first,
    # which takes seconds on a loaded machine (fastmcp's default is shorter).
    async with MCPToolset(transport, init_timeout=60) as toolset:
        [tool] = await toolset.list_tools()
        assert tool.name == "echo" and tool.description == "Repeat."
        result = await toolset.direct_call_tool("echo", {"prompt": "hello"})
    assert (
        result == "You said: hello"
    )  # pydantic-ai unwraps {"result": ...}, the convention for non-object outputs


async def test_progress_is_reported_per_round() -> None:
    from mcp import Client

    from loopkit.interop.mcp_server import agent_mcp_server
    from tests.interop.agents import InvoiceRequest, invoice_agent

    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    server = agent_mcp_server(invoice_agent(), input_type=InvoiceRequest)
    async with Client(server) as client:
        result = await client.call_tool("invoicer", {"customer": "ACME", "amounts": [1, 2, 3]},
                                        progress_callback=progress)  # fmt: skip
    assert result.structured_content == {"customer": "ACME", "total": 6.6, "lines": 3}
    assert seen == [
        (1, 40, "round 1: called _price"),
        (2, 40, "round 2: called _price"),
        (3, 40, "round 3: called _price"),
        (4, 40, "round 4: answered"),
    ]


def test_a_failed_run_is_an_error_result() -> None:
    import asyncio

    from mcp import Client

    from loopkit import Agent, FunctionChatClient
    from loopkit.interop.mcp_server import agent_mcp_server
    from tests.interop.agents import Invoice

    agent = Agent(
        FunctionChatClient(lambda m, o: "not JSON"),
        name="bad",
        output_type=Invoice,
        output_retries=0,
    )

    async def call() -> Any:
        async with Client(agent_mcp_server(agent)) as client:
            return await client.call_tool("bad", {"prompt": "x"})

    result = asyncio.run(call())
    assert result.is_error is True
    assert (
        "the agent failed" in result.content[0].text
        and "not a valid Invoice" in result.content[0].text
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nomodule:agent"], "cannot import nomodule"),
        (["tests.interop.agents"], "expected MODULE:NAME"),
        (["tests.interop.agents:MODEL"], "expected a loopkit Agent"),
        (
            ["tests.interop.agents:echo_agent", "--token-file", "/nonexistent"],
            "--token-file applies to --http",
        ),
        (["tests.interop.agents:echo_agent", "--http", "10.1.2.3:80"], "not a loopback address"),
        (
            ["tests.interop.agents:echo_agent", "--input-type", "tests.interop.agents:MODEL"],
            "--input-type",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], expected: str) -> None:
    done = subprocess.run([*SERVER, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
