"""A protocol-faithful fake model server on 127.0.0.1 for testing litellm's real HTTP path.

There are no model API keys on the build machines and no internet, so the model side is played by
this server (a fake because the real thing cannot run here). It speaks both wire formats litellm
uses for the providers loopkit cares about:

* OpenAI chat completions: ``POST /v1/chat/completions`` (JSON, or SSE with ``data: [DONE]`` and a
  final usage chunk when ``stream_options.include_usage`` is set);
* Anthropic messages: ``POST /v1/messages`` (JSON, or SSE with ``message_start``,
  ``content_block_start``/``_delta``/``_stop`` (``text_delta``, ``input_json_delta``),
  ``message_delta`` and ``message_stop``; usage carries ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``).

Faults: a turn may break the connection instead of answering (:class:`Cut`): a TCP reset
(``SO_LINGER`` 0, then close) or an orderly close before the status line, after the headers, after N
SSE events, or part-way through a JSON body; or it may stall there for a while. Where the client
cannot even connect, :func:`unaccepting_listener` gives an address whose connect phase hangs.

The script (:class:`Turn`, :class:`Cut`) lives in :mod:`tests.fakes.llm_script`, the two wire
formats in :mod:`tests.fakes.llm_wire_formats`; this module re-exports the script's names.

It plays a queue of scripted :class:`Turn`\\ s, one per request, and records every request
(headers without credentials, parsed JSON body) in :attr:`FakeLLMServer.requests`. A request that
arrives when the queue is empty gets a 500 whose message says so, and is recorded as well, so a test
that scripted too few turns fails loudly instead of hanging.

Usage::

    with FakeLLMServer.anthropic() as server:
        server.enqueue(Turn.tool_call("get_weather", {"city": "Oslo"}), Turn.reply("Sunny."))
        client = LiteLLMChatClient("anthropic/claude-x", api_base=server.api_base, api_key="k")
        ...
        assert server.requests[0].body["tools"][0]["name"] == "get_weather"
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fakes.llm_script import Cut, ScriptedToolCall, ScriptedUsage, Turn, WireFormat
from tests.fakes.llm_wire_formats import (
    anthropic_body,
    anthropic_error,
    anthropic_stream,
    openai_body,
    openai_error,
    openai_stream,
)

__all__ = [
    "Cut",
    "FakeLLMServer",
    "RecordedRequest",
    "ScriptedToolCall",
    "ScriptedUsage",
    "Turn",
    "WireFormat",
    "unaccepting_listener",
]

#: Headers that carry credentials; they are never recorded.
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


@dataclass(frozen=True)
class RecordedRequest:
    """What the client sent: path, headers (credentials removed) and the JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: Names of credential headers that were present (their values are never kept).
    credential_headers: tuple[str, ...] = ()

    @property
    def wire_format(self) -> WireFormat:
        return "anthropic" if self.path.rstrip("/").endswith("/messages") else "openai"


