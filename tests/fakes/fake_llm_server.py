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
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

WireFormat = Literal["openai", "anthropic"]

#: Headers that carry credentials; they are never recorded.
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call the fake model makes. ``arguments`` may be a raw string (e.g. invalid JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class ScriptedUsage:
    """Token counts in Anthropic's terms: ``input_tokens`` excludes cache reads and writes.

    For the OpenAI format the server reports ``prompt_tokens = input + cache_read + cache_creation``
    and ``prompt_tokens_details.cached_tokens = cache_read`` (OpenAI has no cache-write count).
    """

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class Cut:
    """Where and how the server breaks the connection instead of finishing its answer.

    ``events`` (streaming) is how many SSE events are sent before the cut, counted like a slice:
    ``0`` cuts right after the headers, ``-1`` sends all but the last (``[DONE]`` or
    ``message_stop``). ``body_bytes`` (non-streaming) is how many bytes of the JSON body are sent;
    the headers announce the whole length, or (``announce_length`` False) none, so the body is
    delimited by the close and the client sees EOF inside the JSON. With neither, the cut comes
    before the status line. ``reset`` sends a TCP RST (``SO_LINGER`` 0, then close), otherwise the server closes in
    order (FIN), as a proxy that gives up does. ``stall`` waits that many seconds at the cut point
    first (cut short when the server stops).
    """

    events: int | None = None
    body_bytes: int | None = None
    reset: bool = True
    stall: float = 0.0
    announce_length: bool = True

    @property
    def before_headers(self) -> bool:
        return self.events is None and self.body_bytes is None


@dataclass(frozen=True)
class Turn:
    """One scripted response: a model reply (text and/or tool calls) or a failure.

    Build them with the class methods: :meth:`reply`, :meth:`tool_call`, :meth:`calls`,
    :meth:`error`, :meth:`rate_limited`, :meth:`overloaded`, :meth:`malformed`; any turn may carry a
    ``delay`` (seconds before the server answers, e.g. longer than the client's timeout).
    """

    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: ScriptedUsage = field(default_factory=ScriptedUsage)
    #: For a reply: overrides the natural stop reason. For an error: the HTTP status.
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Sent verbatim as the body (a malformed response), with status ``status``.
    raw_body: str | None = None
    delay: float = 0.0
    #: Split every text and argument string into this many stream deltas (streaming only).
    stream_pieces: int = 3
    #: Break the connection instead of finishing the answer (see :class:`Cut`).
    cut: Cut | None = None
    #: Streamed: after this many events, an in-band error event (``error_type``, ``error_message``)
    #: and the end of the stream, as Anthropic does when it overloads mid-answer.
    error_after_events: int | None = None
    #: ``(pause, pieces)``: send the body in ``pieces`` parts (streamed: each event) ``pause``
    #: seconds apart.
    trickle: tuple[float, int] | None = None

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def reply(cls, text: str, *, usage: ScriptedUsage | None = None, delay: float = 0.0) -> Turn:
        """A plain text answer."""
        return cls(text=text, usage=usage or ScriptedUsage(), delay=delay)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
        text: str | None = None,
        usage: ScriptedUsage | None = None,
    ) -> Turn:
        """One tool call, optionally preceded by text."""
        args = {} if arguments is None else arguments
        call = ScriptedToolCall(name, args, call_id) if call_id else ScriptedToolCall(name, args)
        return cls(text=text, tool_calls=(call,), usage=usage or ScriptedUsage())

    @classmethod
    def calls(
        cls,
        *calls: ScriptedToolCall,
        text: str | None = None,
        usage: ScriptedUsage | None = None,
    ) -> Turn:
        """Several tool calls in one turn."""
        return cls(text=text, tool_calls=tuple(calls), usage=usage or ScriptedUsage())

    @classmethod
    def error(
        cls,
        status: int,
        error_type: str = "api_error",
        message: str = "scripted failure",
        *,
        headers: dict[str, str] | None = None,
    ) -> Turn:
        """An HTTP error with the provider's JSON error body."""
        return cls(
            status=status, error_type=error_type, error_message=message, headers=headers or {}
        )

    @classmethod
    def rate_limited(cls, retry_after: str | float = 1) -> Turn:
        """A 429 with a ``Retry-After`` header (seconds or an HTTP date)."""
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        return cls.error(
            429, "rate_limit_error", "rate limit exceeded", headers={"retry-after": value}
        )

    @classmethod
    def overloaded(cls) -> Turn:
        """Anthropic's 529 ``overloaded_error``."""
        return cls.error(529, "overloaded_error", "Overloaded")

    @classmethod
    def malformed(cls, body: str = "<html>this is not JSON</html>", status: int = 200) -> Turn:
        """A body that is not the JSON the format promises (sent whole, with its length)."""
        return cls(status=status, raw_body=body)

    def reset_before_headers(self, *, reset: bool = True) -> Turn:
        """This turn, but the server reads the request and drops the connection unanswered."""
        return replace(self, cut=Cut(reset=reset))

    def cut_after(self, events: int, *, reset: bool = True) -> Turn:
        """This turn streamed, but the connection breaks after ``events`` SSE events."""
        return replace(self, cut=Cut(events=events, reset=reset))

    def truncated(
        self, body_bytes: int, *, reset: bool = False, announce_length: bool = True
    ) -> Turn:
        """This turn answered without streaming, but only ``body_bytes`` of its JSON arrive."""
        cut = Cut(body_bytes=body_bytes, reset=reset, announce_length=announce_length)
        return replace(self, cut=cut)

    def trickled(self, pause: float, pieces: int = 4) -> Turn:
        """This turn sent slowly: without streaming, its body in ``pieces`` parts with ``pause``
        seconds between them; streamed, ``pause`` seconds between any two SSE events."""
        return replace(self, trickle=(pause, pieces))

    def error_event_after(
        self, events: int, error_type: str = "overloaded_error", message: str = "Overloaded"
    ) -> Turn:
        """This turn streamed, but after ``events`` events the server sends an error event
        (Anthropic: ``event: error``; OpenAI format: a ``data:`` line with an ``error`` object)."""
        return replace(
            self, error_after_events=events, error_type=error_type, error_message=message
        )

    def stall_after(self, events: int, seconds: float) -> Turn:
        """This turn streamed, but the server goes silent after ``events`` events for
        ``seconds`` (then closes)."""
        return replace(self, cut=Cut(events=events, reset=False, stall=seconds))

    @property
    def is_failure(self) -> bool:
        return self.status >= 400 or self.raw_body is not None


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


