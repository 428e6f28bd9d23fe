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
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
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
from starlette.types import Receive, Scope, Send

from loopkit.cards.card import CardState
from loopkit.durable.errors import DatabaseUnavailableError
from loopkit_board.artifacts import open_run_file
from loopkit_board.auth import Accounts, Signer
from loopkit_board.gate import Gate
from loopkit_board.limits import LimitReached, LoginLimits, SecretChecker, StreamSlots
from loopkit_board.login_pages import LoginPages
from loopkit_board.service import BoardError, BoardService, CardNotFoundError, QueuedRun

__all__ = ["create_app", "parse_after", "valid_run_id"]

_HERE = Path(__file__).parent
_COLUMNS = [s.value for s in CardState]
#: A run id as the queue makes them (32 hex digits), or as a program chose it: letters,
#: digits and ``_.:-``; anything else names no run and never reaches the database.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_AFTER = re.compile(r"[0-9]{1,9}")
#: The note a redirect shows on the next page (``?message=``): short, one line.
_MESSAGE_CHARS = 300


def valid_run_id(run_id: str) -> bool:
    """Whether ``run_id`` has the shape of a run id (ASCII letters, digits, ``_.:-``)."""
    return _RUN_ID.fullmatch(run_id) is not None


def parse_after(given: str | None) -> int | None:
    """``?after=N`` of an event stream: -1 when absent or empty, N for ASCII digits (at most
    nine), None for anything else (``²``, ``-1``, ``1e3``, a space): a 400."""
    if not given:
        return -1
    return int(given) if _AFTER.fullmatch(given) else None


def _note(text: str | None) -> str | None:
    """A ``?message=`` note as shown: printable, one line, at most 300 characters."""
    if not text:
        return None
    shown = "".join(c if c.isprintable() else " " for c in text[:_MESSAGE_CHARS])
    return shown.strip() or None


