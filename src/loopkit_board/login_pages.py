"""The board's login pages: log in and out, and getting back to what one was doing.

- ``GET /login`` (``?next=`` a page of the board): the form, with its CSRF value (the HMAC of the
  ``loopkit_board_login_form`` cookie's nonce, which every open login tab shares: two tabs both log
  in).
- ``POST /login``: name and password, or a token, checked by
  :class:`~loopkit_board.limits.SecretChecker` (a bounded pool, rate limits: 429 "try again in N
  s"); then back to ``next``. A form that could not be sent because the login had ended comes
  back after the login as a page that shows what it held and sends it on a click.
- The gate's pages (:class:`~loopkit_board.gate.GatePages`): the login page for a form posted
  without a login (expired, revoked), and the "send it again" page for a form that carries an
  earlier login's CSRF token (another tab logged in again meanwhile). Nothing is sent again
  without the user's click.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from loopkit_board.auth import COOKIE, SESSION_SECONDS, Signer
from loopkit_board.gate import LOGIN_COOKIE, GatePages, login_form_token, login_nonce, safe_next
from loopkit_board.limits import LimitReached, SecretChecker

__all__ = ["LoginPages"]

#: A form kept for after the login holds at most this many fields.
_MAX_FIELDS = 20
#: The login form's cookie lives this long (seconds): an open login tab works for a day.
_LOGIN_COOKIE_SECONDS = 24 * 3600

Render = Callable[..., HTMLResponse]


class LoginPages:
    """The login routes and the gate's pages, rendered with the board's ``render`` (its
    ``page`` method: request, template, status, values)."""

    def __init__(self, render: Render, signer: Signer, checker: SecretChecker) -> None:
        self.render = render
        self.signer = signer
        self.checker = checker

    def gate_pages(self) -> GatePages:
        return GatePages(self.login_needed, self.login_form_expired, self.send_again)

    # -- routes ------------------------------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        return self._login_form(request, next_page=safe_next(request.query_params.get("next")))

    async def login(self, request: Request) -> Response:
        form = _form(request)
        next_page = safe_next(form.get("next"))
        pending = _pending(form.get("resume"))
        client = request.scope.get("state", {}).get("client", "client:unknown")
        try:
            if form.get("token"):
                user = await self.checker.token(client, form["token"])
            else:
                name = form.get("name", "")
                user = await self.checker.password(client, name, form.get("password", ""))
        except LimitReached as e:
            page = self._login_form(
                request, 429, error=f"{e}.", next_page=next_page, pending=pending
            )
            page.headers["Retry-After"] = str(e.retry_after)
            return page
        if user is None:
            return self._login_form(
                request,
                401,
                error="Wrong name, password or token.",
                next_page=next_page,
                pending=pending,
            )
        session = Signer.new_session(user)
        if pending is not None:
            # What the user was sending when the login ended: shown, sent again on a click.
            state = request.scope.setdefault("state", {})
            state["user"], state["csrf"] = user, session.csrf
            response: Response = self._send_again_page(
                request,
                200,
                pending,
                "You are logged in again. This is what you were sending: check it and send it.",
            )
        else:
            response = RedirectResponse(next_page or "/", status_code=303)
        response.set_cookie(
            COOKIE,
            self.signer.sign(session),
            httponly=True,
            samesite="strict",
            max_age=SESSION_SECONDS,
            secure=_https(request),
        )
        return response

    async def logout(self, request: Request) -> Response:
        # Revoked on the server too: a copy of the cookie is no login from now on.
        self.signer.revoke(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, secure=_https(request), httponly=True, samesite="strict")
        return response

    # -- the gate's pages --------------------------------------------------------------------
    async def login_needed(self, request: Request) -> Response:
        """A form posted without a login: the login page, keeping the form for afterwards."""
        return self._login_form(
            request,
            401,
            error="Your login has ended: log in again, and your form will be offered again.",
            next_page=request.url.path,
            pending=_kept(request, request.url.path),
        )

    async def login_form_expired(self, request: Request) -> Response:
        """The login form came back without its token (expired, or from another page)."""
        form = _form(request)
        return self._login_form(
            request,
            403,
            error="The login form expired or came from another page: log in again.",
            next_page=safe_next(form.get("next")),
            pending=_pending(form.get("resume")),
        )

    async def send_again(self, request: Request) -> Response:
        """A form with an earlier login's CSRF token: offered again with this login's."""
        pending = _kept(request, request.url.path)
        if pending is None:
            return self.render(request, "resume.html", 403, why="This form cannot be sent.")
        return self._send_again_page(
            request,
            403,
            pending,
            "This page was opened under an earlier login (you logged in again since, maybe in "
            "another tab). Check what it sends and send it again.",
        )

    # -- helpers -----------------------------------------------------------------------------
    def _login_form(
        self,
        request: Request,
        status: int = 200,
        *,
        error: str | None = None,
        next_page: str | None = None,
        pending: dict[str, Any] | None = None,
    ) -> HTMLResponse:
        nonce = login_nonce(request.cookies)
        page = self.render(
            request,
            "login.html",
            status,
            error=error,
            login_csrf=login_form_token(self.signer.key, nonce),
            next_page=next_page,
            resume=json.dumps(pending) if pending is not None else None,
        )
        page.set_cookie(
            LOGIN_COOKIE,
            nonce,
            max_age=_LOGIN_COOKIE_SECONDS,
            httponly=True,
            samesite="strict",
            path="/",  # also sent where the gate shows the login page (an ended login)
            secure=_https(request),
        )
        return page

    def _send_again_page(
        self, request: Request, status: int, pending: dict[str, Any], why: str
    ) -> HTMLResponse:
        fields = [(k, v) for k, v in pending["fields"].items() if k != "csrf"]
        return self.render(
            request, "resume.html", status, why=why, action=pending["action"], fields=fields
        )


def _https(request: Request) -> bool:
    return request.url.scheme == "https"


def _form(request: Request) -> dict[str, str]:
    return dict(request.scope.get("state", {}).get("form", {}))


def _kept(request: Request, action: str) -> dict[str, Any] | None:
    """The form of this request, to send again to ``action`` (None when there is nothing)."""
    fields = {k: v for k, v in _form(request).items() if k != "csrf"}
    return _pending(json.dumps({"action": action, "fields": fields}))


def _pending(text: str | None) -> dict[str, Any] | None:
    """A kept form (``{"action": path, "fields": {name: value}}``) read back from the login
    form's hidden field; None when absent or not of that shape."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or safe_next(data.get("action")) is None:
        return None
    fields = data.get("fields")
    if not isinstance(fields, dict) or len(fields) > _MAX_FIELDS:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items()):
        return None
    return {"action": data["action"], "fields": fields}
