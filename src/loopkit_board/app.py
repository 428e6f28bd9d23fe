"""The web board: a Starlette app over :class:`~loopkit_board.service.BoardService`.

Server-rendered pages (Jinja2), one small script (``static/board.js``: an ``EventSource`` for a
run's progress, ``fetch`` for the streaming chat); no front-end build. Every route but the login
page needs a login (:mod:`loopkit_board.auth`), checked by :class:`Gate` before the app sees
the request; every state-changing request with the login cookie must carry its CSRF token.

Pages: ``/`` the board (columns New, In Work, Done, Failed; a new-card form), ``/cards/NAME``
(edit, start a run in a role, its runs), ``/runs`` and ``/runs/ID`` (timeline live by SSE from
``/runs/ID/events``, screenshots, report, diff, findings, chat), ``/findings``.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from loopkit.cards.card import CardState
from loopkit.durable.errors import DatabaseUnavailableError
from loopkit_board.auth import COOKIE, Accounts, Signer
from loopkit_board.gate import Gate, new_login_csrf
from loopkit_board.service import BoardError, BoardService, QueuedRun

__all__ = ["create_app"]

_HERE = Path(__file__).parent
_COLUMNS = [s.value for s in CardState]


class Board:
    """The routes, bound to one service and one set of accounts."""

    def __init__(self, service: BoardService, accounts: Accounts, signer: Signer) -> None:
        self.service = service
        self.accounts = accounts
        self.signer = signer
        self.jinja = Environment(
            loader=FileSystemLoader(_HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            auto_reload=False,
        )

    # -- helpers -----------------------------------------------------------------------------
    def page(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        state = request.scope.get("state", {})
        html = self.jinja.get_template(template).render(
            user=state.get("user"),
            csrf=state.get("csrf", ""),
            message=request.query_params.get("message"),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    @staticmethod
    def form(request: Request) -> dict[str, str]:
        """The form the gate already read (urlencoded), as one value a field."""
        return dict(request.scope.get("state", {}).get("form", {}))

    # -- login -------------------------------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        token = new_login_csrf()
        response = self.page(request, "login.html", login_csrf=token)
        response.set_cookie(
            "loopkit_board_login", token, httponly=True, samesite="strict", path="/login"
        )
        return response

    async def login(self, request: Request) -> Response:
        form = self.form(request)
        user: str | None = None
        if form.get("token"):
            user = self.accounts.check_token(form["token"])
        elif form.get("name"):
            user = self.accounts.check_password(form["name"], form.get("password", ""))
        if user is None:
            token = new_login_csrf()
            failed = self.page(
                request, "login.html", 401, error="Wrong name, password or token.", login_csrf=token
            )
            failed.set_cookie(
                "loopkit_board_login", token, httponly=True, samesite="strict", path="/login"
            )
            return failed
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            self.signer.sign(Signer.new_session(user)),
            httponly=True,
            samesite="strict",
            max_age=12 * 3600,
        )
        response.delete_cookie("loopkit_board_login", path="/login")
        return response

    async def logout(self, request: Request) -> Response:
        # Revoked on the server too: a copy of the cookie is no login from now on.
        self.signer.revoke(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    # -- cards -------------------------------------------------------------------------------
    async def board(self, request: Request) -> Response:
        columns: dict[str, list[Any]] = {state: [] for state in _COLUMNS}
        for card in self.service.list_cards():
            columns.get(card.state, columns[CardState.NEW.value]).append(card)
        active = await self.service.active_runs()
        # Runs name their card by its resolved path: resolve the folder once, not 500 files.
        folder = self.service.cards.folder.resolve()
        runs = {
            name: active[path]
            for name in (c.name for cards in columns.values() for c in cards)
            if (path := str(folder / name)) in active
        }
        return self.page(request, "board.html", columns=list(columns.items()), runs=runs)

    async def create_card(self, request: Request) -> Response:
        form = self.form(request)
        try:
            card = self.service.create_card(
                form.get("title", ""),
                form.get("body", ""),
                form.get("category") or None,
                form.get("name") or None,
            )
        except BoardError as e:
            return PlainTextResponse(f"card not created: {e}", status_code=400)
        return RedirectResponse(f"/cards/{card.name}", status_code=303)

    async def card_page(self, request: Request, error: str | None = None) -> Response:
        name = request.path_params["name"]
        try:
            card = self.service.get_card(name)
        except BoardError as e:
            return PlainTextResponse(str(e), status_code=404)
        path = str(card.path.resolve())
        runs = [r for r in await self.service.list_runs(limit=200) if r.card == path]
        text = self.form(request).get("text", card.text) if error else card.text
        return self.page(
            request,
            "card.html",
            400 if error else 200,
            card=card,
            text=text,
            error=error,
            runs=runs,
            roles=self.service.roles,
            default_role=self.service.default_role,
        )

    async def save_card(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            self.service.save_card(name, self.form(request).get("text", ""))
        except BoardError as e:
            return await self.card_page(request, error=f"not saved: {e}")
        return RedirectResponse(f"/cards/{name}?message=Saved.", status_code=303)

    async def start_run(self, request: Request) -> Response:
        name = request.path_params["name"]
        form = self.form(request)
        # "then": develop, then test (the pipeline): the card is Done only when the test passes.
        return await self._enqueue(name, form.get("role"), form.get("then") or None)

    async def _enqueue(self, card: str, role: str | None, then: str | None = None) -> Response:
        return await self._queued(self.service.enqueue(card, role or None, then=then))

    async def _queued(self, enqueued: Awaitable[QueuedRun]) -> Response:
        try:
            queued = await enqueued
        except BoardError as e:
            return PlainTextResponse(f"run not started: {e}", status_code=400)
        note = "Queued" if queued.created else "This card already has a run; here it is"
        if queued.position:
            note += f" (place {queued.position} in the queue)"
        return RedirectResponse(f"/runs/{queued.run_id}?message={note}.", status_code=303)

    # -- runs --------------------------------------------------------------------------------
    async def runs(self, request: Request) -> Response:
        records = await self.service.list_runs(limit=200)
        positions = await self.service.queue_positions()
        return self.page(request, "runs.html", runs=records, positions=positions)

    async def run_page(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        details = await self.service.run_details(run_id)
        if details is None:
            return PlainTextResponse(f"there is no run {run_id!r}", status_code=404)
        from loopkit_board.artifacts import merge_findings

        chat = await self.service.chat_history(run_id)
        return self.page(
            request,
            "run.html",
            r=details.record,
            position=details.position,
            artifacts=details.artifacts,
            started=details.prepared is not None,
            findings=merge_findings(details.artifacts.findings_dbs),
            chat=[{"role": m.role.value, "text": m.text} for m in chat],
            roles=self.service.roles,
            trace_url=self.service.trace_url(details.prepared),
        )

    async def run_events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if await self.service.get_run(run_id) is None:
            return PlainTextResponse(f"there is no run {run_id!r}", status_code=404)
        # The whole story at each (re)connection: a restarted board numbers its events anew,
        # so a browser's Last-Event-ID is not honoured; the page redraws its timeline on open.
        # A program that keeps its place within one board's life passes ?after=N.
        given = request.query_params.get("after", "")
        after = int(given) if given.isdigit() else -1

        async def events() -> AsyncIterator[dict[str, Any]]:
            async for event in self.service.follow(run_id, after):
                yield {"id": str(event.seq), "data": json.dumps(event.as_dict())}

        # No reconnection after the run's end: the script closes the stream itself.
        return EventSourceResponse(events(), ping=15)

    async def run_file(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        prepared = await self.service.prepared(run_id)
        if prepared is None:
            return PlainTextResponse("no such file", status_code=404)
        path = _inside(Path(prepared.run_dir), request.path_params["path"])
        if path is None:
            return PlainTextResponse("no such file", status_code=404)
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        response = FileResponse(path, media_type=media)
        # A report is the run's own HTML: it may not script the board (sandboxed, no scripts).
        response.headers["Content-Security-Policy"] = "sandbox; default-src 'self' 'unsafe-inline'"
        return response

    async def report(self, request: Request) -> Response:
        path = await self.service.report(request.path_params["run_id"])
        if path is None:
            return PlainTextResponse("the run has not started yet: no report", status_code=404)
        response = FileResponse(path, media_type="text/html")
        csp = "sandbox; default-src 'self' data: 'unsafe-inline'"
        response.headers["Content-Security-Policy"] = csp
        return response

    async def chat(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        question = self.form(request).get("question", "")
        try:
            pieces = self.service.ask(run_id, question)
            first = await anext(pieces, "")
        except BoardError as e:
            return PlainTextResponse(str(e), status_code=400)

        async def stream() -> AsyncIterator[str]:
            yield first
            async for piece in pieces:
                yield piece

        return StreamingResponse(stream(), media_type="text/plain; charset=utf-8")

    async def follow_up(self, request: Request) -> Response:
        """A follow-up run in the earlier run's repository."""
        run_id = request.path_params["run_id"]
        if await self.service.get_run(run_id) is None:
            return PlainTextResponse("there is no such run", status_code=404)
        role = self.form(request).get("role") or None
        return await self._queued(self.service.follow_up(run_id, role))

    async def test_change(self, request: Request) -> Response:
        """The "Test this change" action: the test role on a done run's repository."""
        run_id = request.path_params["run_id"]
        if await self.service.get_run(run_id) is None:
            return PlainTextResponse("there is no such run", status_code=404)
        return await self._queued(self.service.test_change(run_id))

    async def cancel(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            await self.service.cancel(run_id)
        except BoardError as e:
            return PlainTextResponse(f"not cancelled: {e}", status_code=400)
        return RedirectResponse(f"/runs/{run_id}?message=Cancelled.", status_code=303)

    async def findings(self, request: Request) -> Response:
        return self.page(request, "findings.html", findings=await self.service.findings())

    async def script(self, request: Request) -> Response:
        return FileResponse(_HERE / "static" / "board.js", media_type="text/javascript")


def _inside(folder: Path, relative: str) -> Path | None:
    """``folder/relative`` when it is a file inside ``folder`` and outside its repository."""
    root = folder.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return None if path.relative_to(root).parts[:1] == ("repo",) else path


def create_app(
    service: BoardService, accounts: Accounts, *, allowed_hosts: list[str] | None = None
) -> Starlette:
    """The board as an ASGI app; the service is started and stopped with it."""
    signer = Signer(service.data_dir)
    board = Board(service, accounts, signer)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with service:
            yield

    routes = [
        Route("/login", board.login_page, methods=["GET"]),
        Route("/login", board.login, methods=["POST"]),
        Route("/logout", board.logout, methods=["POST"]),
        Route("/", board.board, methods=["GET"]),
        Route("/cards", board.create_card, methods=["POST"]),
        Route("/cards/{name}", board.card_page, methods=["GET"]),
        Route("/cards/{name}", board.save_card, methods=["POST"]),
        Route("/cards/{name}/run", board.start_run, methods=["POST"]),
        Route("/runs", board.runs, methods=["GET"]),
        Route("/runs/{run_id}", board.run_page, methods=["GET"]),
        Route("/runs/{run_id}/events", board.run_events, methods=["GET"]),
        Route("/runs/{run_id}/files/{path:path}", board.run_file, methods=["GET"]),
        Route("/runs/{run_id}/report", board.report, methods=["GET"]),
        Route("/runs/{run_id}/chat", board.chat, methods=["POST"]),
        Route("/runs/{run_id}/follow-up", board.follow_up, methods=["POST"]),
        Route("/runs/{run_id}/test", board.test_change, methods=["POST"]),
        Route("/runs/{run_id}/cancel", board.cancel, methods=["POST"]),
        Route("/findings", board.findings, methods=["GET"]),
        Route("/static/board.js", board.script, methods=["GET"]),
    ]

    async def database_unavailable(request: Request, error: Exception) -> Response:
        # Any page or action while the runs database is away: say so; the board retries.
        service.database_lost(error)
        return PlainTextResponse(
            "The runs database cannot be reached right now; the board keeps trying and runs go "
            "on in their workers. Reload in a few seconds.",
            status_code=503,
            headers={"Retry-After": "5"},
        )

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={DatabaseUnavailableError: database_unavailable},
    )
    app.add_middleware(Gate, accounts=accounts, signer=signer, allowed_hosts=allowed_hosts)
    return app
