"""One thread that runs a stored session's blocking database calls, in order, off the event loop.

Why not ``asyncio.to_thread``: a hop through the default executor costs about 50 µs here, a
dedicated thread fed by a queue about 30 µs, and a session makes one hop per call. One thread per
session also runs that session's calls in the order they were made (two tasks appending to one
session keep their order) and lets a store keep per-thread state (an SQLite connection).

The thread starts on the first call and ends after ``idle_timeout`` seconds without work (calling
``on_idle`` first, e.g. to close a connection), so a session that is dropped without being closed
leaves no thread behind for long.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class _Stop:
    """The last item of a closed worker's queue: run ``final`` (if any), then end."""

    def __init__(self, final: Callable[[], None] | None) -> None:
        self.final = final
        self.done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def run(self) -> None:
        try:
            if self.final is not None:
                self.final()
        except Exception:  # closing is best effort: the work itself is already committed
            pass
        finally:
            self.done.set_result(None)


class WorkerClosedError(RuntimeError):
    """The worker was closed; no more calls run."""


class BlockingWorker:
    """Runs blocking callables on one dedicated thread, one at a time, in submission order."""

    def __init__(
        self,
        name: str,
        *,
        idle_timeout: float | None = 2.0,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        self._name = name
        self._idle_timeout = idle_timeout
        self._on_idle = on_idle
        self._jobs: queue.SimpleQueue[_Job | _Stop] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop: _Stop | None = None

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the worker thread; its result or exception comes back here.

        A caller cancelled while ``fn`` runs does not stop it: a database call completes (or
        rolls back) as a whole either way.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._stop is not None:
                raise WorkerClosedError(f"{self._name} is closed")
            self._jobs.put((loop, future, fn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
        return await future

    def close(self, final: Callable[[], None] | None = None) -> concurrent.futures.Future[None]:
        """Refuse new calls; the calls already queued run, then ``final()``; the future is done
        after that (``final`` runs here when no thread is running)."""
        with self._lock:
            if self._stop is not None:  # closed already: wait for that close
                return self._stop.done
            stop = self._stop = _Stop(final)
            if self._thread is not None:
                self._jobs.put(stop)
                return stop.done
        stop.run()
        return stop.done

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if not self._jobs.empty():
                        continue  # a call arrived while we were timing out
                    self._thread = None
                    if self._on_idle is not None:
                        self._on_idle()
                    return
            if isinstance(job, _Stop):
                job.run()
                return
            loop, future, fn = job
            try:
                result = fn()
            except BaseException as error:  # handed to the awaiting task, which re-raises it
                _deliver(loop, future, None, error)
            else:
                _deliver(loop, future, result, None)


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    def settle() -> None:
        if future.done():  # the caller was cancelled
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    # RuntimeError: the caller's loop has closed, nobody is waiting any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)


class InlineRunner:
    """The same interface as :class:`BlockingWorker` for work that never waits (an in-memory
    SQLite database: no file, no other process's lock): runs each call at once on the caller's
    thread, which saves the two thread switches a hop costs. A lock keeps calls from two
    threads (two event loops) from interleaving."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._closed:
                raise WorkerClosedError(f"{self._name} is closed")
            return fn()

    def close(self, final: Callable[[], None] | None = None) -> concurrent.futures.Future[None]:
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            if not self._closed:
                self._closed = True
                _Stop(final).run()
        done.set_result(None)
        return done
