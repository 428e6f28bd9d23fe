"""The answers the board's pages share: a file sent from an open descriptor, an event stream that
holds one of its login's slots, the answer to a request that queued a run, and an event's data
with its paths shown as the board shows them.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from sse_starlette import EventSourceResponse
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from loopkit_board.service import BoardError, CardNotFoundError, QueuedRun

__all__ = ["OpenFileResponse", "SlotStream", "paths_shown", "queued"]


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


class SlotStream(EventSourceResponse):
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


def paths_shown(value: Any, shown: Callable[[object], str]) -> Any:
    """``value`` (an event's data) with the paths of its strings shown as the board shows
    them (a build's output, a reason)."""
    if isinstance(value, str):
        return shown(value) if "/" in value else value
    if isinstance(value, dict):
        return {k: paths_shown(v, shown) for k, v in value.items()}
    if isinstance(value, list):
        return [paths_shown(v, shown) for v in value]
    return value


async def queued(enqueued: Awaitable[QueuedRun], shown: Callable[[object], str]) -> Response:
    """The answer to a request that queued a run: its page (a note says whether it is new;
    the page shows its place in the queue, live), or the refusal."""
    try:
        run = await enqueued
    except CardNotFoundError as e:
        return PlainTextResponse(f"run not started: {shown(e)}", status_code=404)
    except BoardError as e:
        return PlainTextResponse(f"run not started: {shown(e)}", status_code=400)
    note = "Queued" if run.created else "This card already has a run; here it is"
    if run.position:  # the run page keeps this note live: changed or gone as the run moves
        note += f" (place {run.position} in the queue)"
    return RedirectResponse(f"/runs/{run.run_id}?message={note}.", status_code=303)