def _pieces(text: str, n: int) -> list[str]:
    if not text:
        return [text]
    n = max(1, min(n, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI chat completions ------------------------------------------------------------------


def _openai_usage(u: ScriptedUsage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
    }


def _openai_finish(turn: Turn) -> str:
    return "tool_calls" if turn.tool_calls else "stop"


def openai_body(turn: Turn, model: str) -> dict[str, Any]:
    """The non-streaming chat-completions JSON for ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _openai_finish(turn)},
        ],
        "usage": _openai_usage(turn.usage),
    }


def openai_stream(turn: Turn, model: str, include_usage: bool) -> Iterator[str]:
    """The SSE ``data:`` payloads of a streamed chat completion (without the ``data: `` prefix)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps(
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    yield chunk({"role": "assistant", "content": ""})
    if turn.text:
        for piece in _pieces(turn.text, turn.stream_pieces):
            yield chunk({"content": piece})
    for index, call in enumerate(turn.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(call.arguments_json, turn.stream_pieces):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _openai_finish(turn))
    if include_usage:
        yield json.dumps({**base, "choices": [], "usage": _openai_usage(turn.usage)})


def openai_error(turn: Turn) -> dict[str, Any]:
    return {
        "error": {
            "message": turn.error_message or "error",
            "type": turn.error_type or "api_error",
            "param": None,
            "code": None,
        }
    }


# --- Anthropic messages -----------------------------------------------------------------------


def _anthropic_usage(u: ScriptedUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
    }


def _anthropic_stop(turn: Turn) -> str:
    return "tool_use" if turn.tool_calls else "end_turn"


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        # Anthropic always sends ``input`` as an object. Arguments scripted as a raw string are
        # parsed; a string that is not JSON is sent as a string (a deliberately broken reply).
        arguments: Any = call.arguments
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def anthropic_body(turn: Turn, model: str) -> dict[str, Any]:
    """The non-streaming messages JSON for ``turn``."""
    return {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(turn),
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn.usage),
    }


def anthropic_stream(turn: Turn, model: str) -> Iterator[tuple[str, str]]:
    """The SSE ``(event, data)`` pairs of a streamed message, in Anthropic's order."""

    def ev(name: str, payload: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **payload})

    usage = _anthropic_usage(turn.usage)
    start_usage = {**usage, "output_tokens": 1}
    yield ev(
        "message_start",
        {
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:16]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            }
        },
    )
    index = 0
    if turn.text:
        yield ev(
            "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        )
        yield ev("ping", {})
        for piece in _pieces(turn.text, turn.stream_pieces):
            yield ev(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        yield ev("content_block_stop", {"index": index})
        index += 1
    for call in turn.tool_calls:
        yield ev(
            "content_block_start",
            {
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": {},
                },
            },
        )
        for piece in _pieces(call.arguments_json, turn.stream_pieces):
            yield ev(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
        yield ev("content_block_stop", {"index": index})
        index += 1
    yield ev(
        "message_delta",
        {
            "delta": {"stop_reason": _anthropic_stop(turn), "stop_sequence": None},
            "usage": {"output_tokens": turn.usage.output_tokens},
        },
    )
    yield ev("message_stop", {})


def anthropic_error(turn: Turn) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": turn.error_type or "api_error", "message": turn.error_message or "error"},
    }


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
