"""The board's run routes: a run's page and its live stream, its files, report, log, pictures,
chat, approvals, and the actions on it (cancel, follow-up, "Test this change").

The page is live over one stream, ``/runs/ID/events`` (:meth:`BoardService.follow
<loopkit_board.service.BoardService.follow>`): the timeline, the state, the queue place, the
approvals as they are asked and answered; a ``files`` event (new screenshots, the report, the
commit) makes the page fetch its ``?part=files`` again, and the run's end does too, so the
screenshots, the GIF, the report and the diff appear without a reload.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from loopkit_board.artifacts import open_run_file
from loopkit_board.limits import LimitReached, StreamSlots
from loopkit_board.responses import OpenFileResponse, paths_shown, queued
from loopkit_board.service import BoardError, BoardService

__all__ = ["PageHost", "RunPages", "parse_after"]

_AFTER_DIGITS = 9
#: Media types of the run's text files (served as text, never run as HTML).
_TEXT_FILES = {".jsonl": "text/plain", ".log": "text/plain", ".txt": "text/plain"}


def parse_after(given: str | None) -> int | None:
    """``?after=N`` of an event stream: -1 when absent or empty, N for ASCII digits (at most
    nine), None for anything else (``²``, ``-1``, ``1e3``, a space): a 400."""
    if not given:
        return -1
    ok = given.isascii() and given.isdigit() and len(given) <= _AFTER_DIGITS
    return int(given) if ok else None


def _who(request: Request) -> str | None:
    user = request.scope.get("state", {}).get("user")
    return str(user) if user else None


class PageHost(Protocol):
    """What the run routes take from the board that serves them (:class:`~loopkit_board.app.Board`):
    its service, how it shows paths, its stream slots, and how it renders a page, reads a form and
    opens an event stream."""

    @property
    def service(self) -> BoardService: ...

    @property
    def shown(self) -> Callable[[object], str]: ...

    @property
    def streams(self) -> StreamSlots: ...

    def page(
        self, request: Request, template: str, status: int = 200, *, block: str | None = None,
        **values: Any,
    ) -> Response: ...  # fmt: skip

    def form(self, request: Request) -> dict[str, str]: ...

    def stream(self, events: AsyncIterator[dict[str, Any]], login: str) -> Response: ...


class RunPages:
    """The run routes of one board (:class:`PageHost`)."""

    def __init__(self, board: PageHost) -> None:
        self.board = board
        self.service = board.service
        self.shown = board.shown

    # -- the page ----------------------------------------------------------------------------
    async def run_page(self, request: Request) -> Response:
        from loopkit_board.artifacts import merge_findings

        run_id = request.path_params["run_id"]
        details = await self.service.run_details(run_id)
        if details is None:
            return PlainTextResponse(f"there is no run {run_id!r}", status_code=404)
        record = details.record
        title = record.title or self._card_title(record.card)
        values: dict[str, Any] = {
            "r": record,
            "title": title,
            "position": details.position,
            "artifacts": details.artifacts,
            "started": details.prepared is not None,
            "roles": self.service.roles,
            "trace_url": self.service.trace_url(details.prepared),
            "log_link": self._log_link(details),
            "app_logs": [n for n in ("app.log", "app-output.log") if _has(details, n)],
            "approvals": await self.service.approvals(run_id),
        }
        note = request.query_params.get("message") or ""
        if "in the queue" in note:  # the note the queue answered with, as the run is now
            head = note.split(" (place", 1)[0]
            values["message"] = (
                f"{head} (place {details.position} in the queue)." if details.position else None
            )
        part = request.query_params.get("part")
        block = part if part in ("files", "actions", "approvals", "links") else None
        if block in (None, "files"):
            values["findings"] = merge_findings(details.artifacts.findings_dbs)
            values.update(await self._pictures(details))
        if block is None:
            chat = await self.service.chat_history(run_id)
            values["chat"] = [{"role": m.role.value, "text": m.text} for m in chat]
        return self.board.page(request, "run.html", block=block, live="run", **values)

    def _card_title(self, card: str) -> str:
        """The card's title from its file (a run not yet started has none of its own)."""
        name = Path(card).name
        try:
            return self.service.get_card(name).title
        except BoardError:
            return name

    def _log_link(self, details: Any) -> str | None:
        prepared = details.prepared
        if prepared is None:
            return None
        return f"/runs/{details.record.run_id}/log"

    async def _pictures(self, details: Any) -> dict[str, Any]:
        """The screenshots (cut to the app's windows when pillow is there) and the GIF."""
        from loopkit_board.media import pillow_available, run_gif

        folder = details.artifacts.folder
        images = list(details.artifacts.images)
        shots = [i for i in images if i.endswith(".png")]
        gifs = [i for i in images if i.endswith(".gif") and not i.endswith("board-run.gif")]
        made = None
        if folder is not None and shots and details.record.state in ("done", "failed", "cancelled"):
            made = await anyio.to_thread.run_sync(run_gif, folder, shots)
        return {
            "shots": shots,
            "gifs": gifs + ([made] if made else []),
            "cropped": pillow_available(),
        }

    # -- the stream --------------------------------------------------------------------------
    async def run_events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        streams = self.board.streams
        login = str(request.scope.get("state", {}).get("login", ""))
        try:
            streams.take(login)  # before any work: a flood of streams costs nothing
        except LimitReached as e:
            return PlainTextResponse(str(e), 429, headers={"Retry-After": str(e.retry_after)})
        try:
            found = await self.service.get_run(run_id)
        except BaseException:
            streams.give_back(login)
            raise
        if found is None:
            streams.give_back(login)
            return PlainTextResponse(f"there is no run {run_id!r}", status_code=404)
        # The whole story at each (re)connection: a restarted board numbers its events anew,
        # so a browser's Last-Event-ID is not honoured; the page redraws its timeline on open.
        # A program that keeps its place within one board's life passes ?after=N.
        after = parse_after(request.query_params.get("after"))
        if after is None:
            streams.give_back(login)
            return PlainTextResponse(
                "after: expected the number of the last event you have (0, 1, 2, ...)", 400
            )

        async def events() -> AsyncIterator[dict[str, Any]]:
            async for event in self.service.follow(run_id, after):
                shown = {**event.as_dict(), "data": paths_shown(event.data, self.shown)}
                yield {"id": str(event.seq), "data": json.dumps(shown)}

        return self.board.stream(events(), login)

    # -- files -------------------------------------------------------------------------------
    async def run_file(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        prepared = await self.service.prepared(run_id)
        relative = request.path_params["path"]
        fd = None if prepared is None else open_run_file(prepared.run_dir, relative)
        if fd is None:
            return PlainTextResponse("no such file", status_code=404)
        suffix = Path(relative).suffix.lower()
        media = _TEXT_FILES.get(suffix) or mimetypes.guess_type(relative)[0]
        media = media or "application/octet-stream"
        # A report is the run's own HTML: it may not script the board (sandboxed, no scripts).
        csp = "sandbox; default-src 'self' 'unsafe-inline'"
        return OpenFileResponse(fd, media, {"Content-Security-Policy": csp})

    async def run_log(self, request: Request) -> Response:
        """The run log (``run.jsonl``) as text, wherever the run wrote it."""
        prepared = await self.service.prepared(request.path_params["run_id"])
        if prepared is None:
            return PlainTextResponse("the run has not started yet: no log", status_code=404)
        log = Path(prepared.log_path)
        fd = open_run_file(log.parent, log.name)
        if fd is None:
            return PlainTextResponse("no log yet", status_code=404)
        headers = {"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"}
        return OpenFileResponse(fd, "text/plain; charset=utf-8", headers)

    async def shot(self, request: Request) -> Response:
        """A screenshot cut to the app's windows (the whole file without pillow)."""
        from loopkit_board.media import cropped_png

        run_id = request.path_params["run_id"]
        prepared = await self.service.prepared(run_id)
        relative = request.path_params["path"]
        if prepared is None or not relative.endswith(".png"):
            return PlainTextResponse("no such file", status_code=404)
        data = await anyio.to_thread.run_sync(cropped_png, prepared.run_dir, relative)
        if data is None:
            return await self.run_file(request)
        return Response(data, media_type="image/png", headers={"Cache-Control": "no-cache"})

    async def report(self, request: Request) -> Response:
        path = await self.service.report(request.path_params["run_id"])
        fd = None if path is None else open_run_file(path.parent, path.name)
        if fd is None:
            return PlainTextResponse("the run has not started yet: no report", status_code=404)
        csp = "sandbox; default-src 'self' data: 'unsafe-inline'"
        return OpenFileResponse(fd, "text/html", {"Content-Security-Policy": csp})

    # -- chat and actions --------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        question = self.board.form(request).get("question", "")
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

    async def approve(self, request: Request) -> Response:
        """Answer a waiting approval: ``number``, ``decision`` (``approve`` or ``deny``)."""
        run_id = request.path_params["run_id"]
        form = self.board.form(request)
        number = form.get("number", "")
        decision = form.get("decision", "")
        if not (number.isascii() and number.isdigit() and len(number) <= 6):
            return PlainTextResponse("number: expected the approval's number (1, 2, ...)", 400)
        if decision not in ("approve", "deny"):
            return PlainTextResponse("decision: expected approve or deny", 400)
        note = (form.get("note") or "").strip()[:2000] or None
        try:
            await self.service.answer_approval(
                run_id, int(number), approved=decision == "approve", by=_who(request) or "?",
                note=note,
            )  # fmt: skip
        except BoardError as e:
            return PlainTextResponse(f"not answered: {self.shown(e)}", status_code=400)
        said = "Approved" if decision == "approve" else "Refused"
        if request.headers.get("x-requested-with") == "fetch":
            return PlainTextResponse(f"{said}.")
        return RedirectResponse(f"/runs/{run_id}?message={said}.", status_code=303)

    async def follow_up(self, request: Request) -> Response:
        """A follow-up run in the earlier run's repository."""
        run_id = request.path_params["run_id"]
        if await self.service.get_run(run_id) is None:
            return PlainTextResponse("there is no such run", status_code=404)
        role = self.board.form(request).get("role") or None
        return await queued(
            self.service.follow_up(run_id, role, started_by=_who(request)), self.shown
        )

    async def test_change(self, request: Request) -> Response:
        """The "Test this change" action: the test role on a done run's repository."""
        run_id = request.path_params["run_id"]
        if await self.service.get_run(run_id) is None:
            return PlainTextResponse("there is no such run", status_code=404)
        return await queued(self.service.test_change(run_id, started_by=_who(request)), self.shown)

    async def cancel(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            await self.service.cancel(run_id)
        except BoardError as e:
            return PlainTextResponse(f"not cancelled: {self.shown(e)}", status_code=400)
        return RedirectResponse(f"/runs/{run_id}?message=Cancelled.", status_code=303)


def _has(details: Any, name: str) -> bool:
    folder = details.artifacts.folder
    if folder is None:
        return False
    fd = open_run_file(folder, name)
    if fd is None:
        return False
    import os

    os.close(fd)
    return True
