"""A small thread-safe D-Bus client over a unix socket, built for speed and bounded waits.

- Every call has its own timeout; a late reply is dropped (a modal dialog never hangs a caller).
- ``call_many`` pipelines a burst of calls and waits for all replies at once (bulk tree reads).
- Signals are dispatched on the reader thread to registered handlers (accessibility events).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopkit_ui.backends.dbus_wire import (
    ERROR,
    METHOD_CALL,
    METHOD_RETURN,
    SIGNAL,
    Message,
    MethodTemplate,
    build_message,
    parse_message,
)

__all__ = ["DBusCallError", "DBusClient", "DBusTimeout", "PendingBatch"]

SignalHandler = Callable[[Message], None]


class DBusCallError(RuntimeError):
    """The peer answered a call with a D-Bus error."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name


class DBusTimeout(TimeoutError):
    """No reply within the call's timeout."""


def _parse_address(address: str) -> str | bytes:
    """The socket address of the first usable ``unix:`` entry of a D-Bus address."""
    for entry in address.split(";"):
        kind, _, params = entry.partition(":")
        if kind != "unix":
            continue
        values = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
        if "path" in values:
            return values["path"]
        if "abstract" in values:
            return b"\0" + values["abstract"].encode()
    raise ValueError(f"no usable unix: entry in D-Bus address {address!r}")


@dataclass
class PendingBatch:
    """Replies of a pipelined burst, filled in by the reader thread."""

    results: list[Any]
    remaining: int
    done: threading.Event = field(default_factory=threading.Event)


class _Slot:
    __slots__ = ("batch", "index")

    def __init__(self, batch: PendingBatch, index: int) -> None:
        self.batch = batch
        self.index = index


