"""A thread-safe D-Bus client over a unix socket, built for speed and bounded waits.

The wire format (authentication, building and parsing messages) is jeepney's, a sans-I/O
D-Bus library; this module adds what the AT-SPI backend needs on top and libatspi lacks:

- every call has its own timeout; a late reply is dropped (a modal dialog never hangs a caller);
- ``call_many`` pipelines a burst of calls and waits for all replies at once (bulk tree reads);
- signals are dispatched on the reader thread to registered handlers (accessibility events).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jeepney import DBusAddress, HeaderFields, MessageType, Parser, new_error, new_method_call
from jeepney.auth import BEGIN, AuthenticationError, Authenticator
from jeepney.bus import get_connectable_addresses
from jeepney.low_level import Message, Variant, parse_signature

from loopkit.errors import KeepsFieldsWhenPickled

__all__ = ["DBusCallError", "DBusClient", "DBusTimeout", "Method", "PendingBatch", "Signal"]

_BUS = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
# The fixed header: endianness, type, flags, version (1 byte each), body length, serial (u32).
_SERIAL_AT = slice(8, 12)
_U32 = struct.Struct("<I")
_CACHE_LIMIT = 20_000


class DBusCallError(KeepsFieldsWhenPickled, RuntimeError):
    """The peer answered a call with a D-Bus error."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name


class DBusTimeout(TimeoutError):
    """No reply within the call's timeout."""


@dataclass(frozen=True, slots=True)
class Signal:
    """One D-Bus signal, its top-level variants unwrapped to their values."""

    sender: str | None
    path: str | None
    interface: str | None
    member: str | None
    body: tuple[Any, ...]


SignalHandler = Callable[[Signal], None]

_variant_slots: dict[str, tuple[int, ...]] = {}


def _unwrap(signature: str, body: tuple[Any, ...]) -> tuple[Any, ...]:
    """jeepney reads a ``v`` as ``(signature, value)``; callers want the value (a property of
    ``Properties.Get``, an event's ``any_data``). Only top-level arguments are unwrapped."""
    slots = _variant_slots.get(signature)
    if slots is None:
        fields = parse_signature(list(f"({signature})")).fields
        slots = tuple(i for i, kind in enumerate(fields) if isinstance(kind, Variant))
        _variant_slots[signature] = slots
    if not slots:
        return body
    values = list(body)
    for i in slots:
        values[i] = values[i][1]
    return tuple(values)


class Method:
    """One method of one peer, to be called on many object paths (a node's role, state, ...).

    jeepney serialises the call once per object path; later calls on the same path reuse those
    bytes with a new serial, so re-reading a tree costs no marshalling.
    """

    __slots__ = ("_cache", "body", "destination", "interface", "member", "signature")

    def __init__(
        self,
        destination: str,
        interface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
    ) -> None:
        self.destination = destination
        self.interface = interface
        self.member = member
        self.signature = signature
        self.body = body
        self._cache: dict[str, bytes] = {}

    def serialise(self, path: str, serial: int) -> bytes:
        """The call on ``path`` as bytes, with ``serial``."""
        data = self._cache.get(path)
        if data is None:
            address = DBusAddress(path, self.destination, self.interface)
            message = new_method_call(address, self.member, self.signature or None, self.body)
            data = message.serialise(serial=1)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()  # an app that keeps creating objects: start over
            self._cache[path] = data
        return data[: _SERIAL_AT.start] + _U32.pack(serial) + data[_SERIAL_AT.stop :]


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


def _connect(address: str, timeout: float) -> socket.socket:
    try:
        target = next(get_connectable_addresses(address))
    except (RuntimeError, ValueError, StopIteration) as error:
        raise ValueError(f"no usable unix: entry in D-Bus address {address!r}") from error
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(target)
        auth = Authenticator()
        for data in auth:
            sock.sendall(data)
            reply = sock.recv(1024)
            if not reply:
                raise ConnectionError(f"D-Bus peer at {address!r} closed during auth")
            auth.feed(reply)
        sock.sendall(BEGIN)
    except AuthenticationError as error:
        sock.close()
        raise ConnectionError(f"D-Bus authentication failed: {error}") from error
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


