"""The web board: a Starlette app over :class:`~loopkit_board.service.BoardService`.

Server-rendered pages (Jinja2), one small script (``static/board.js``: one ``EventSource`` a
page, ``fetch`` for the streaming chat and for a page's live part); no front-end build. Every
page is live: a run's page over the run's stream (:mod:`loopkit_board.run_pages`), every other
page over ``/events`` (which cards and runs changed: the page fetches its ``?part=live``
again). Every route but the login page needs a login (:mod:`loopkit_board.auth`), checked by
:class:`Gate` before the app sees the request; every state-changing request with the login
cookie must carry its CSRF token.

Pages: ``/`` the board (search and filters, columns New, In Work, Done, Failed, pages of
cards; a new-card form), ``/cards/NAME`` (edit, start a run in a role, the card's runs: who
started each and how long it took), ``/runs`` (every run, filtered, in pages) and ``/runs/ID``
(timeline, approvals, screenshots, GIF, report, highlighted diff, findings, chat),
``/findings``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from loopkit.cards.card import CardState
from loopkit.durable.errors import DatabaseUnavailableError
from loopkit_board.auth import Accounts, Signer
from loopkit_board.filters import CardFilter, RunFilter
from loopkit_board.gate import Gate
from loopkit_board.limits import LimitReached, LoginLimits, SecretChecker, StreamSlots
from loopkit_board.login_pages import LoginPages
from loopkit_board.responses import SlotStream, queued
from loopkit_board.run_index import RunSummary
from loopkit_board.run_pages import RunPages, parse_after
from loopkit_board.service import BoardError, BoardService

__all__ = ["CARDS_PAGE", "RUNS_PAGE", "create_app", "parse_after", "valid_run_id"]

_HERE = Path(__file__).parent
_COLUMNS = [s.value for s in CardState]
#: A run id as the queue makes them (32 hex digits), or as a program chose it: letters,
#: digits and ``_.:-``; anything else names no run and never reaches the database.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
#: Cards a page of the board shows (all columns together), and runs a page of /runs.
CARDS_PAGE = 100
RUNS_PAGE = 50
#: The note a redirect shows on the next page (``?message=``): short, one line.
_MESSAGE_CHARS = 300


def valid_run_id(run_id: str) -> bool:
    """Whether ``run_id`` has the shape of a run id (ASCII letters, digits, ``_.:-``)."""
    return _RUN_ID.fullmatch(run_id) is not None


def _page_of(items: Sequence[Any], given: str | None, size: int) -> tuple[int, int, list[Any]]:
    """Page ``given`` (1 when absent or not a number; the last when past it) of ``items``:
    (its number, the number of pages, its items)."""
    pages = max(1, -(-len(items) // size))
    number = int(given) if given and given.isascii() and given.isdigit() and len(given) < 7 else 1
    number = min(max(1, number), pages)
    return number, pages, list(items[(number - 1) * size : number * size])


def _query(request: Request) -> str:
    """The request's query without ``page``, ``part`` and ``message`` (for the pager's links)."""
    from urllib.parse import urlencode

    kept = [
        (k, v)
        for k, v in request.query_params.multi_items()
        if k not in ("page", "part", "message")
    ]
    return urlencode(kept)


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
        self.jinja.filters["diff_html"] = _diff_html
        self.jinja.globals["highlight_css"] = _highlight_css()
        self.runs_pages = RunPages(self)

    # -- helpers -----------------------------------------------------------------------------
    def page(
        self,
        request: Request,
        template: str,
        status: int = 200,
        *,
        block: str | None = None,
        **values: Any,
    ) -> HTMLResponse:
        """A page; ``block``: only that block of it (a live page's part, fetched again when
        its stream says something changed)."""
        state = request.scope.get("state", {})
        values = {
            "user": state.get("user"),
            "csrf": state.get("csrf", ""),
            "message": _note(request.query_params.get("message")),
            **values,
        }
        found = self.jinja.get_template(template)
        if block is not None and block in found.blocks:
            context = found.new_context(values)
            html = "".join(found.blocks[block](context))
        else:
            html = found.render(**values)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    @staticmethod
    def form(request: Request) -> dict[str, str]:
        """The form the gate already read (urlencoded), as one value a field."""
        return dict(request.scope.get("state", {}).get("form", {}))

    # -- cards -------------------------------------------------------------------------------
    async def board(self, request: Request) -> Response:
        query = request.query_params
        where = CardFilter.from_query(query)
        cards = self.service.list_cards()
        runs = await self.service.run_summaries()
        latest: dict[str, RunSummary] = {}
        for run in runs:  # newest first: the first of a card is its latest
            latest.setdefault(run.name, run)
        positions = await self.service.queue_positions()
        found = [c for c in cards if where.matches(c, latest.get(c.name))]
        page, pages, shown = _page_of(found, query.get("page"), CARDS_PAGE)
        columns: dict[str, list[Any]] = {state: [] for state in _COLUMNS}
        totals = dict.fromkeys(_COLUMNS, 0)
        for card in found:
            totals[card.state if card.state in totals else CardState.NEW.value] += 1
        for card in shown:
            columns.get(card.state, columns[CardState.NEW.value]).append(card)
        active = {
            name: run
            for name, run in latest.items()
            if run.state in ("queued", "running", "interrupted")
        }
        return self.page(
            request,
            "board.html",
            block="live" if query.get("part") == "live" else None,
            columns=list(columns.items()),
            totals=totals,
            runs=active,
            latest=latest,
            positions=positions,
            where=where,
            total=len(found),
            every=len(cards),
            page_no=page,
            pages=pages,
            query=_query(request),
            categories=sorted({c.category for c in cards if c.category}),
            roles=sorted({r.role for r in runs} | set(self.service.roles)),
            starters=sorted({r.started_by for r in runs if r.started_by}),
            states=_COLUMNS,
            live="board",
        )

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
        runs = await self.service.run_summaries(RunFilter(card=card.name))
        text = self.form(request).get("text", card.text) if error else card.text
        return self.page(
            request,
            "card.html",
            400 if error else 200,
            block="live" if request.query_params.get("part") == "live" else None,
            card=card,
            text=text,
            error=error,
            runs=runs,
            positions=await self.service.queue_positions(),
            roles=self.service.roles,
            default_role=self.service.default_role,
            live="board",
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
        asked = form.get("approval_required", "")
        tools = [t for t in asked.replace(",", " ").split() if t] if asked.strip() else None
        user = request.scope.get("state", {}).get("user")
        enqueued = self.service.enqueue(
            name,
            form.get("role") or None,
            started_by=str(user) if user else None,
            approval_required=tools,
            # "then": develop, then test (the pipeline): Done only when the test passes.
            then=form.get("then") or None,
        )
        return await queued(enqueued, self.shown)

    # -- runs --------------------------------------------------------------------------------
    async def runs(self, request: Request) -> Response:
        where = RunFilter.from_query(request.query_params)
        every = await self.service.run_summaries()
        found = where.apply(every, self._titles() if where.q else None)
        page, pages, shown = _page_of(found, request.query_params.get("page"), RUNS_PAGE)
        positions = await self.service.queue_positions()
        return self.page(
            request,
            "runs.html",
            block="live" if request.query_params.get("part") == "live" else None,
            runs=shown,
            total=len(found),
            every=len(every),
            page_no=page,
            pages=pages,
            positions=positions,
            where=where,
            roles=sorted({r.role for r in every} | set(self.service.roles)),
            starters=sorted({r.started_by for r in every if r.started_by}),
            titles=self._titles(),
            query=_query(request),
            live="board",
        )

    def _titles(self) -> dict[str, str]:
        return {c.name: c.title for c in self.service.list_cards()}

    async def board_events(self, request: Request) -> Response:
        """The board-wide stream every page but a run's holds (one per page): which cards and
        runs changed."""
        login = str(request.scope.get("state", {}).get("login", ""))
        try:
            self.streams.take(login)
        except LimitReached as e:
            return PlainTextResponse(str(e), 429, headers={"Retry-After": str(e.retry_after)})

        async def events() -> AsyncIterator[dict[str, Any]]:
            async for change in self.service.watch.subscribe():
                yield {"data": json.dumps(change)}

        return self.stream(events(), login)

    def stream(self, events: AsyncIterator[dict[str, Any]], login: str) -> Response:
        """An event stream holding one of ``login``'s slots until it closes."""
        return SlotStream(events, ping=15, on_close=lambda: self.streams.give_back(login))

    async def findings(self, request: Request) -> Response:
        return self.page(
            request,
            "findings.html",
            block="live" if request.query_params.get("part") == "live" else None,
            findings=await self.service.findings(),
            live="board",
        )

    async def script(self, request: Request) -> Response:
        return FileResponse(_HERE / "static" / "board.js", media_type="text/javascript")


