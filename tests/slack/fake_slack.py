"""A faithful fake of Slack for the bot's tests: the Web API over HTTP and the socket-mode
WebSocket, both on 127.0.0.1 (a fake because real Slack is not reachable from here, and tests
must never talk to it).

Web API (``POST /api/<method>``, as slack_sdk sends it: a bearer token, a JSON or form body):
``auth.test``, ``apps.connections.open`` (only with the app token; answers a ``ws://`` URL of
this server), ``chat.postMessage``, ``files.getUploadURLExternal``, ``files.completeUploadExternal``
(the upload itself is a ``POST`` of the bytes to the URL handed out). A wrong or missing token is
``invalid_auth``/``not_authed``, a missing argument ``invalid_arguments``, an unknown method
``unknown_method``: as Slack answers (HTTP 200, ``ok: false``). Every request is recorded.

Socket mode, as Slack documents it: on connect the server sends ``hello``; each event is an
envelope ``{"envelope_id", "type": "events_api", "payload": {...event_callback...},
"accepts_response_payload": false, "retry_attempt": 0, "retry_reason": ""}``; the client
acknowledges with ``{"envelope_id": ...}``; the acks are recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-1111111111-2222222222-faketokenforbot01"
APP_TOKEN = "xapp-1-A0APP-3333333333-faketokenforapp0000001"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
TEAM = "T0TEAM"
APP_ID = "A0APP"

# Which token each method takes (Slack refuses a bot token where an app token is needed).
_TOKENS = {"apps.connections.open": APP_TOKEN}
_REQUIRED = {
    "chat.postMessage": ("channel",),
    "files.getUploadURLExternal": ("filename", "length"),
    "files.completeUploadExternal": ("files",),
}

#: How long a wait for the bot lasts by default: a deadline, not a timing claim (the wait ends as
#: soon as the call is there). The bot's first chat answer imports litellm, which takes a minute
#: or more on two cores shared with another copy of the suite.
PATIENCE_S = 180.0


@dataclass
class Call:
    """One Web API request as the fake received it."""

    method: str
    token: str | None
    args: dict[str, Any]
    ok: bool


@dataclass
class FakeSlack:
    """Start with ``with FakeSlack() as slack:``; ``slack.api_url`` is the bot's
    ``slack_api_url``."""

    calls: list[Call] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)
    uploads: dict[str, bytes] = field(default_factory=dict)
    connections: int = 0
    #: The port to listen on (0: any free one; a test of a Slack that comes up late names it).
    listen_port: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._ts = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._failures: dict[str, int] = {}
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> FakeSlack:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/link/", self._socket)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.listen_port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # -- Web API --------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        raw = await request.read()
        if raw:
            if request.content_type == "application/json":
                args.update(json.loads(raw))
            else:
                args.update(parse_qsl(raw.decode(), keep_blank_values=True))
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else args.get("token")
        with self._lock:
            failing = self._failures.get(method, 0) > 0
            if failing:
                self._failures[method] -= 1
        body = (
            {"ok": False, "error": "internal_error"}
            if failing
            else (self._answer(method, token, args))
        )
        with self._lock:
            self.calls.append(Call(method, token, args, bool(body.get("ok"))))
            self._lock.notify_all()
        return web.json_response(body)

    def _answer(self, method: str, token: str | None, args: dict[str, Any]) -> dict[str, Any]:
        if not token:
            return {"ok": False, "error": "not_authed"}
        if token != _TOKENS.get(method, BOT_TOKEN):
            return {"ok": False, "error": "invalid_auth"}
        missing = [name for name in _REQUIRED.get(method, ()) if not args.get(name)]
        if missing:
            return {"ok": False, "error": "invalid_arguments", "missing": missing}
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://fake.slack.test/",
                "team": "Fake",
                "user": "loopkit",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}"}
        if method == "chat.postMessage":
            ts = self.next_ts()
            message = {
                "type": "message",
                "user": BOT_USER,
                "bot_id": BOT_ID,
                "ts": ts,
                "text": args.get("text", ""),
            }
            if args.get("thread_ts"):
                message["thread_ts"] = args["thread_ts"]
            return {"ok": True, "channel": args["channel"], "ts": ts, "message": message}
        if method == "files.getUploadURLExternal":
            file_id = f"F{uuid.uuid4().hex[:10].upper()}"
            return {
                "ok": True,
                "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}",
                "file_id": file_id,
            }
        if method == "files.completeUploadExternal":
            files = json.loads(args["files"]) if isinstance(args["files"], str) else args["files"]
            unknown = [f["id"] for f in files if f["id"] not in self.uploads]
            if unknown:
                return {"ok": False, "error": "file_not_found"}
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        return {"ok": False, "error": "unknown_method"}

    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.read()
        with self._lock:
            self.uploads[request.match_info["file_id"]] = data
            self._lock.notify_all()
        return web.Response(text=f"OK - {len(data)}")

    # -- socket mode ----------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._lock:
            self._sockets.append(ws)
            self.connections += 1
            self._lock.notify_all()
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": APP_ID},
            }
        )
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    with self._lock:
                        self.acks.append(json.loads(msg.data))
                        self._lock.notify_all()
        finally:
            with self._lock:
                self._sockets.remove(ws)
        return ws

    def fail_next(self, method: str, times: int) -> None:
        """Answer the next ``times`` calls of ``method`` with ``internal_error``, as Slack does
        when it has trouble of its own."""
        with self._lock:
            self._failures[method] = times

    def refresh(self) -> None:
        """Ask the bot to reconnect, as Slack does every few hours: a ``disconnect`` message
        (``refresh_requested``); the old socket is closed once the bot has a new one."""
        self.wait_for(lambda: bool(self._sockets), "the bot's socket-mode connection")
        old = self._sockets[-1]
        before = self.connections
        message = {
            "type": "disconnect",
            "reason": "refresh_requested",
            "debug_info": {"host": "fake-slack"},
        }
        asyncio.run_coroutine_threadsafe(old.send_json(message), self._loop).result(10)
        self.wait_for(lambda: self.connections > before, "the bot's new connection")
        asyncio.run_coroutine_threadsafe(old.close(), self._loop).result(10)

    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def send_message(
        self,
        user: str,
        text: str,
        *,
        channel: str = "C0CHAN",
        thread_ts: str | None = None,
        redeliver: str | None = None,
    ) -> str:
        """A person writes ``text`` (in a thread when ``thread_ts``); returns the message's ts
        once the bot acknowledged the envelope. ``redeliver``: the ts of a message sent before,
        delivered again as Slack retries an event (``retry_attempt`` 1, a new envelope)."""
        self.wait_for(lambda: bool(self._sockets), "the bot's socket-mode connection")
        ts = redeliver or self.next_ts()
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            # Slack's channel ids say the kind: D a direct message, G private, C public
            "channel_type": {"D": "im", "G": "group"}.get(channel[:1], "channel"),
            "team": TEAM,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 1 if redeliver else 0,
            "retry_reason": "timeout" if redeliver else "",
            "payload": {
                "token": "verification-token-unused",
                "team_id": TEAM,
                "api_app_id": APP_ID,
                "event": event,
                "type": "event_callback",
                "event_id": f"Ev{uuid.uuid4().hex[:10]}",
                "event_time": int(time.time()),
                "authorizations": [
                    {
                        "team_id": TEAM,
                        "user_id": BOT_USER,
                        "is_bot": True,
                        "is_enterprise_install": False,
                    }
                ],
                "is_ext_shared_channel": False,
                "event_context": "fake",
            },
        }
        ws = self._sockets[-1]
        asyncio.run_coroutine_threadsafe(ws.send_json(envelope), self._loop).result(10)
        self.wait_for(
            lambda: any(a.get("envelope_id") == envelope_id for a in self.acks),
            f"the ack of envelope {envelope_id}",
        )
        return ts

    # -- looking at what the bot did -------------------------------------------------------
    def wait_for(self, done: Callable[[], bool], what: str, timeout: float = PATIENCE_S) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; calls: {self.calls}")
                self._lock.wait(min(left, 0.5))

    def posts(self, thread_ts: str | None = None) -> list[Call]:
        """The bot's chat.postMessage calls (in one thread with ``thread_ts``)."""
        with self._lock:
            return [
                c
                for c in self.calls
                if c.method == "chat.postMessage"
                and c.ok
                and (thread_ts is None or c.args.get("thread_ts") == thread_ts)
            ]

    def wait_post(self, thread_ts: str, contains: str, timeout: float = PATIENCE_S) -> Call:
        """The first post in the thread whose text contains ``contains`` (waits for it)."""
        found: list[Call] = []

        def seen() -> bool:
            found[:] = [c for c in self.posts(thread_ts) if contains in c.args.get("text", "")]
            return bool(found)

        self.wait_for(seen, f"a post containing {contains!r} in thread {thread_ts}", timeout)
        return found[0]