# --- the server ---------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    # HTTP/1.0: one request per connection, a streamed body ends when the connection closes.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; requests are recorded instead

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": f"no GET route {self.path}"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        secret = tuple(sorted(k for k in headers if k in _SECRET_HEADERS))
        clean = {k: v for k, v in headers.items() if k not in _SECRET_HEADERS}
        path = self.path.split("?", 1)[0].rstrip("/")
        owner._record(RecordedRequest("POST", path, clean, body, secret))

        if path.endswith("/chat/completions"):
            fmt: WireFormat = "openai"
        elif path.endswith("/messages"):
            fmt = "anthropic"
        else:
            self._send_json(404, {"error": {"message": f"fake server has no route {path}"}})
            return

        turn = owner._next_turn()
        if turn is None:
            error = Turn.error(500, "api_error", "fake server: no scripted response left")
            self._send_error(fmt, error)
            return
        if turn.delay and owner._stopping.wait(turn.delay):
            return  # server shutting down: drop the connection
        model = body.get("model", "fake-model") if isinstance(body, dict) else "fake-model"
        if turn.cut is not None and turn.cut.before_headers:
            self._break(turn.cut)
        elif turn.raw_body is not None:
            self._send_raw(turn.status, turn.raw_body.encode(), "application/json", turn.headers)
        elif turn.status >= 400:
            self._send_error(fmt, turn)
        elif isinstance(body, dict) and body.get("stream"):
            self._stream(fmt, turn, model, body)
        else:
            payload = openai_body(turn, model) if fmt == "openai" else anthropic_body(turn, model)
            data = json.dumps(payload).encode()
            if turn.cut is not None and turn.cut.body_bytes is not None:
                length: int | None = len(data) if turn.cut.announce_length else None
                self._send_raw(
                    200,
                    data[: turn.cut.body_bytes],
                    "application/json",
                    turn.headers,
                    length=length,
                )
                self._break(turn.cut)
            elif turn.trickle is not None:
                pause, pieces = turn.trickle
                size = -(-len(data) // max(1, pieces))
                self._send_raw(200, b"", "application/json", turn.headers, length=len(data))
                for start in range(0, len(data), size):
                    if start and owner._stopping.wait(pause):
                        return
                    self.wfile.write(data[start : start + size])
                    self.wfile.flush()
            else:
                self._send_raw(200, data, "application/json", turn.headers)

    def _break(self, cut: Cut) -> None:
        """Stall if asked, then reset or close the connection (the handler then just returns)."""
        self.close_connection = True
        if cut.stall and self.server.owner._stopping.wait(cut.stall):
            pass  # server shutting down: close now
        with contextlib.suppress(OSError):
            self.wfile.flush()
            if cut.reset:
                # SO_LINGER on with a zero timeout: close() sends RST instead of FIN.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
            self.connection.close()

    # -- writing --------------------------------------------------------------------------------
    def _send_raw(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
        *,
        length: int | Literal["auto"] | None = "auto",
    ) -> None:
        """Status, headers and ``data``; ``length`` is the announced Content-Length (``None``:
        no header, the body ends with the connection)."""
        self.send_response(status)
        self.send_header("content-type", content_type)
        if length is not None:
            self.send_header("content-length", str(len(data) if length == "auto" else length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_error(self, fmt: WireFormat, turn: Turn) -> None:
        payload = openai_error(turn) if fmt == "openai" else anthropic_error(turn)
        self._send_json(turn.status, payload, turn.headers)

    def _stream(self, fmt: WireFormat, turn: Turn, model: str, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        for k, v in turn.headers.items():
            self.send_header(k, v)
        self.end_headers()
        events: Iterable[str]
        if fmt == "openai":
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = [f"data: {d}\n\n" for d in openai_stream(turn, model, include_usage)]
            events = [*events, "data: [DONE]\n\n"]
        else:
            events = [f"event: {e}\ndata: {d}\n\n" for e, d in anthropic_stream(turn, model)]
        cut = turn.cut
        if cut is not None and cut.events is not None:
            events = list(events)[: cut.events]
        if turn.error_after_events is not None:
            if fmt == "openai":
                error_event = f"data: {json.dumps(openai_error(turn))}\n\n"
            else:
                error_event = f"event: error\ndata: {json.dumps(anthropic_error(turn))}\n\n"
            events = [*list(events)[: turn.error_after_events], error_event]
        pause = turn.trickle[0] if turn.trickle is not None else 0.0
        for index, event in enumerate(events):
            if index and pause and self.server.owner._stopping.wait(pause):
                return
            self.wfile.write(event.encode())
            self.wfile.flush()
        self.close_connection = True
        if cut is not None:
            self._break(cut)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeLLMServer


class FakeLLMServer:
    """The fake server; start it with ``with`` (or :meth:`start` / :meth:`stop`).

    ``wire_format`` only chooses what :attr:`api_base` looks like; the server answers both formats
    on their own paths.
    """

    def __init__(self, wire_format: WireFormat = "openai") -> None:
        if wire_format not in ("openai", "anthropic"):
            raise ValueError(f"wire_format must be 'openai' or 'anthropic', got {wire_format!r}")
        self.wire_format: WireFormat = wire_format
        self.requests: list[RecordedRequest] = []
        self._turns: deque[Turn] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def openai(cls) -> FakeLLMServer:
        """A server whose :attr:`api_base` suits ``openai/<model>`` (``http://host:port/v1``)."""
        return cls("openai")

    @classmethod
    def anthropic(cls) -> FakeLLMServer:
        """A server whose :attr:`api_base` suits ``anthropic/<model>`` (litellm appends
        ``/v1/messages``)."""
        return cls("anthropic")

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # cut scripted delays short
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running; use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """The ``api_base`` to give litellm for this server's wire format."""
        return f"{self.url}/v1" if self.wire_format == "openai" else self.url

    # -- script ---------------------------------------------------------------------------------
    def enqueue(self, *turns: Turn) -> FakeLLMServer:
        """Append turns to the script; each request consumes one."""
        with self._lock:
            self._turns.extend(turns)
        return self

    def script(self, turns: Iterable[Turn]) -> FakeLLMServer:
        """Append a whole transcript of turns (e.g. the model side of a card run)."""
        return self.enqueue(*turns)

    @property
    def pending(self) -> int:
        """Turns not played yet."""
        with self._lock:
            return len(self._turns)

    def _next_turn(self) -> Turn | None:
        with self._lock:
            return self._turns.popleft() if self._turns else None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of all requests so far."""
        with self._lock:
            return [r.body for r in self.requests]


@contextlib.contextmanager
def unaccepting_listener() -> Iterator[str]:
    """A ``http://127.0.0.1:PORT`` whose TCP connect phase hangs, for connect timeouts.

    The socket listens with a backlog of 0 and never accepts; once the kernel's accept queue is
    full (filled here by a few connections that are never accepted), Linux drops further SYNs, so
    a client's ``connect()`` waits (retransmitting its SYN) until its own timeout.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        for _ in range(8):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            fillers.append(filler)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
