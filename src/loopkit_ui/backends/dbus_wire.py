"""The D-Bus wire format (little endian): marshalling of values and messages.

Small and self-contained on purpose: the AT-SPI backend talks D-Bus directly so it can pipeline
hundreds of calls (a 500-node tree snapshot in one burst), give every call its own timeout and
receive accessibility events on a reader thread, none of which libatspi offers.
Spec: https://dbus.freedesktop.org/doc/dbus-specification.html#message-protocol-marshaling
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "ERROR",
    "METHOD_CALL",
    "METHOD_RETURN",
    "SIGNAL",
    "Message",
    "MethodTemplate",
    "Variant",
    "build_message",
    "marshal",
    "parse_message",
    "split_signature",
]

METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
FLAG_NO_REPLY_EXPECTED = 0x1

_FIELD_PATH, _FIELD_INTERFACE, _FIELD_MEMBER, _FIELD_ERROR_NAME = 1, 2, 3, 4
_FIELD_REPLY_SERIAL, _FIELD_DESTINATION, _FIELD_SENDER, _FIELD_SIGNATURE = 5, 6, 7, 8

_ALIGN = {
    "y": 1, "b": 4, "n": 2, "q": 2, "i": 4, "u": 4, "x": 8, "t": 8, "d": 8, "h": 4,
    "s": 4, "o": 4, "g": 1, "a": 4, "(": 8, "{": 8, "v": 1,
}  # fmt: skip
_FIXED = {"y": "B", "n": "h", "q": "H", "i": "i", "u": "I", "x": "q", "t": "Q", "d": "d", "h": "I"}
_STRUCTS = {code: struct.Struct("<" + fmt) for code, fmt in _FIXED.items()}
_U32 = struct.Struct("<I")


class Variant(NamedTuple):
    """A value with its D-Bus signature, for marshalling a ``v``."""

    signature: str
    value: Any


def _type_end(sig: str, start: int) -> int:
    """Index just past the complete type starting at ``sig[start]``."""
    code = sig[start]
    if code == "a":
        return _type_end(sig, start + 1)
    if code in "({":
        close = ")" if code == "(" else "}"
        i = start + 1
        while sig[i] != close:
            i = _type_end(sig, i)
        return i + 1
    if code not in _ALIGN:
        raise ValueError(f"invalid D-Bus signature {sig!r} at {start}: {code!r}")
    return start + 1


def split_signature(sig: str) -> list[str]:
    """``"sa{sv}i"`` → ``["s", "a{sv}", "i"]``."""
    types, i = [], 0
    while i < len(sig):
        end = _type_end(sig, i)
        types.append(sig[i:end])
        i = end
    return types


class _Writer:
    def __init__(self, offset: int = 0) -> None:
        self.buf = bytearray()
        # Alignment is relative to the start of the message; ``offset`` is where buf starts.
        self.offset = offset

    def align(self, n: int) -> None:
        pad = -(self.offset + len(self.buf)) % n
        if pad:
            self.buf += b"\0" * pad

    def write(self, sig: str, value: Any) -> None:
        code = sig[0]
        fmt = _STRUCTS.get(code)
        if fmt is not None:
            self.align(fmt.size)
            self.buf += fmt.pack(value)
        elif code == "b":
            self.align(4)
            self.buf += _U32.pack(1 if value else 0)
        elif code in "so":
            data = value.encode()
            self.align(4)
            self.buf += _U32.pack(len(data)) + data + b"\0"
        elif code == "g":
            data = value.encode()
            self.buf += bytes((len(data),)) + data + b"\0"
        elif code == "v":
            inner_sig, inner = value
            self.write("g", inner_sig)
            self.write(inner_sig, inner)
        elif code == "(":
            self.align(8)
            for item_sig, item in zip(split_signature(sig[1:-1]), value, strict=True):
                self.write(item_sig, item)
        elif code == "a":
            self._write_array(sig[1:], value)
        else:
            raise ValueError(f"cannot marshal D-Bus type {sig!r}")

    def _write_array(self, elem: str, value: Any) -> None:
        self.align(4)
        length_at = len(self.buf)
        self.buf += b"\0\0\0\0"
        self.align(_ALIGN[elem[0]])
        start = len(self.buf)
        if elem[0] == "{":
            key_sig, val_sig = split_signature(elem[1:-1])
            for key, val in dict(value).items():
                self.align(8)
                self.write(key_sig, key)
                self.write(val_sig, val)
        else:
            for item in value:
                self.write(elem, item)
        _U32.pack_into(self.buf, length_at, len(self.buf) - start)


def marshal(signature: str, values: tuple[Any, ...] | list[Any], offset: int = 0) -> bytes:
    """Marshal ``values`` (one per complete type of ``signature``) as a message body."""
    types = split_signature(signature)
    if len(types) != len(values):
        raise ValueError(f"signature {signature!r} needs {len(types)} values, got {len(values)}")
    writer = _Writer(offset)
    for sig, value in zip(types, values, strict=True):
        writer.write(sig, value)
    return bytes(writer.buf)


class _Reader:
    __slots__ = ("base", "data", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int, base: int) -> None:
        self.data = data
        self.pos = pos
        self.base = base  # message start: alignment is relative to it

    def align(self, n: int) -> None:
        self.pos += -(self.pos - self.base) % n

    def read(self, sig: str) -> Any:
        code = sig[0]
        fmt = _STRUCTS.get(code)
        if fmt is not None:
            self.align(fmt.size)
            (value,) = fmt.unpack_from(self.data, self.pos)
            self.pos += fmt.size
            return value
        if code in "so":
            self.align(4)
            (length,) = _U32.unpack_from(self.data, self.pos)
            start = self.pos + 4
            self.pos = start + length + 1
            return bytes(self.data[start : start + length]).decode()
        if code == "b":
            self.align(4)
            (value,) = _U32.unpack_from(self.data, self.pos)
            self.pos += 4
            return bool(value)
        if code == "g":
            length = self.data[self.pos]
            start = self.pos + 1
            self.pos = start + length + 1
            return bytes(self.data[start : start + length]).decode()
        if code == "v":
            return self.read(self.read("g"))
        if code == "(":
            self.align(8)
            return tuple(self.read(item) for item in split_signature(sig[1:-1]))
        if code == "a":
            return self._read_array(sig[1:])
        raise ValueError(f"cannot unmarshal D-Bus type {sig!r}")

    def _read_array(self, elem: str) -> Any:
        self.align(4)
        (length,) = _U32.unpack_from(self.data, self.pos)
        self.pos += 4
        self.align(_ALIGN[elem[0]])
        end = self.pos + length
        if elem[0] == "{":
            key_sig, val_sig = split_signature(elem[1:-1])
            result: dict[Any, Any] = {}
            while self.pos < end:
                self.align(8)
                key = self.read(key_sig)
                result[key] = self.read(val_sig)
            return result
        fmt = _STRUCTS.get(elem)
        if fmt is not None:
            # Fast path for arrays of fixed-size numbers (state sets are ``au``).
            count = length // fmt.size
            values = list(struct.unpack_from(f"<{count}{_FIXED[elem]}", self.data, self.pos))
            self.pos = end
            return values
        items = []
        while self.pos < end:
            items.append(self.read(elem))
        return items


@dataclass(slots=True)
class Message:
    """One parsed D-Bus message."""

    type: int
    flags: int
    serial: int
    path: str | None = None
    interface: str | None = None
    member: str | None = None
    error_name: str | None = None
    reply_serial: int | None = None
    destination: str | None = None
    sender: str | None = None
    signature: str = ""
    body: tuple[Any, ...] = ()


_HEADER = struct.Struct("<BBBBIII")


def parse_message(
    data: bytes | bytearray | memoryview, offset: int = 0
) -> tuple[Message, int] | None:
    """Parse the message at ``offset``; returns it and its total length, or None if incomplete."""
    if len(data) - offset < 16:
        return None
    endian, mtype, flags, _version, body_len, serial, fields_len = _HEADER.unpack_from(data, offset)
    if endian != ord("l"):
        raise ValueError("big-endian D-Bus messages are not supported")
    body_start = offset + 16 + fields_len + (-(16 + fields_len) % 8)
    total = body_start - offset + body_len
    if len(data) - offset < total:
        return None
    msg = Message(mtype, flags, serial)
    reader = _Reader(data, offset + 16, offset)
    end = offset + 16 + fields_len
    while reader.pos < end:
        reader.align(8)
        code = data[reader.pos]
        reader.pos += 1
        value = reader.read("v")
        if code == _FIELD_REPLY_SERIAL:
            msg.reply_serial = value
        elif code == _FIELD_SIGNATURE:
            msg.signature = value
        elif code == _FIELD_PATH:
            msg.path = value
        elif code == _FIELD_INTERFACE:
            msg.interface = value
        elif code == _FIELD_MEMBER:
            msg.member = value
        elif code == _FIELD_ERROR_NAME:
            msg.error_name = value
        elif code == _FIELD_DESTINATION:
            msg.destination = value
        elif code == _FIELD_SENDER:
            msg.sender = value
    if body_len and msg.signature:
        body_reader = _Reader(data, body_start, body_start)
        msg.body = tuple(body_reader.read(sig) for sig in split_signature(msg.signature))
    return msg, total


def _field(writer: _Writer, code: int, sig: str, value: Any) -> None:
    writer.align(8)
    writer.buf += bytes((code,))
    writer.write("g", sig)
    writer.write(sig, value)


def build_message(
    mtype: int,
    serial: int,
    *,
    path: str | None = None,
    interface: str | None = None,
    member: str | None = None,
    destination: str | None = None,
    error_name: str | None = None,
    reply_serial: int | None = None,
    signature: str = "",
    body: tuple[Any, ...] | list[Any] = (),
    flags: int = 0,
) -> bytes:
    """Build a complete message (header, fields, body)."""
    fields = _Writer(16)
    for code, sig, value in (
        (_FIELD_PATH, "o", path),
        (_FIELD_INTERFACE, "s", interface),
        (_FIELD_MEMBER, "s", member),
        (_FIELD_ERROR_NAME, "s", error_name),
        (_FIELD_REPLY_SERIAL, "u", reply_serial),
        (_FIELD_DESTINATION, "s", destination),
        (_FIELD_SIGNATURE, "g", signature or None),
    ):
        if value is not None:
            _field(fields, code, sig, value)
    body_bytes = marshal(signature, body) if signature else b""
    head = _HEADER.pack(ord("l"), mtype, flags, 1, len(body_bytes), serial, len(fields.buf))
    pad = b"\0" * (-(16 + len(fields.buf)) % 8)
    return head + bytes(fields.buf) + pad + body_bytes


class MethodTemplate:
    """A method call pre-marshalled except for its object path and serial.

    Building a message from it is two packs and a join, so a burst of 2,000 calls costs a few
    milliseconds to build. The path field is written last so the prefix is fixed.
    """

    __slots__ = ("_body", "_prefix")

    def __init__(
        self,
        destination: str,
        interface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
    ) -> None:
        fields = _Writer(16)
        _field(fields, _FIELD_DESTINATION, "s", destination)
        _field(fields, _FIELD_INTERFACE, "s", interface)
        _field(fields, _FIELD_MEMBER, "s", member)
        if signature:
            _field(fields, _FIELD_SIGNATURE, "g", signature)
        fields.align(8)
        self._prefix = bytes(fields.buf)
        self._body = marshal(signature, body) if signature else b""

    def build(self, serial: int, path: str) -> bytes:
        """The complete message for ``path`` with ``serial``."""
        encoded = path.encode()
        # code 1 (PATH), signature "o", then the string: 4 + 4 + len + 1 bytes.
        path_field = b"\x01\x01o\x00" + _U32.pack(len(encoded)) + encoded + b"\0"
        fields_len = len(self._prefix) + len(path_field)
        pad = b"\0" * (-(16 + fields_len) % 8)
        head = _HEADER.pack(ord("l"), METHOD_CALL, 0, 1, len(self._body), serial, fields_len)
        return b"".join((head, self._prefix, path_field, pad, self._body))
