"""Riding out a lost database in a long-running process (a worker, the board, the Slack bot).

:class:`Outage` keeps the state of one database as a process sees it: reachable, or lost since
a given moment. It says so once per change (one log line when the database is lost, one when it
is back, however many tries there were in between) and gives the wait before the next try:
growing from ``first_wait`` to ``max_wait`` with jitter, so many workers do not knock at once.

    outage = Outage(log, what="the runs database", meanwhile="the run in progress waits")
    while running:
        try:
            await runtime.check_database()
            ... one round of work ...
        except Exception as e:
            if not is_database_unavailable(e):
                raise
            await sleep(outage.lost(e))
            continue
        outage.back()
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from loopkit.durable.database import describe_unavailable

__all__ = ["Outage"]


class Outage:
    """One database's reachability as this process sees it (see the module docstring)."""

    def __init__(
        self,
        say: Callable[[str], None],
        *,
        what: str = "the durable runs' database",
        meanwhile: str = "",
        first_wait: float = 0.5,
        max_wait: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < first_wait <= max_wait:
            raise ValueError(
                f"waits: expected 0 < first_wait <= max_wait (got {first_wait}, {max_wait})"
            )
        self.say = say
        self.what = what
        self.meanwhile = meanwhile
        self.first_wait = first_wait
        self.max_wait = max_wait
        self._clock = clock
        #: When the database was lost (None: it is reachable).
        self.since: float | None = None
        #: Failed tries in the current outage.
        self.tries = 0

    @property
    def down(self) -> bool:
        """True from the first failure until :meth:`back`."""
        return self.since is not None

    def lost(self, error: BaseException) -> float:
        """A try failed because the database cannot be reached: says so at the first failure
        of an outage; returns the seconds to wait before the next try."""
        if self.since is None:
            self.since = self._clock()
            self.tries = 0
            then = f"; {self.meanwhile}" if self.meanwhile else ""
            self.say(
                f"{self.what} is unreachable ({describe_unavailable(error)}); retrying "
                f"every {self.max_wait:g} s at most{then}"
            )
        self.tries += 1
        wait = min(self.max_wait, self.first_wait * 2 ** (self.tries - 1))
        return wait * random.uniform(0.8, 1.0)

    def back(self) -> bool:
        """A try worked: says the database is back if it was lost; True if it was."""
        if self.since is None:
            return False
        seconds = self._clock() - self.since
        self.since = None
        self.say(f"{self.what} is reachable again (unreachable for {seconds:.0f} s)")
        return True
