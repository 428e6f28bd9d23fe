"""What clients can make the board spend: password and token checks, and live event streams.

argon2 is slow on purpose (tens of milliseconds and 64 MiB a check, more on a busy machine), so
a check never runs on the event loop: :class:`SecretChecker` runs it in a small thread pool
(two threads) behind limits that answer at once, before any hashing, with how long to wait:

- per client (its address): ``client_failures`` failed logins or tokens within ``window_s``
  seconds, and at most ``client_in_flight`` checks at a time;
- per account: ``account_failures`` wrong passwords within ``window_s`` (an attacker with many
  addresses still gets five tries a minute at one account);
- in all: at most ``max_waiting`` checks queued for the pool, and ``token_failures`` unknown
  tokens within ``window_s`` (a token once verified is remembered by its SHA-256 and never
  hashed again, so a program with its token goes on working meanwhile).

A limit is :class:`LimitReached` with ``retry_after`` seconds, which the board answers with 429,
``Retry-After`` and "try again in N s". Other pages never wait for a check.

:class:`StreamSlots` caps the live event streams per login and in all, and gets every slot back
when its stream ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from loopkit.errors import LoopkitError
from loopkit_board.auth import Accounts

__all__ = ["AttemptLimiter", "LimitReached", "LoginLimits", "SecretChecker", "StreamSlots"]

_V = TypeVar("_V")


class LimitReached(LoopkitError):
    """Too many attempts or streams; ``retry_after`` says in how many seconds to try again."""

    def __init__(self, message: str, retry_after: float) -> None:
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(f"{message}; try again in {self.retry_after} s")


class AttemptLimiter:
    """Failed attempts per key within a sliding window: a key with ``max_failures`` failures in
    the last ``window_s`` seconds waits until the oldest of them leaves the window. At most
    ``max_keys`` keys are remembered (the least recently failed go first)."""

    def __init__(
        self,
        max_failures: int,
        window_s: float,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_keys = max_keys
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, key: str) -> float:
        """Seconds before ``key`` may try again (0: now)."""
        times = self._failures.get(key)
        if times is None:
            return 0.0
        now = self._clock()
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._failures[key]
            return 0.0
        if len(times) < self.max_failures:
            return 0.0
        return times[0] + self.window_s - now

    def failed(self, key: str) -> None:
        """Count a failed attempt of ``key``."""
        times = self._failures.pop(key, None) or deque(maxlen=self.max_failures)
        times.append(self._clock())
        self._failures[key] = times
        while len(self._failures) > self.max_keys:
            self._failures.popitem(last=False)

    def forget(self, key: str) -> None:
        """A success: ``key`` starts afresh."""
        self._failures.pop(key, None)


@dataclass(frozen=True, slots=True)
class LoginLimits:
    """The limits of :class:`SecretChecker` (see the module docstring)."""

    window_s: float = 60.0
    client_failures: int = 10
    account_failures: int = 5
    token_failures: int = 60
    client_in_flight: int = 2
    max_waiting: int = 8
    workers: int = 2


class SecretChecker:
    """Checks passwords and tokens against ``accounts`` in a bounded thread pool, behind the
    limits (:class:`LimitReached`). Close it when done (the board's lifespan does)."""

    def __init__(self, accounts: Accounts, limits: LoginLimits | None = None) -> None:
        self.accounts = accounts
        self.limits = limits or LoginLimits()
        window = self.limits.window_s
        self.clients = AttemptLimiter(self.limits.client_failures, window)
        self.names = AttemptLimiter(self.limits.account_failures, window)
        self.unknown_tokens = AttemptLimiter(self.limits.token_failures, window, max_keys=1)
        self._pool = ThreadPoolExecutor(
            self.limits.workers, thread_name_prefix="loopkit-board-argon2", initializer=_nice
        )
        self._waiting = 0
        self._in_flight: dict[str, int] = {}
        self._good_tokens: OrderedDict[str, str] = OrderedDict()
        self._bad_tokens: OrderedDict[str, float] = OrderedDict()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def password(self, client: str, name: str, password: str) -> str | None:
        """``name`` when the password is right, None when not; :class:`LimitReached` first when
        the client or the account must wait."""
        account = f"account:{name}"
        self._check(client, self.names.wait(account), f"too many wrong passwords for {name!r}")

        def counted(user: str | None) -> None:
            if user is None:
                self.clients.failed(client)
                self.names.failed(account)
            else:
                self.clients.forget(client)
                self.names.forget(account)

        return await self._run(client, counted, self.accounts.check_password, name, password)

    async def token(self, client: str, token: str) -> str | None:
        """The token's user (``token:<name>``), or None; a known token costs nothing."""
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        known = self._good_tokens.get(key)
        if known is not None:
            self._good_tokens.move_to_end(key)
            return known
        now = time.monotonic()
        if self._bad_tokens.get(key, 0.0) > now:  # the same wrong token again: no hashing
            self.clients.failed(client)
            return None
        self._check(client, self.unknown_tokens.wait("all"), "too many unknown tokens")

        def counted(user: str | None) -> None:
            if user is None:
                self.clients.failed(client)
                self.unknown_tokens.failed("all")
                _remember(self._bad_tokens, key, now + self.limits.window_s)
            else:
                _remember(self._good_tokens, key, user)

        return await self._run(client, counted, self.accounts.check_token, token)

    def _check(self, client: str, account_wait: float, account_says: str) -> None:
        wait = self.clients.wait(client)
        if wait > 0:
            raise LimitReached("too many failed logins from this address", wait)
        if account_wait > 0:
            raise LimitReached(account_says, account_wait)
        if self._in_flight.get(client, 0) >= self.limits.client_in_flight:
            raise LimitReached("a login check of this address is still running", 1)
        if self._waiting >= self.limits.max_waiting:
            raise LimitReached("the board is busy checking logins", 1)

    async def _run(
        self,
        client: str,
        counted: Callable[[str | None], None],
        check: Callable[..., str | None],
        *args: str,
    ) -> str | None:
        """``check(*args)`` in the pool. The check is counted (``counted``, the limits, the
        waiting and in-flight numbers) when it ends, not when its caller stops waiting: a
        client that disconnects at once neither frees a place early nor escapes the limits."""
        self._waiting += 1
        self._in_flight[client] = self._in_flight.get(client, 0) + 1
        future = asyncio.get_running_loop().run_in_executor(self._pool, check, *args)

        def done(finished: asyncio.Future[str | None]) -> None:
            self._waiting -= 1
            left = self._in_flight[client] - 1
            if left:
                self._in_flight[client] = left
            else:
                del self._in_flight[client]
            if not finished.cancelled() and finished.exception() is None:
                counted(finished.result())

        future.add_done_callback(done)
        return await asyncio.shield(future)


#: The argon2 threads' niceness: below the event loop's, so pages go first on a busy machine.
NICENESS = 10


def _nice() -> None:
    """Lower this pool thread's priority (Linux: per thread; argon2's own lane threads, made
    from it, inherit it). Elsewhere, or when not allowed, it stays as it is."""
    if sys.platform.startswith("linux"):  # elsewhere a thread id is no process id
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)


def _remember(cache: OrderedDict[str, _V], key: str, value: _V) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > 1000:
        cache.popitem(last=False)


class StreamSlots:
    """Live event streams: at most ``per_login`` for one login (its session, or its token) and
    ``total`` in all."""

    def __init__(self, *, per_login: int = 16, total: int = 200) -> None:
        self.per_login = per_login
        self.total = total
        self._open: dict[str, int] = {}
        self._all = 0

    @property
    def open(self) -> int:
        """Streams open now."""
        return self._all

    def take(self, login: str) -> None:
        """A slot for ``login`` (:class:`LimitReached` when none is free); give it back with
        :meth:`give_back`."""
        mine = self._open.get(login, 0)
        if mine >= self.per_login:
            raise LimitReached(
                f"{mine} live streams are open for this login (at most {self.per_login}); "
                "close some run pages",
                5,
            )
        if self._all >= self.total:
            raise LimitReached(f"the board has {self._all} live streams open (its limit)", 5)
        self._open[login] = mine + 1
        self._all += 1

    def give_back(self, login: str) -> None:
        left = self._open.get(login, 0) - 1
        if left > 0:
            self._open[login] = left
        else:
            self._open.pop(login, None)
        self._all = max(0, self._all - 1)
