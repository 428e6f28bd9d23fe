"""Serving an ``MCPServer`` of loopkit's over streamable HTTP with the rules of
:mod:`loopkit.mcp.http_security`: the bearer token, exact Host/Origin values, loopback unless
allowed. Shared by the UI server and an agent served as an MCP tool."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from loopkit.mcp.http_security import HttpAddress, StaticTokenVerifier

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

__all__ = ["serve_http"]

#: Builds the server with the SDK's bearer-token hooks: ``build(auth, token_verifier)``.
ServerBuilder = Callable[["AuthSettings", "TokenVerifier"], "MCPServer"]


def serve_http(
    build: ServerBuilder,
    sock: socket.socket,
    address: HttpAddress,
    token: str,
    note: str,
    *,
    label: str,
) -> None:
    """Serve the server ``build`` makes on ``sock`` (bound to ``address``) until SIGTERM,
    SIGHUP or Ctrl+C; prints ``{label} MCP server on URL/mcp`` and ``note`` (where the token
    is: never the token) first."""
    import anyio
    import uvicorn

    port = sock.getsockname()[1]
    if address.ip.is_unspecified:  # a URL a local client can use; remote ones use a name
        host = "[::1]" if address.ip.version == 6 else "127.0.0.1"
    else:
        host = address.url_host()
    url = f"http://{host}:{port}"
    verifier = StaticTokenVerifier(token)
    server = build(verifier.auth_settings(url), verifier)
    app = server.streamable_http_app(transport_security=address.transport_security(port))
    print(f"accepted Host values: {', '.join(address.accepted_hosts(port))}", file=sys.stderr)
    if not address.loopback:
        print(
            f"warning: serving on {address.url_host()}, reachable from other machines over "
            "plain HTTP: the token crosses the network unencrypted",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", proxy_headers=False, server_header=False
    )
    uv_server = uvicorn.Server(config)
    if hasattr(signal, "SIGHUP"):
        # uvicorn shuts down gracefully on SIGTERM only: route SIGHUP there.
        signal.signal(signal.SIGHUP, lambda signum, frame: signal.raise_signal(signal.SIGTERM))

    async def serve() -> None:
        # Said once the event loop runs: a stop signal sent as soon as the address is read
        # lands in a running loop, never in one being made (which left a traceback behind).
        print(f"{label} MCP server on {url}/mcp", flush=True)
        print(note, flush=True)
        await uv_server.serve(sockets=[sock])

    anyio.run(serve)
