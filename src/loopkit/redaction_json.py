"""JSON for redacted output: one compact encoder made once (:func:`json_encoder`), and text
that always encodes as UTF-8 whatever it was made from (bytes, objects whose ``str()`` raises,
lone surrogates)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["bytes_text", "encode", "json_encoder", "safe_str", "valid_text"]


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def json_encoder() -> Callable[[Any], str]:
    """Compact JSON, UTF-8 kept, no NaN: one encoder made once for every line.

    ``json.dumps`` with options builds a new encoder per call, and so does
    ``JSONEncoder.encode`` (its C encoder, each time). This keeps the C encoder and calls it
    directly (``json.encoder.c_make_encoder``, the accelerator ``JSONEncoder`` itself uses; a
    Python without it, or whose accelerator takes other arguments or writes otherwise, gets
    ``JSONEncoder.encode``). No ``markers``: a cycle ends in ``RecursionError``, which
    :meth:`Redactor.to_json` catches like ``json``'s own "Circular reference" ``ValueError``,
    and takes the careful path.
    """
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:
        return plain
    try:
        encoder = make(None, _refuse, quote, None, ":", ",", False, False, False)
    except TypeError:  # another signature (a later Python): the public way
        return plain
    join = "".join

    def encode(value: Any) -> str:
        return join(encoder(value, 0))

    sample = {"a": [1, 2.5, True, None], "é\n": '"x"', "7": {}}
    return encode if encode(sample) == plain(sample) else plain


encode = json_encoder()


def bytes_text(value: bytes | bytearray | memoryview) -> str:
    """Bytes as text (undecodable bytes as ``\\xNN``)."""
    return bytes(value).decode("utf-8", errors="backslashreplace")


def safe_str(value: Any) -> str:
    """``str(value)``, or a note when that raises."""
    try:
        return str(value)
    except Exception as e:  # an object whose __str__ raises still gets a line
        try:
            return f"<unprintable {type(value).__name__}: {type(e).__name__}>"
        except Exception:
            return "<unprintable object>"


def valid_text(text: str) -> str:
    """``text`` with lone surrogates (e.g. undecodable file-name bytes) spelled out as text."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text
