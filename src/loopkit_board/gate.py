"""The board's gate: an ASGI middleware every request passes before any route.

- Host: with ``allowed_hosts``, a request naming another host is refused (421; a page whose
  name was rebound to this machine, DNS rebinding, gets nothing). An ``Origin`` that is not this
  host is refused (403).
- Login: the login page (GET and POST ``/login``) is the only thing served without one. A
  request needs the signed login cookie or ``Authorization: Bearer <token>``; without, a page
  request is sent to the login page (303) and anything else gets 401.
- CSRF: a state-changing request (POST, PUT, PATCH, DELETE) that relies on the cookie must carry
  the login's CSRF token, as the form field ``csrf`` or the ``X-CSRF-Token`` header; otherwise
  403 and the route never runs. The login form has its own token (a cookie for ``/login`` only,
  sent back in the form: double submit), so a foreign page cannot log a browser in either.
- The form: the gate reads an urlencoded body (at most 1 MB, else 413) to find the token and
  hands it to the route in ``scope["state"]["form"]``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopkit_board.auth import COOKIE, Accounts, Signer

__all__ = ["MAX_FORM_BYTES", "Gate", "new_login_csrf"]

MAX_FORM_BYTES = 1_000_000
_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
LOGIN_COOKIE = "loopkit_board_login"


def new_login_csrf() -> str:
    """A fresh token for the login form (double submit: cookie and field)."""
    return secrets.token_urlsafe(24)


class Gate:
    """Host, login and CSRF checks in front of the board's routes (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        accounts: Accounts,
        signer: Signer,
        allowed_hosts: list[str] | None = None,
    ) -> None:
        self.app = app
        self.accounts = accounts
        self.signer = signer
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        # argon2 is slow on purpose: a token once verified is remembered by its SHA-256.
        self._tokens: dict[str, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self._check_host(headers)
        if refused is not None:
            await refused(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        form: dict[str, str] = {}
        if method in _UNSAFE:
            body = await _read_body(receive)
            if body is None:
                await PlainTextResponse("request body too large", 413)(scope, receive, send)
                return
            if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            receive = _replay(body, receive)
        cookies = _cookies(headers.get("cookie", ""))
        state = scope.setdefault("state", {})
        state["form"] = form
        if path == "/login":
            if method in _UNSAFE and not _same(cookies.get(LOGIN_COOKIE), form.get("csrf")):
                response: Response = PlainTextResponse(
                    "the login form expired or came from another site: reload the login page",
                    403,
                )
                await response(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        user, csrf = self._who(headers, cookies)
        if user is None:
            wants_page = method == "GET" and "text/html" in headers.get("accept", "")
            response = (
                RedirectResponse("/login", 303)
                if wants_page
                else PlainTextResponse("log in first (or send Authorization: Bearer)", 401)
            )
            await response(scope, receive, send)
            return
        if method in _UNSAFE and csrf is not None:
            sent = headers.get("x-csrf-token") or form.get("csrf")
            if not _same(csrf, sent):
                await PlainTextResponse("CSRF token missing or wrong", 403)(scope, receive, send)
                return
        state["user"] = user
        state["csrf"] = csrf or ""
        await self.app(scope, receive, send)

    def _check_host(self, headers: dict[str, str]) -> Response | None:
        host = headers.get("host", "")
        if self.allowed_hosts is not None and _bare_host(host) not in self.allowed_hosts:
            return PlainTextResponse(f"host {host!r} is not this board", 421)
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.lower():
                return PlainTextResponse("cross-origin request refused", 403)
        return None

    def _who(self, headers: dict[str, str], cookies: dict[str, str]) -> tuple[str | None, Any]:
        """The user, and the CSRF token the request must carry (None: a bearer request)."""
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
            key = hashlib.sha256(token.encode()).hexdigest()
            user = self._tokens.get(key)
            if user is None:
                user = self.accounts.check_token(token)
                if user is not None:
                    self._tokens[key] = user
            return user, None
        session = self.signer.read(cookies.get(COOKIE))
        if session is None:
            return None, None
        return session.user, session.csrf


def _same(expected: str | None, sent: str | None) -> bool:
    return bool(expected) and bool(sent) and hmac.compare_digest(str(expected), str(sent))


def _bare_host(host: str) -> str:
    host = host.lower()
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


def _cookies(header: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed header is no login
        return {}
    return {k: v.value for k, v in jar.items()}


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