class DBusClient:
    """A connection to one bus (here: the AT-SPI accessibility bus)."""

    def __init__(self, address: str, *, connect_timeout: float = 5.0) -> None:
        self.address = address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(connect_timeout)
        self._sock.connect(_parse_address(address))
        self._authenticate()
        self._sock.settimeout(None)
        self._serials = itertools.count(1)
        self._pending: dict[int, _Slot] = {}
        # Two locks: the reader thread only ever takes _lock (the pending table), so a writer
        # blocked on a full socket can never stop the reader from draining replies.
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._handlers: dict[int, tuple[Callable[[Message], bool], SignalHandler]] = {}
        self._handler_ids = itertools.count(1)
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="dbus-reader", daemon=True)
        self._reader.start()
        self.unique_name: str = self.call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello"
        )[0]

    def _authenticate(self) -> None:
        uid = str(os.getuid()).encode().hex().encode()
        self._sock.sendall(b"\0AUTH EXTERNAL " + uid + b"\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = self._sock.recv(256)
            if not chunk:
                raise ConnectionError(f"D-Bus peer at {self.address!r} closed during auth")
            reply += chunk
        if not reply.startswith(b"OK"):
            raise ConnectionError(f"D-Bus authentication failed: {reply.decode().strip()}")
        self._sock.sendall(b"BEGIN\r\n")

    # -- calls -------------------------------------------------------------------------------

    def call(
        self,
        destination: str,
        path: str,
        interface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
        *,
        timeout: float = 5.0,
    ) -> tuple[Any, ...]:
        """One method call; returns the reply body or raises DBusCallError / DBusTimeout."""
        batch = PendingBatch([None], 1)
        with self._lock:
            serial = next(self._serials)
            self._pending[serial] = _Slot(batch, 0)
        data = build_message(
            METHOD_CALL,
            serial,
            path=path,
            interface=interface,
            member=member,
            destination=destination,
            signature=signature,
            body=body,
        )
        self._send(data)
        result = self._wait(batch, [serial], timeout, f"{interface}.{member} on {path}")[0]
        if isinstance(result, Exception):
            raise result
        return tuple(result)

    def call_many(
        self, requests: Sequence[tuple[MethodTemplate, str]], *, timeout: float = 5.0
    ) -> list[Any]:
        """Pipeline ``(template, path)`` calls; returns each reply body or its exception.

        Raises DBusTimeout when not every reply arrived in time (the burst is abandoned).
        """
        if not requests:
            return []
        batch = PendingBatch([None] * len(requests), len(requests))
        chunks = []
        with self._lock:
            first = next(self._serials)
            serials = range(first, first + len(requests))
            # Reserve the serials in one step; the counter moves past the whole burst.
            self._serials = itertools.count(first + len(requests))
            for index, serial in enumerate(serials):
                self._pending[serial] = _Slot(batch, index)
        for (template, path), serial in zip(requests, serials, strict=True):
            chunks.append(template.build(serial, path))
        self._send(b"".join(chunks))
        return self._wait(batch, serials, timeout, f"a burst of {len(requests)} calls")

    def _wait(
        self, batch: PendingBatch, serials: Sequence[int], timeout: float, what: str
    ) -> list[Any]:
        if not batch.done.wait(timeout):
            with self._lock:
                for serial in serials:
                    self._pending.pop(serial, None)
            if self._closed:
                raise ConnectionError(f"D-Bus connection to {self.address!r} is closed")
            raise DBusTimeout(f"no D-Bus reply within {timeout:.1f} s to {what}")
        if self._closed and batch.remaining:
            raise ConnectionError(f"D-Bus connection to {self.address!r} is closed")
        return batch.results

    def _send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionError(f"D-Bus connection to {self.address!r} is closed")
        with self._write_lock:
            self._sock.sendall(data)

    # -- signals -----------------------------------------------------------------------------

    def add_match(self, rule: str, *, timeout: float = 5.0) -> None:
        """Ask the bus to route signals matching ``rule`` to us."""
        self.call(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "AddMatch",
            "s",
            (rule,),
            timeout=timeout,
        )

    def subscribe(self, predicate: Callable[[Message], bool], handler: SignalHandler) -> int:
        """Call ``handler`` (on the reader thread; keep it short, never call back into
        this client synchronously) for each signal that ``predicate`` accepts."""
        with self._lock:
            handle = next(self._handler_ids)
            self._handlers[handle] = (predicate, handler)
        return handle

    def unsubscribe(self, handle: int) -> None:
        """Remove a handler added with :meth:`subscribe`."""
        with self._lock:
            self._handlers.pop(handle, None)

    # -- reader ------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        buffer = bytearray()
        try:
            while True:
                chunk = self._sock.recv(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                offset = 0
                while True:
                    parsed = parse_message(buffer, offset)
                    if parsed is None:
                        break
                    message, length = parsed
                    offset += length
                    self._dispatch(message)
                if offset:
                    del buffer[:offset]
        except OSError:
            pass
        finally:
            self._closed = True
            with self._lock:
                slots = list(self._pending.values())
                self._pending.clear()
            for slot in slots:
                slot.batch.done.set()

    def _dispatch(self, message: Message) -> None:
        if message.type in (METHOD_RETURN, ERROR):
            with self._lock:
                slot = self._pending.pop(message.reply_serial or 0, None)
            if slot is None:
                return  # a late reply to an abandoned call
            batch = slot.batch
            if message.type == ERROR:
                text = message.body[0] if message.body and isinstance(message.body[0], str) else ""
                batch.results[slot.index] = DBusCallError(message.error_name or "error", text)
            else:
                batch.results[slot.index] = message.body
            batch.remaining -= 1  # only the reader thread writes it
            if batch.remaining == 0:
                batch.done.set()
        elif message.type == SIGNAL:
            for predicate, handler in list(self._handlers.values()):
                # A failing handler must not kill the reader thread.
                with contextlib.suppress(Exception):
                    if predicate(message):
                        handler(message)
        elif message.type == METHOD_CALL and not message.flags & 1:
            # Nobody should call us; answer so the caller does not wait for its timeout.
            with self._lock:
                serial = next(self._serials)
            with contextlib.suppress(OSError, ConnectionError):
                self._send(
                    build_message(
                        ERROR,
                        serial,
                        error_name="org.freedesktop.DBus.Error.UnknownMethod",
                        reply_serial=message.serial,
                        destination=message.sender,
                        signature="s",
                        body=("loopkit_ui does not serve D-Bus methods",),
                    )
                )

    @property
    def closed(self) -> bool:
        """True once the connection is gone."""
        return self._closed

    def close(self) -> None:
        """Close the socket; waiting calls fail with ConnectionError."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()
        self._reader.join(2.0)


def monotonic_ms() -> float:
    """Milliseconds on the monotonic clock."""
    return time.monotonic() * 1000.0
