"""Accessibility events of one application: the clock that actions wait on.

Qt announces every effect of an action as an AT-SPI signal (focus moves, a label's name
changes, rows are inserted, a dialog's widgets start showing), within a few milliseconds of the
input. Waiting for those signals, then for a short quiet spell, confirms an action far sooner
and more reliably than polling the tree.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.dbus_client import DBusClient, Signal

__all__ = ["AppEvent", "EventMonitor", "register_listeners"]

# Event kinds that never change which elements exist or what their ids are: the lookup index
# survives them. Everything else (rows inserted, children changed, a widget starts showing...)
# may add or remove elements.
_HARMLESS_STATES = frozenset({"focused", "active", "pressed", "armed", "selected", "checked"})
_NAME_EVENTS = frozenset({"accessible-name", "accessible-description", "accessible-value"})


@dataclass(frozen=True, slots=True)
class AppEvent:
    """One accessibility signal of the application."""

    seq: int
    time: float
    kind: str  # e.g. "Object:StateChanged"
    path: str
    detail: str
    detail1: int
    detail2: int
    data: object

    @property
    def window_title(self) -> str | None:
        """For window events the title travels in ``data``."""
        return self.data if self.kind.startswith("Window:") and isinstance(self.data, str) else None


def register_listeners(client: DBusClient, timeout: float = 5.0) -> None:
    """Tell the registry we listen, so toolkits (Qt checks) emit events; route them to us."""
    client.add_match("type='signal',path_namespace='/org/a11y/atspi/accessible'", timeout=timeout)
    for event in ("object:", "window:", "focus:"):
        client.call(
            C.REGISTRY,
            C.REGISTRY_PATH,
            C.REGISTRY,
            "RegisterEvent",
            "sass",
            (event, [], ""),
            timeout=timeout,
        )


class EventMonitor:
    """Collects the events of one application (by bus name) and lets callers wait on them."""

    def __init__(self, client: DBusClient, bus: str, *, history: int = 2000) -> None:
        self.bus = bus
        self._client = client
        self._events: deque[AppEvent] = deque(maxlen=history)
        self._cond = threading.Condition()
        self._seq = 0
        self.structure_generation = 0
        self.name_generation = 0
        # Objects that started showing and have not stopped: popups (menus, drop-downs) are
        # found among them, since they are no child of the application (see AtspiCore).
        self._shown: set[str] = set()
        self._closed = False
        self._handle = client.subscribe(self._accepts, self._on_signal)

    def close(self) -> None:
        """Stop collecting; a thread waiting for events returns at once (with what there is)."""
        self._client.unsubscribe(self._handle)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (no event comes any more)."""
        return self._closed

    def _accepts(self, message: Signal) -> bool:
        return message.sender == self.bus and (message.interface or "").startswith(C.EVENT_PREFIX)

    def _on_signal(self, message: Signal) -> None:
        body = message.body
        detail, d1, d2, data = (
            (body[0], body[1], body[2], body[3]) if len(body) >= 4 else ("", 0, 0, None)
        )
        kind = f"{(message.interface or '')[len(C.EVENT_PREFIX) :]}:{message.member}"
        with self._cond:
            self._seq += 1
            event = AppEvent(
                self._seq, time.monotonic(), kind, message.path or "", detail, d1, d2, data
            )
            self._events.append(event)
            if kind == "Object:StateChanged" and detail == "showing":
                if d1:
                    self._shown.add(event.path)
                else:
                    self._shown.discard(event.path)
            if (
                kind == "Object:PropertyChange" and detail in _NAME_EVENTS
            ) or kind == "Object:TextChanged":
                self.name_generation += 1
            elif not self._harmless(kind, detail):
                self.structure_generation += 1
                self.name_generation += 1
            self._cond.notify_all()

    @staticmethod
    def _harmless(kind: str, detail: str) -> bool:
        if kind in ("Focus:Focus", "Object:TextCaretMoved", "Object:TextSelectionChanged"):
            return True
        if kind in ("Window:Activate", "Window:Deactivate", "Object:SelectionChanged"):
            return True
        return kind == "Object:StateChanged" and detail in _HARMLESS_STATES

    def shown(self) -> set[str]:
        """Paths of the objects whose last "showing" event said they started showing."""
        with self._cond:
            return set(self._shown)

    def forget_shown(self, paths: set[str]) -> None:
        """Stop offering ``paths`` from :meth:`shown` (until they start showing again)."""
        with self._cond:
            self._shown -= paths

    @property
    def seq(self) -> int:
        """Sequence number of the latest event (mark it before an action)."""
        with self._cond:
            return self._seq

    def since(self, seq: int) -> list[AppEvent]:
        """Events after ``seq`` (still in the history)."""
        with self._cond:
            return [event for event in self._events if event.seq > seq]

    def wait_after(self, seq: int, timeout: float) -> list[AppEvent]:
        """The events after ``seq``, waiting up to ``timeout`` s for the first one."""
        with self._cond:
            self._wait_past(seq, timeout)
            return [event for event in self._events if event.seq > seq]

    def _wait_past(self, seq: int, timeout: float) -> bool:
        """With the lock held: wait until an event after ``seq`` arrived (False on timeout)."""
        deadline = time.monotonic() + timeout
        while self._seq <= seq:
            if self._closed:  # nothing more will come: waiting on would only delay closing
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._cond.wait(remaining)
        return True

    def wait_settled(self, since: int, *, first: float, quiet: float, cap: float) -> list[AppEvent]:
        """Wait for the first event after ``since`` (up to ``first`` seconds), then until no
        event came for ``quiet`` seconds (at most ``cap`` seconds in all). Returns the events."""
        start = time.monotonic()
        with self._cond:
            if not self._wait_past(since, first):
                return []
            while True:
                last = self._events[-1].time if self._events else start
                now = time.monotonic()
                remaining_cap = start + cap - now
                remaining_quiet = last + quiet - now
                if remaining_cap <= 0 or remaining_quiet <= 0:
                    break
                seq = self._seq
                self._wait_past(seq, min(remaining_quiet, remaining_cap))
            return [event for event in self._events if event.seq > since]

    def wait_until(
        self, check: Callable[[], bool], *, timeout: float, recheck: float = 0.1
    ) -> bool:
        """Evaluate ``check`` now and after each burst of events (and every ``recheck`` seconds,
        for changes no event announces) until it returns True or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while True:
            seq = self.seq
            if check():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._cond:
                self._wait_past(seq, min(recheck, remaining))
            # Let a burst finish before re-reading the tree (one read instead of many).
            with self._cond:
                while self._events and time.monotonic() - self._events[-1].time < 0.005:
                    self._cond.wait(0.005)