class DBusClient:
    """A connection to one bus (here: the AT-SPI accessibility bus)."""

    def __init__(self, address: str, *, connect_timeout: float = 5.0) -> None:
        self.address = address
        self._sock = _connect(address, connect_timeout)
        self._serials = itertools.count(1)
        self._pending: dict[int, _Slot] = {}
        # Two locks: the reader thread only ever takes _lock (the pending table), so a writer
        # blocked on a full socket can never stop the reader from draining replies.
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._handlers: dict[int, tuple[Callable[[Signal], bool], SignalHandler]] = {}
        self._handler_ids = itertools.count(1)
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="dbus-reader", daemon=True)
        self._reader.start()
        self.unique_name: str = self.call(
            _BUS.bus_name, _BUS.object_path, "org.freedesktop.DBus", "Hello"
        )[0]

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
        message = new_method_call(
            DBusAddress(path, destination, interface), member, signature or None, body
        )
        batch = PendingBatch([None], 1)
        with self._lock:
            serial = next(self._serials)
            self._pending[serial] = _Slot(batch, 0)
        self._send(message.serialise(serial=serial))
        result = self._wait(batch, [serial], timeout, f"{interface}.{member} on {path}")[0]
        if isinstance(result, Exception):
            raise result
        return tuple(result)

    def call_many(
        self, requests: Sequence[tuple[Method, str]], *, timeout: float = 5.0
    ) -> list[Any]:
        """Pipeline ``(method, path)`` calls; returns each reply body or its exception.

        Raises DBusTimeout when not every reply arrived in time (the burst is abandoned).
        """
        if not requests:
            return []
        batch = PendingBatch([None] * len(requests), len(requests))
        with self._lock:
            first = next(self._serials)
            serials = range(first, first + len(requests))
            # Reserve the serials in one step; the counter moves past the whole burst.
            self._serials = itertools.count(first + len(requests))
            for index, serial in enumerate(serials):
                self._pending[serial] = _Slot(batch, index)
        data = b"".join(
            method.serialise(path, serial)
            for (method, path), serial in zip(requests, serials, strict=True)
        )
        self._send(data)
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
            _BUS.bus_name,
            _BUS.object_path,
            "org.freedesktop.DBus",
            "AddMatch",
            "s",
            (rule,),
            timeout=timeout,
        )

    def subscribe(self, predicate: Callable[[Signal], bool], handler: SignalHandler) -> int:
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
        parser = Parser()
        try:
            while True:
                chunk = self._sock.recv(1 << 16)
                if not chunk:
                    break
                parser.add_data(chunk)
                while (message := parser.get_next_message()) is not None:
                    self._dispatch(message)
        except (OSError, ValueError):
            pass  # the socket closed, or the peer sent something that is not D-Bus
        finally:
            self._closed = True
            with self._lock:
                slots = list(self._pending.values())
                self._pending.clear()
            for slot in slots:
                slot.batch.done.set()

    def _dispatch(self, message: Message) -> None:
        header = message.header
        kind = header.message_type
        fields = header.fields
        if kind is MessageType.method_return or kind is MessageType.error:
            with self._lock:
                slot = self._pending.pop(fields.get(HeaderFields.reply_serial, 0), None)
            if slot is None:
                return  # a late reply to an abandoned call
            batch = slot.batch
            body = message.body
            if kind is MessageType.error:
                text = body[0] if body and isinstance(body[0], str) else ""
                error_name = fields.get(HeaderFields.error_name, "error")
                batch.results[slot.index] = DBusCallError(error_name, text)
            else:
                signature = fields.get(HeaderFields.signature, "")
                batch.results[slot.index] = _unwrap(signature, body) if "v" in signature else body
            batch.remaining -= 1  # only the reader thread writes it
            if batch.remaining == 0:
                batch.done.set()
        elif kind is MessageType.signal:
            signature = fields.get(HeaderFields.signature, "")
            signal = Signal(
                fields.get(HeaderFields.sender),
                fields.get(HeaderFields.path),
                fields.get(HeaderFields.interface),
                fields.get(HeaderFields.member),
                _unwrap(signature, message.body) if "v" in signature else message.body,
            )
            for predicate, handler in list(self._handlers.values()):
                # A failing handler must not kill the reader thread.
                with contextlib.suppress(Exception):
                    if predicate(signal):
                        handler(signal)
        elif kind is MessageType.method_call and not header.flags & 1:
            # Nobody should call us; answer so the caller does not wait for its timeout.
            reply = new_error(
                message,
                "org.freedesktop.DBus.Error.UnknownMethod",
                "s",
                ("loopkit_ui does not serve D-Bus methods",),
            )
            with self._lock:
                serial = next(self._serials)
            with contextlib.suppress(OSError, ConnectionError):
                self._send(reply.serialise(serial=serial))

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