def _diff_html(text: str) -> Markup:
    from loopkit_board.diff_view import render_diff

    return Markup(render_diff(text))  # render_diff escapes every piece of the diff


def _highlight_css() -> Markup:
    from loopkit_board.diff_view import highlight_css

    return Markup(highlight_css())  # Pygments' own style sheet, no input in it


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
    run = board.runs_pages

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
        Route("/events", board.board_events, methods=["GET"]),
        Route("/runs", board.runs, methods=["GET"]),
        Route("/runs/{run_id}", _named_run(run.run_page), methods=["GET"]),
        Route("/runs/{run_id}/events", _named_run(run.run_events), methods=["GET"]),
        Route("/runs/{run_id}/files/{path:path}", _named_run(run.run_file), methods=["GET"]),
        Route("/runs/{run_id}/shots/{path:path}", _named_run(run.shot), methods=["GET"]),
        Route("/runs/{run_id}/log", _named_run(run.run_log), methods=["GET"]),
        Route("/runs/{run_id}/report", _named_run(run.report), methods=["GET"]),
        Route("/runs/{run_id}/chat", _named_run(run.chat), methods=["POST"]),
        Route("/runs/{run_id}/approve", _named_run(run.approve), methods=["POST"]),
        Route("/runs/{run_id}/follow-up", _named_run(run.follow_up), methods=["POST"]),
        Route("/runs/{run_id}/test", _named_run(run.test_change), methods=["POST"]),
        Route("/runs/{run_id}/cancel", _named_run(run.cancel), methods=["POST"]),
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
