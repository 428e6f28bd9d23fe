"""The event hook: windows the application opens, seen through accessibility events.

A window that opens and closes again between two checks is never found by polling; its
accessibility events stay in the hook's queue. On Linux the hook is a second connection to the
AT-SPI bus listening for ``Window:Create`` and ``Window:Activate`` (Qt announces a new dialog
with Activate only). On Windows the same role falls to a UIA ``WindowOpened`` handler (not built
yet: see docs/scripts.md).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from loopkit_ui.backends.atspi_constants import EVENT_PREFIX
from loopkit_ui.backends.atspi_core import a11y_bus_address
from loopkit_ui.backends.atspi_events import register_listeners
from loopkit_ui.backends.dbus_client import DBusCallError, DBusClient, DBusTimeout, Signal

__all__ = ["AtspiWindowEvents", "WindowEvent", "WindowEventSource"]

_WINDOW_INTERFACE = EVENT_PREFIX + "Window"
_OPENING = frozenset({"Create", "Activate"})


class WindowEvent(BaseModel):
    """A window of the application was created or activated."""

    key: str
    title: str
    event: str
    time: float


@runtime_checkable
class WindowEventSource(Protocol):
    """An event hook for new windows of one process."""

    def start(self, pid: int) -> None:
        """Listen for windows of process ``pid`` (again after a restart)."""
        ...

    def drain(self) -> list[WindowEvent]:
        """The window events of the process since the last drain."""
        ...

    def close(self) -> None:
        """Stop listening."""
        ...


class AtspiWindowEvents:
    """Window events from the AT-SPI bus, filtered to one process."""

    def __init__(self, bus_address: str | None = None, *, timeout: float = 3.0) -> None:
        self._address = bus_address
        self.timeout = timeout
        self.pid: int | None = None
        self._client: DBusClient | None = None
        self._lock = threading.Lock()
        self._queue: list[tuple[str, str, str, str, float]] = []
        self._pids: dict[str, int | None] = {}

    def start(self, pid: int) -> None:
        """Connect (once) and follow process ``pid`` from now on."""
        self.pid = pid
        if self._client is None or self._client.closed:
            client = DBusClient(self._address or a11y_bus_address(), connect_timeout=self.timeout)
            register_listeners(client, self.timeout)
            client.subscribe(self._accepts, self._on_signal)
            self._client = client
        with self._lock:
            self._queue.clear()

    @staticmethod
    def _accepts(message: Signal) -> bool:
        return message.interface == _WINDOW_INTERFACE and message.member in _OPENING

    def _on_signal(self, message: Signal) -> None:
        # Runs on the client's reader thread: only queue it (no calls back into the client).
        body = message.body
        title = body[3] if len(body) >= 4 and isinstance(body[3], str) else ""
        with self._lock:
            self._queue.append(
                (message.sender or "", message.member or "", message.path or "", title, time.time())
            )

    def _pid_of(self, sender: str) -> int | None:
        if sender not in self._pids and self._client is not None:
            try:
                reply = self._client.call(
                    "org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus",
                    "GetConnectionUnixProcessID",
                    "s",
                    (sender,),
                    timeout=self.timeout,
                )
                self._pids[sender] = int(reply[0])
            except (DBusCallError, DBusTimeout, ConnectionError):
                return None  # the sender is gone; do not cache, it may be a reused name
        return self._pids.get(sender)

    def drain(self) -> list[WindowEvent]:
        """Window events of the followed process since the last drain (oldest first)."""
        with self._lock:
            queued, self._queue = self._queue, []
        return [
            WindowEvent(key=path, title=title, event=member, time=stamp)
            for sender, member, path, title, stamp in queued
            if self.pid is not None and self._pid_of(sender) == self.pid
        ]

    def close(self) -> None:
        """Close the bus connection."""
        if self._client is not None:
            with contextlib.suppress(OSError):
                self._client.close()
            self._client = None
