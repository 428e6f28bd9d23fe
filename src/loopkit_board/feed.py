"""Following a run as it happens: its queue place, then its run log, as a stream of events.

One :class:`RunFeed` per run and process, whatever the number of watchers: it polls the run's
durable record (queue place, state) and reads the run log (JSON lines, written and flushed by the
run as it goes) from where it stopped, and hands every event to every subscriber. Ten browsers
watching one run cost one file read every poll, and nothing at all to the run itself, which
never knows it is watched.

Events (:class:`RunEvent`): ``queued`` (``position``: 1 is next), ``state`` (the run's state
when it changes: ``running``, ``interrupted``, ...), then one per log line with the line's type
(``start``, ``round`` with tokens, calls and the model's text, ``tool`` with name, arguments and
a short result, ``error``, ``interrupted``, ``resumed``, ``approval_requested``, ``approval``,
``result``), ``files`` (the run folder's pictures and reports changed: ``count``) and last
``end`` (``state``, ``reason``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from loopkit.durable.database import is_database_unavailable

__all__ = ["SHORT_RESULT_CHARS", "RunEvent", "RunFeed", "log_events", "short"]

#: A tool result in an event is cut to this many characters (the log keeps it whole).
SHORT_RESULT_CHARS = 300
_ENDED = ("done", "failed", "cancelled")
#: Seconds between state probes while the runs database cannot be reached.
_OUTAGE_PROBE = 2.0


def short(text: Any, limit: int = SHORT_RESULT_CHARS) -> str:
    """``text`` as a string, cut to ``limit`` characters with a note of the whole length."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + f"… ({len(s)} characters)"


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One thing that happened to a run; ``seq`` numbers the run's events from 0."""

    seq: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    time: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "data": self.data, "time": self.time}


def log_events(line: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The event a run-log line makes (a tool's result shortened), or None for a line that is
    not an event (not an object)."""
    kind = line.get("type")
    data = line.get("data")
    if not isinstance(kind, str) or not isinstance(data, dict):
        return None
    if kind == "tool":
        data = {**data, "result": short(data.get("result", ""))}
    elif kind == "start":
        data = {k: v for k, v in data.items() if k != "tools"} | {
            "tools": len(data.get("tools") or [])
        }
    return kind, data


#: What a feed asks the service: the run's state and queue place, and its log's path once known.
Probe = Callable[[], Awaitable[tuple[str, int | None, Path | None, str | None]]]


class RunFeed:
    """The events of one run, read once and shared by every subscriber."""

    def __init__(
        self,
        run_id: str,
        probe: Probe,
        *,
        log_poll: float = 0.1,
        state_poll: float = 0.5,
        on_idle: Callable[[RunFeed], None] | None = None,
        files: Callable[[Path], tuple[str, ...]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.events: list[RunEvent] = []
        self.ended = False
        self._probe = probe
        self._log_poll = log_poll
        self._state_poll = state_poll
        self._changed = asyncio.Condition()
        self._subscribers = 0
        self._task: asyncio.Task[None] | None = None
        self._on_idle = on_idle
        #: The run folder's files worth showing, given its log's path (a change: ``files``).
        self._files = files

    async def subscribe(self, after: int = -1) -> AsyncIterator[RunEvent]:
        """Every event with ``seq`` > ``after`` (all of them by default), then each new one as
        it happens, until the run ends."""
        self._subscribers += 1
        if self._task is None:
            self._task = asyncio.create_task(self._follow(), name=f"feed {self.run_id}")
        try:
            i = after + 1
            while True:
                async with self._changed:
                    await self._changed.wait_for(partial(self._has_news, i))
                    batch = self.events[i:]
                    over = self.ended
                for event in batch:
                    yield event
                i += len(batch)
                if over and i >= len(self.events):
                    return
        finally:
            self._subscribers -= 1
            if self._subscribers == 0 and self._task is not None and not self.ended:
                self._task.cancel()
                self._task = None
                if self._on_idle is not None:
                    self._on_idle(self)

    def _has_news(self, seen: int) -> bool:
        return len(self.events) > seen or self.ended

    async def _emit(self, kind: str, data: dict[str, Any], time: str | None = None) -> None:
        async with self._changed:
            self.events.append(RunEvent(len(self.events), kind, data, time))
            self._changed.notify_all()

    async def _follow(self) -> None:
        loop = asyncio.get_running_loop()
        last_state: str | None = None
        last_position: int | None = None
        log: Path | None = None
        offset = 0
        partial = b""
        next_probe = 0.0
        state = "queued"
        reason: str | None = None
        listed: tuple[str, ...] = ()
        try:
            while True:
                now = loop.time()
                if now >= next_probe:
                    try:
                        state, position, found, reason = await self._probe()
                    except Exception as e:  # the runs database is away: the log goes on
                        if not is_database_unavailable(e):
                            raise
                        next_probe = now + _OUTAGE_PROBE
                        await asyncio.sleep(self._log_poll)
                        if log is not None:
                            offset, partial = await self._read(log, offset, partial)
                        continue
                    next_probe = now + self._state_poll
                    if state == "queued" and position != last_position:
                        last_position = position
                        await self._emit("queued", {"position": position})
                    if state != last_state:
                        last_state = state
                        await self._emit("state", {"state": state})
                    if log is None and found is not None:
                        log = found
                    if log is not None and self._files is not None:
                        now_listed = await asyncio.to_thread(self._files, log)
                        if now_listed != listed:
                            listed = now_listed
                            await self._emit("files", {"count": len(listed)})
                if log is not None:
                    offset, partial = await self._read(log, offset, partial)
                if state in _ENDED:
                    if log is not None:  # the last lines, written just before the end
                        offset, partial = await self._read(log, offset, partial)
                    await self._emit("end", {"state": state, "reason": reason})
                    return
                await asyncio.sleep(self._log_poll)
        finally:
            async with self._changed:
                self.ended = True if state in _ENDED else self.ended
                self._changed.notify_all()

    async def _read(self, log: Path, offset: int, partial: bytes) -> tuple[int, bytes]:
        try:
            size = os.stat(log).st_size
        except OSError:
            return offset, partial
        if size <= offset:
            return offset, partial
        with log.open("rb") as f:
            f.seek(offset)
            chunk = f.read(size - offset)
        offset += len(chunk)
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop()  # an unfinished last line waits for its end
        for raw in lines:
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                made = log_events(line) if isinstance(line, dict) else None
                if made is not None:
                    await self._emit(made[0], made[1], line.get("time"))
        return offset, partial