class Board:
    """The routes, bound to one service and one set of accounts."""

    def __init__(
        self, service: BoardService, signer: Signer, checker: SecretChecker, streams: StreamSlots
    ) -> None:
        self.service = service
        self.signer = signer
        self.streams = streams
        #: Paths as shown: relative to the cards or runs folder, never the server's own.
        self.shown = service.shown
        self.login = LoginPages(self.page, signer, checker)
        self.jinja = Environment(
            loader=FileSystemLoader(_HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            auto_reload=False,
        )
        self.jinja.filters["shown"] = self.shown

    # -- helpers -----------------------------------------------------------------------------
    def page(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        state = request.scope.get("state", {})
        html = self.jinja.get_template(template).render(
            user=state.get("user"),
            csrf=state.get("csrf", ""),
            message=_note(request.query_params.get("message")),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    @staticmethod
    def form(request: Request) -> dict[str, str]:
        """The form the gate already read (urlencoded), as one value a field."""
        return dict(request.scope.get("state", {}).get("form", {}))

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
            return PlainTextResponse(f"card not created: {self.shown(e)}", status_code=400)
        return RedirectResponse(f"/cards/{card.name}", status_code=303)

    async def card_page(self, request: Request, error: str | None = None) -> Response:
        name = request.path_params["name"]
        try:
            card = self.service.get_card(name)
        except BoardError as e:
            return PlainTextResponse(self.shown(e), status_code=404)
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
            return await self.card_page(request, error=f"not saved: {self.shown(e)}")
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
        except CardNotFoundError as e:
            return PlainTextResponse(f"run not started: {self.shown(e)}", status_code=404)
        except BoardError as e:
            return PlainTextResponse(f"run not started: {self.shown(e)}", status_code=400)
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
        login = str(request.scope.get("state", {}).get("login", ""))
        try:
            self.streams.take(login)  # before any work: a flood of streams costs nothing
        except LimitReached as e:
            return PlainTextResponse(str(e), 429, headers={"Retry-After": str(e.retry_after)})
        try:
            found = await self.service.get_run(run_id)
        except BaseException:
            self.streams.give_back(login)
            raise
        if found is None:
            self.streams.give_back(login)
            return PlainTextResponse(f"there is no run {run_id!r}", status_code=404)
        # The whole story at each (re)connection: a restarted board numbers its events anew,
        # so a browser's Last-Event-ID is not honoured; the page redraws its timeline on open.
        # A program that keeps its place within one board's life passes ?after=N.
        after = parse_after(request.query_params.get("after"))
        if after is None:
            self.streams.give_back(login)
            return PlainTextResponse(
                "after: expected the number of the last event you have (0, 1, 2, ...)", 400
            )

        async def events() -> AsyncIterator[dict[str, Any]]:
            async for event in self.service.follow(run_id, after):
                shown = {**event.as_dict(), "data": _paths_shown(event.data, self.shown)}
                yield {"id": str(event.seq), "data": json.dumps(shown)}

        # No reconnection after the run's end: the script closes the stream itself.
        return _SlotStream(events(), ping=15, on_close=lambda: self.streams.give_back(login))

    async def run_file(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        prepared = await self.service.prepared(run_id)
        relative = request.path_params["path"]
        fd = None if prepared is None else open_run_file(prepared.run_dir, relative)
        if fd is None:
            return PlainTextResponse("no such file", status_code=404)
        media = mimetypes.guess_type(relative)[0] or "application/octet-stream"
        # A report is the run's own HTML: it may not script the board (sandboxed, no scripts).
        csp = "sandbox; default-src 'self' 'unsafe-inline'"
        return OpenFileResponse(fd, media, {"Content-Security-Policy": csp})

    async def report(self, request: Request) -> Response:
        path = await self.service.report(request.path_params["run_id"])
        fd = None if path is None else open_run_file(path.parent, path.name)
        if fd is None:
            return PlainTextResponse("the run has not started yet: no report", status_code=404)
        csp = "sandbox; default-src 'self' data: 'unsafe-inline'"
        return OpenFileResponse(fd, "text/html", {"Content-Security-Policy": csp})

    async def chat(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        question = self.form(request).get("question", "")
        try:
            pieces = self.service.ask(run_id, question)
            first = await anext(pieces, "")
        except BoardError as e:
            return PlainTextResponse(self.shown(e), status_code=400)

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
            return PlainTextResponse(f"not cancelled: {self.shown(e)}", status_code=400)
        return RedirectResponse(f"/runs/{run_id}?message=Cancelled.", status_code=303)

    async def findings(self, request: Request) -> Response:
        return self.page(request, "findings.html", findings=await self.service.findings())

    async def script(self, request: Request) -> Response:
        return FileResponse(_HERE / "static" / "board.js", media_type="text/javascript")


class _SlotStream(EventSourceResponse):
    """An event stream that gives its slot back when it ends, however it ends (the run's end,
    the client gone, the server stopping), also when its generator never started."""

    def __init__(self, *args: Any, on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


class OpenFileResponse(Response):
    """A file sent from a descriptor already opened and checked (no second lookup by name that
    a planted link could redirect); the descriptor is closed at the end, also when the client
    goes away first."""

    chunk_bytes = 256 * 1024

    def __init__(self, fd: int, media_type: str, headers: dict[str, str]) -> None:
        size = os.fstat(fd).st_size
        super().__init__(None, 200, {**headers, "content-length": str(size)}, media_type)
        self.fd = fd

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            if scope.get("method") != "HEAD":
                while chunk := await anyio.to_thread.run_sync(os.read, self.fd, self.chunk_bytes):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            os.close(self.fd)


def _paths_shown(value: Any, shown: Callable[[object], str]) -> Any:
    """``value`` (an event's data) with the paths of its strings shown as the board shows
    them (a build's output, a reason)."""
    if isinstance(value, str):
        return shown(value) if "/" in value else value
    if isinstance(value, dict):
        return {k: _paths_shown(v, shown) for k, v in value.items()}
    if isinstance(value, list):
        return [_paths_shown(v, shown) for v in value]
    return value


Endpoint = Callable[[Request], Awaitable[Response]]


def _named_run(handler: Endpoint) -> Endpoint:
    """``handler`` for a route with ``{run_id}``, answering 404 for a value that is no run id
    (it never reaches the database)."""

    async def checked(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not valid_run_id(run_id):
            return PlainTextResponse(f"there is no run {run_id[:80]!r}", status_code=404)
        return await handler(request)

    return checked


def create_app(
    service: BoardService,
    accounts: Accounts,
    *,
    allowed_hosts: list[str] | None = None,
    limits: LoginLimits | None = None,
    streams: StreamSlots | None = None,
) -> Starlette:
    """The board as an ASGI app; the service is started and stopped with it. ``limits``: the
    login checks' limits; ``streams``: the live event streams' caps (per login, in all)."""
    signer = Signer(service.data_dir)
    checker = SecretChecker(accounts, limits)
    board = Board(service, signer, checker, streams or StreamSlots())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with service:
                yield
        finally:
            checker.close()

    routes = [
        Route("/login", board.login.login_page, methods=["GET"]),
        Route("/login", board.login.login, methods=["POST"]),
        Route("/logout", board.login.logout, methods=["POST"]),
        Route("/", board.board, methods=["GET"]),
        Route("/cards", board.create_card, methods=["POST"]),
        Route("/cards/{name}", board.card_page, methods=["GET"]),
        Route("/cards/{name}", board.save_card, methods=["POST"]),
        Route("/cards/{name}/run", board.start_run, methods=["POST"]),
        Route("/runs", board.runs, methods=["GET"]),
        Route("/runs/{run_id}", _named_run(board.run_page), methods=["GET"]),
        Route("/runs/{run_id}/events", _named_run(board.run_events), methods=["GET"]),
        Route("/runs/{run_id}/files/{path:path}", _named_run(board.run_file), methods=["GET"]),
        Route("/runs/{run_id}/report", _named_run(board.report), methods=["GET"]),
        Route("/runs/{run_id}/chat", _named_run(board.chat), methods=["POST"]),
        Route("/runs/{run_id}/follow-up", _named_run(board.follow_up), methods=["POST"]),
        Route("/runs/{run_id}/test", _named_run(board.test_change), methods=["POST"]),
        Route("/runs/{run_id}/cancel", _named_run(board.cancel), methods=["POST"]),
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
    app.add_middleware(
        Gate,
        signer=signer,
        checker=checker,
        allowed_hosts=allowed_hosts,
        pages=board.login.gate_pages(),
    )
    return app
