"""What changed on the board, as it happens: one watcher for every open page.

:class:`BoardWatch` looks at the cards folder (a ``stat`` a card; parsed cards come from the
folder's cache) and at the runs (the :class:`~loopkit_board.run_index.RunIndex`: only runs that
can have changed are read) every ``poll`` seconds while someone watches, and hands each change
to every subscriber: ``{"version": N, "cards": [names], "runs": [run ids]}``. A page redraws its
live part when a change concerns it (the board: any; a card's page: that card or its runs), so
a browser holds one stream, whatever the page shows, and the server one watcher, whatever the
number of browsers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

from loopkit.durable.database import is_database_unavailable

__all__ = ["BoardWatch"]

#: Seconds between looks while the runs database cannot be reached.
_OUTAGE_POLL = 2.0


class BoardWatch:
    """Changes of the cards and runs, shared by every subscriber (see the module docstring).
    ``cards()`` returns a signature a card (what a page shows of it), ``runs()`` the ids of the
    runs that changed since the last call."""

    def __init__(
        self,
        cards: Callable[[], dict[str, tuple[Any, ...]]],
        runs: Callable[[], Awaitable[set[str]]],
        *,
        poll: float = 0.25,
    ) -> None:
        self._cards = cards
        self._runs = runs
        self.poll = poll
        self.version = 0
        self._changes: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._subscribers = 0
        self._task: asyncio.Task[None] | None = None

    async def subscribe(self) -> AsyncIterator[dict[str, Any]]:
        """Each change from now on (first ``{"version": N}`` alone: where the page starts)."""
        self._subscribers += 1
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch(), name="board watch")
        try:
            seen = self.version
            yield {"version": seen, "cards": [], "runs": []}
            while True:
                async with self._changed:
                    await self._changed.wait_for(partial(self._newer_than, seen))
                    news = [c for c in self._changes if c["version"] > seen]
                for change in news:
                    yield change
                seen = news[-1]["version"] if news else self.version
        finally:
            self._subscribers -= 1
            if self._subscribers == 0 and self._task is not None:
                self._task.cancel()
                self._task = None

    def _newer_than(self, seen: int) -> bool:
        return self.version > seen

    async def _watch(self) -> None:
        known = await asyncio.to_thread(self._cards)
        with contextlib.suppress(Exception):
            await self._runs()  # what exists now is not news
        while True:
            await asyncio.sleep(self.poll)
            now = await asyncio.to_thread(self._cards)
            cards = sorted(n for n in now.keys() | known.keys() if now.get(n) != known.get(n))
            known = now
            try:
                runs = sorted(await self._runs())
            except Exception as e:
                if not is_database_unavailable(e):
                    raise
                runs = []
                await asyncio.sleep(_OUTAGE_POLL)
            if cards or runs:
                await self._publish({"cards": cards, "runs": runs})

    async def _publish(self, change: dict[str, Any]) -> None:
        async with self._changed:
            self.version += 1
            self._changes = [*self._changes[-63:], {"version": self.version, **change}]
            self._changed.notify_all()
