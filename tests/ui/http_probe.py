"""Raw HTTP requests to the UI server's MCP endpoint, with full control of Host, Origin and
Authorization (``http.client``: an MCP client library would fix the Host header itself).

Each request kind an attacker could use: the stateless (2026-07-28) ``tools/call`` in one POST,
the handshake-era ``initialize``, a ``tools/call`` inside an established session, the session's
event stream (GET) and its end (DELETE).
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any

MODERN = "2026-07-28"
HANDSHAKE = "2025-06-18"
_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
_JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def accepted(self) -> bool:
        """The server took the request (2xx): for a forged request, an escape."""
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The JSON-RPC message of a JSON or single-event SSE body."""
        text = self.body.decode()
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            text = next(
                line[5:]
                for line in text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            )
        return json.loads(text)


@dataclass
class Target:
    """Where to connect (``connect``: address, ``port``) and the Host a real client sends."""

    connect: str
    port: int
    host: str
    extra: dict[str, str] = field(default_factory=dict)


def send(
    target: Target,
    method: str,
    *,
    host: str | None,
    headers: dict[str, str] | None = None,
    body: Any = None,
    timeout: float = 15.0,
) -> Reply:
    """One request to ``/mcp``; ``host=None`` sends no Host header at all."""
    conn = http.client.HTTPConnection(target.connect, target.port, timeout=timeout)
    try:
        conn.putrequest(method, "/mcp", skip_host=True, skip_accept_encoding=True)
        if host is not None:
            conn.putheader("Host", host)
        payload = json.dumps(body).encode() if body is not None else None
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if payload is not None:
            conn.putheader("Content-Length", str(len(payload)))
        conn.endheaders(payload)
        response = conn.getresponse()
        reply_headers = {k.lower(): v for k, v in response.getheaders()}
        # An accepted GET is an open event stream: its headers are the answer, never read it.
        stream = method == "GET" and 200 <= response.status < 300
        data = b"" if stream else response.read()
        return Reply(response.status, reply_headers, data)
    finally:
        conn.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def modern_call(
    target: Target, tool: str, arguments: dict[str, Any], *, host: str | None, auth: dict[str, str]
) -> Reply:
    """A whole tool call in one stateless POST (no session needed)."""
    headers = {**_JSON, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
               "Mcp-Name": tool, **auth}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": _META}}  # fmt: skip
    return send(target, "POST", host=host, headers=headers, body=body)


def initialize(target: Target, *, host: str | None, auth: dict[str, str]) -> Reply:
    """The handshake-era ``initialize`` that opens a session."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE, "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip
    return send(target, "POST", host=host, headers={**_JSON, **auth}, body=body)


def open_session(target: Target, auth: dict[str, str]) -> str:
    """A real session (legitimate Host and token): its id."""
    reply = initialize(target, host=target.host, auth=auth)
    assert reply.status == 200, reply
    session = reply.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ack = send(target, "POST", host=target.host, body=note,
               headers={**_JSON, **auth, **_session_headers(session)})  # fmt: skip
    assert ack.status == 202, ack
    return session


def _session_headers(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE}


def session_call(
    target: Target,
    session: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    host: str | None,
    auth: dict[str, str],
) -> Reply:
    """A tool call inside an established session."""
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}  # fmt: skip
    headers = {**_JSON, **auth, **_session_headers(session)}
    return send(target, "POST", host=host, headers=headers, body=body)


def session_stream(
    target: Target, session: str, *, host: str | None, auth: dict[str, str]
) -> Reply:
    """The session's server-to-client event stream (GET)."""
    headers = {"Accept": "text/event-stream", **auth, **_session_headers(session)}
    return send(target, "GET", host=host, headers=headers)


def session_end(target: Target, session: str, *, host: str | None, auth: dict[str, str]) -> Reply:
    """End the session (DELETE)."""
    return send(target, "DELETE", host=host, headers={**auth, **_session_headers(session)})


def forged_hosts(target: Target) -> list[str | None]:
    """Host values a DNS-rebinding page (or a confused proxy) would send: never the server's."""
    port = target.port
    return [
        f"evil.com:{port}", "evil.com", f"localhost.evil.com:{port}",
        f"127.0.0.1.nip.io:{port}", f"{target.host}.evil.com", f"127.1:{port}",
        f"0x7f000001:{port}", f"2130706433:{port}", f"[::ffff:127.0.0.1]:{port}",
        f"{target.host.rsplit(':', 1)[0]}:{port + 1}", target.host.rsplit(":", 1)[0],
        f"{target.host} evil.com", f"evil.com@{target.host}", "", None,
    ]  # fmt: skip


def forged_origins(target: Target) -> list[str]:
    """Origin values of pages that are not the server itself."""
    port = target.port
    return [
        "http://evil.com", f"http://evil.com:{port}", "null", f"http://{target.host}.evil.com",
        f"http://localhost.evil.com:{port}", "https://evil.com", f"http://127.0.0.1:{port + 1}",
        f"http://evil.com/http://{target.host}", "file://", f"http://{target.host}@evil.com",
    ]  # fmt: skip


def wrong_tokens(token: str) -> list[dict[str, str]]:
    """Authorization headers that must not pass: none, wrong, near misses, other schemes."""
    return [
        {}, bearer("wrong-token-0123456789"), bearer(token[:-1]), bearer(token + "x"),
        bearer(token.upper() if token.upper() != token else token.lower()), bearer(""),
        {"Authorization": token}, {"Authorization": f"Basic {token}"},
        {"Authorization": f"Bearer {token[: len(token) // 2]}"},
        {"X-Api-Key": token}, {"Authorization": f"Bearer\t{token}x"},
    ]  # fmt: skip
