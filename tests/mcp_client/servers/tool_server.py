"""A real MCP server (the SDK's ``MCPServer``) for loopkit's MCP client tests.

Run as ``python tool_server.py stdio`` (MCP over stdin/stdout) or ``python tool_server.py http``
(streamable HTTP under uvicorn on 127.0.0.1). In HTTP mode the server binds port 0 itself and prints
``PORT <n>`` on stdout before serving, so tests never race for a "free" port.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent

server = MCPServer("loopkit-test-server", instructions="Tools for loopkit's MCP client tests.")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the given reason (an is_error result)."""
    raise ToolError(reason)


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer: a tool that hangs for as long as asked."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def die(message: str = "dying on purpose") -> str:
    """Write a message to stderr and kill this server process (SIGKILL) mid-call."""
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.tool()
def long_text(lines: int = 500) -> str:
    """Return many numbered lines of text."""
    return "\n".join(f'line {i}: "quoted" \\ back-slashed' for i in range(lines))


@server.tool()
def pid() -> int:
    """The server's process id (tests check that the process is gone after close)."""
    return os.getpid()


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable in the server process, or '(unset)'."""
    return os.environ.get(name, "(unset)")


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header as the server received it, or '(none)'."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return str(headers.get(name, "(none)")) if headers is not None else "(not HTTP)"


@server.tool()
def two_blocks() -> CallToolResult:
    """Two text blocks and an image block."""
    return CallToolResult(
        content=[
            TextContent(text='first "block"'),
            TextContent(text="second block"),
            ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
        ]
    )


@server.tool()
def structured_only() -> CallToolResult:
    """Structured content and no text blocks."""
    return CallToolResult(content=[], structured_content={"answer": 42, "names": ["a", "b"]})


def _serve_http() -> None:
    import uvicorn

    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only for an explicit TCP
    # proto; with proto 0 every response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts: no startup race
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    sys.stderr.write(f"loopkit test server starting ({mode})\n")
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        _serve_http()
    else:
        sys.exit(f"unknown mode {mode!r}: expected 'stdio' or 'http'")
