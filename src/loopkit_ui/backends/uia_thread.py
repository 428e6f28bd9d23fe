"""The dedicated UI Automation thread of the Windows backend.

UI Automation objects are COM objects bound to the thread that created them; using them from
another thread deadlocks or fails. So every UIA call of the backend runs on one thread inside
``uiautomation.UIAutomationInitializerInThread``. A call that does not return in time (a modal
dialog blocking a pattern call) is abandoned with a timeout error and the wedged thread is
replaced, so the server keeps answering.

Windows only; written against the documented API of the ``uiautomation`` package and never
imported on Linux (it cannot run here; the conformance suite runs it on windows-latest).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from loopkit_ui.backends.protocol import UITimeoutError

__all__ = ["AutomationThread"]

_T = TypeVar("_T")


class AutomationThread:
    """Runs callables on one UIA-initialized thread; ``auto`` is the ``uiautomation`` module."""

    def __init__(self, name: str = "uia-automation") -> None:
        self.name = name
        self.generation = 0  # bumps when a wedged thread is replaced (element caches die)
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        jobs = self._jobs
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._loop, args=(jobs, ready), name=self.name, daemon=True
        )
        self._thread.start()
        ready.result(30)

    @staticmethod
    def _loop(
        jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None], ready: Future[None]
    ) -> None:
        try:
            import ctypes

            import uiautomation as auto

            # Per-monitor DPI awareness: bounding rectangles and mouse input then share one
            # coordinate space on scaled displays.
            with contextlib.suppress(AttributeError, OSError):
                ctypes.windll.shcore.SetProcessDpiAwareness(2)  # type: ignore[attr-defined]
            initializer = auto.UIAutomationInitializerInThread()
        except BaseException as error:
            ready.set_exception(error)
            return
        ready.set_result(None)
        with initializer:
            while True:
                job = jobs.get()
                if job is None:
                    return
                fn, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(fn(auto))
                except BaseException as error:
                    future.set_exception(error)

    def run(self, fn: Callable[[Any], _T], timeout: float) -> _T:
        """Run ``fn(auto)`` on the automation thread; UITimeoutError after ``timeout`` s."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._start()
            jobs = self._jobs
        future: Future[_T] = Future()
        jobs.put((fn, future))
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            with self._lock:
                if jobs is self._jobs:
                    # The thread is stuck inside a COM call: leave it (daemon) and start anew
                    # on the next call; its elements cannot be used by the new thread.
                    jobs.put(None)
                    self._jobs = queue.Queue()
                    self._thread = None
                    self.generation += 1
            raise UITimeoutError(
                f"UI Automation did not answer within {timeout:g} s (a modal dialog or a busy "
                "application may block it); the automation thread was replaced"
            ) from None

    def close(self) -> None:
        """Stop the thread (after its current job)."""
        with self._lock:
            if self._thread is not None:
                self._jobs.put(None)
                self._thread.join(5)
                self._thread = None
