"""The board's gate: an ASGI middleware every request passes before any route.

- Host: with ``allowed_hosts``, a request naming another host is refused (421; a page whose
  name was rebound to this machine, DNS rebinding, gets nothing).
- Origin: an ``Origin`` header must be this board's own origin, compared by scheme, host and
  port (a page of another port of the same machine is another origin); ``Origin: null`` (a
  sandboxed frame, a ``data:`` page) is refused, not taken for "no Origin". A state-changing
  request the browser marks ``Sec-Fetch-Site: cross-site`` or ``same-site`` is refused too
  (403).
- Login: the login page (GET and POST ``/login``) is the only thing served without one. A
  request needs the signed login cookie or ``Authorization: Bearer <token>`` (checked by
  :class:`~loopkit_board.limits.SecretChecker`: a bounded pool, rate limits, 429 with
  ``Retry-After``). Without: a page is sent to the login page (303, ``?next=`` the page, and
  back after the login); a form the browser posts gets the login page itself, carrying what
  the form held, which is offered again after the login; anything else gets 401.
- CSRF: a state-changing request (POST, PUT, PATCH, DELETE) that relies on the cookie must carry
  the login's CSRF token, as the form field ``csrf`` or the ``X-CSRF-Token`` header; otherwise
  403 and the route never runs (a browser's form gets a page that offers to send it again with
  the right token: another tab's login had replaced the session). The login form has its own
  token: the ``loopkit_board_login_form`` cookie (kept, so every open login tab shares it; for
  the whole site, so a login page shown at another address reuses it too) and, in
  the form, its HMAC under the board's key, which a cookie planted by another page (another
  port of the same host can set cookies here) cannot match. Cookies are ``Secure`` when the
  board is reached over HTTPS.
- The form: the gate reads an urlencoded body (at most 1 MB, else 413) to find the token and
  hands it to the route in ``scope["state"]["form"]``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopkit_board.auth import COOKIE, Signer
from loopkit_board.limits import LimitReached, SecretChecker

__all__ = [
    "LOGIN_COOKIE",
    "MAX_FORM_BYTES",
    "Gate",
    "GatePages",
    "login_form_token",
    "login_nonce",
    "safe_next",
]

MAX_FORM_BYTES = 1_000_000
_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
#: The login form's cookie: a random nonce, the form carries its HMAC.
LOGIN_COOKIE = "loopkit_board_login_form"
_NONCE = re.compile(r"[A-Za-z0-9_-]{32}")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")

Page = Callable[[Request], Awaitable[Response]]


class GatePages:
    """The pages the gate answers with instead of plain text when a browser's form cannot go
    through: the login page (``login_needed``, 401; ``login_form_expired``, 403, the login form's
    own token was wrong) and the page that offers to send a form again with the session's
    token (``send_again``, 403). Each keeps what the form held."""

    def __init__(self, login_needed: Page, login_form_expired: Page, send_again: Page) -> None:
        self.login_needed = login_needed
        self.login_form_expired = login_form_expired
        self.send_again = send_again


def login_nonce(cookies: dict[str, str]) -> str:
    """The login form's nonce: the browser's (every login tab shares it), or a new one."""
    given = cookies.get(LOGIN_COOKIE, "")
    return given if _NONCE.fullmatch(given) else secrets.token_urlsafe(24)


def login_form_token(key: bytes, nonce: str) -> str:
    """The login form's CSRF value for ``nonce``: its HMAC-SHA256 under the board's key."""
    return hmac.new(key, b"login:" + nonce.encode(), hashlib.sha256).hexdigest()


def safe_next(given: str | None) -> str | None:
    """``given`` when it is a path of this board to go back to after the login (``/...``, not
    ``//host``, no control character, at most 2,000 characters), else None."""
    if not given or len(given) > 2000 or not given.startswith("/") or given[1:2] in ("/", "\\"):
        return None
    if any(not c.isprintable() or c == "\\" for c in given):
        return None
    return given


class Gate:
    """Host, Origin, login and CSRF checks in front of the board's routes (see the module
    docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        signer: Signer,
        checker: SecretChecker,
        allowed_hosts: list[str] | None = None,
        pages: GatePages | None = None,
    ) -> None:
        self.app = app
        self.signer = signer
        self.checker = checker
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.pages = pages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        refused = self._check_origin(scope, headers, method)
        if refused is not None:
            await refused(scope, receive, send)
            return
        form: dict[str, str] = {}
        if method in _UNSAFE:
            body = await _read_body(receive)
            if body is None:
                await PlainTextResponse("request body too large", 413)(scope, receive, send)
                return
            if headers.get("content-type", "").startswith(_FORMS[0]):
                form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            receive = _replay(body, receive)
        cookies = _cookies(headers.get("cookie", ""))
        state = scope.setdefault("state", {})
        state["form"] = form
        state["client"] = _client(scope)
        if path == "/login":
            if method in _UNSAFE and not self._login_form_ok(cookies, form):
                response = await self._page(
                    scope,
                    receive,
                    "login_form_expired",
                    PlainTextResponse(
                        "the login form expired or came from another site: reload the login page",
                        403,
                    ),
                )
                await response(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        try:
            user, csrf = await self._who(state["client"], headers, cookies)
        except LimitReached as e:
            retry = {"Retry-After": str(e.retry_after)}
            await PlainTextResponse(str(e), 429, headers=retry)(scope, receive, send)
            return
        browser_form = _browser_form(method, headers)
        if user is None:
            if method == "GET" and "text/html" in headers.get("accept", ""):
                target = _path_and_query(scope)
                where = "/login" if target == "/" else f"/login?next={quote(target, safe='')}"
                response = RedirectResponse(where, 303)
            elif browser_form:
                response = await self._page(scope, receive, "login_needed", _login_first())
            else:
                response = _login_first()
            await response(scope, receive, send)
            return
        state["user"] = user
        state["csrf"] = csrf or ""
        # Whose streams and checks: the session (its CSRF token names it), or the token's user.
        state["login"] = csrf or user
        if method in _UNSAFE and csrf is not None:
            sent = headers.get("x-csrf-token") or form.get("csrf")
            if not _same(csrf, sent):
                wrong = PlainTextResponse("CSRF token missing or wrong", 403)
                response = await self._page(scope, receive, "send_again", wrong, browser_form)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _page(
        self, scope: Scope, receive: Receive, name: str, plain: Response, use: bool = True
    ) -> Response:
        if self.pages is None or not use:
            return plain
        page: Page = getattr(self.pages, name)
        return await page(Request(scope, receive))

    def _check_origin(self, scope: Scope, headers: dict[str, str], method: str) -> Response | None:
        host = headers.get("host", "")
        if self.allowed_hosts is not None and _bare_host(host) not in self.allowed_hosts:
            return PlainTextResponse(f"host {host!r} is not this board", 421)
        origin = headers.get("origin")
        if origin is not None and _origin(origin) != _own_origin(scope, host):
            return PlainTextResponse("cross-origin request refused", 403)
        if method in _UNSAFE and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return PlainTextResponse("cross-site request refused", 403)
        return None

    def _login_form_ok(self, cookies: dict[str, str], form: dict[str, str]) -> bool:
        nonce = cookies.get(LOGIN_COOKIE, "")
        if not _NONCE.fullmatch(nonce):
            return False
        return _same(login_form_token(self.signer.key, nonce), form.get("csrf"))

    async def _who(
        self, client: str, headers: dict[str, str], cookies: dict[str, str]
    ) -> tuple[str | None, Any]:
        """The user, and the CSRF token the request must carry (None: a bearer request)."""
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
            return (await self.checker.token(client, token) if token else None), None
        session = self.signer.read(cookies.get(COOKIE))
        if session is None:
            return None, None
        return session.user, session.csrf


def _login_first() -> Response:
    return PlainTextResponse("log in first (or send Authorization: Bearer)", 401)


def _browser_form(method: str, headers: dict[str, str]) -> bool:
    """A form a browser posts as a page (not a script's fetch): it can be shown a page."""
    form = headers.get("content-type", "").startswith(_FORMS)
    page = "text/html" in headers.get("accept", "") or headers.get("sec-fetch-mode") == "navigate"
    return method == "POST" and form and page


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"client:{client[0]}" if client else "client:unknown"


def _path_and_query(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    return scope["path"] + (f"?{query}" if query else "")


def _origin(text: str) -> tuple[str, str, int] | None:
    """An origin's scheme, host and port (the scheme's default filled in); None for ``null``
    and anything that is not ``http(s)://host[:port]``."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _own_origin(scope: Scope, host: str) -> tuple[str, str, int] | None:
    return _origin(f"{scope.get('scheme', 'http')}://{host}") if host else None


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
