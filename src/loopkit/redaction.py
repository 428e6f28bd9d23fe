"""Secrets out of everything loopkit writes: the run log, the console, reports and findings.

A :class:`Redactor` replaces two kinds of secrets by ``[redacted]``:

1. **Shapes** that are secrets wherever they appear: provider keys (Anthropic ``sk-ant-…``,
   OpenAI ``sk-…``/``sk-proj-…``), ``Bearer``/``Basic`` credentials after any whitespace (tabs,
   several spaces, a newline, or their JSON escapes), AWS access key ids (``AKIA…``/``ASIA…``)
   and secret keys (40 base64 characters after a key-ish word such as
   ``aws_secret_access_key``), GitHub (``ghp_…``, ``gho_…``, ``ghu_…``, ``ghs_…``, ``ghr_…``,
   ``github_pat_…``), GitLab (``glpat-…``), Slack (``xox[abposr]-…`` and webhook URLs), Google
   (``AIza…``), Stripe, npm, PyPI, SendGrid and Hugging Face tokens, JWTs, ``api_key=…``
   assignments, the password of a URL (``scheme://user:password@host`` keeps user and host) and
   private key blocks (PEM, OpenSSH, PGP, PuTTY).
2. **Values of environment variables whose names look secret** (:func:`is_secret_name`: the
   name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or has PAT as a whole
   ``_``-separated word, so ``GITHUB_PAT`` counts and ``PATH`` does not). They are read from
   the environment each time text is redacted, not once: a key exported after the redactor was
   made is redacted too. Values shorter than ``min_secret_chars`` (8) are skipped, so ``1`` or
   ``true`` are not redacted everywhere. Each value is also searched in its JSON-escaped forms
   (a value holding a quote, a backslash or a non-ASCII character is found after escaping too).

The parts: the shapes in :mod:`loopkit.redaction_shapes`, the environment scan in
:mod:`loopkit.redaction_environment`, the JSON encoder in :mod:`loopkit.redaction_json`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from loopkit.redaction_environment import SecretValues, is_secret_name
from loopkit.redaction_json import bytes_text, encode, safe_str, valid_text
from loopkit.redaction_shapes import REDACTED, might_hold_a_shape, redact_shapes

__all__ = [
    "REDACTED",
    "RedactingStream",
    "Redactor",
    "is_secret_name",
    "might_hold_a_shape",
    "redact_shapes",
]


class Redactor:
    """Replaces secret shapes and secret environment values in text by ``[redacted]``.

    ``environ``: the mapping to read secret values from (default: ``os.environ``, read at every
    call, so a variable set later counts). ``secrets``: further values to redact wherever they
    appear (e.g. a key given in a configuration file). ``min_secret_chars``: shorter values are
    not redacted (they would hit common words and numbers). ``shapes=False`` redacts only values.
    One redactor may be shared by threads.
    """

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
        min_secret_chars: int = 8,
        shapes: bool = True,
    ) -> None:
        if min_secret_chars < 1:
            raise ValueError(f"min_secret_chars must be at least 1, got {min_secret_chars!r}")
        self.min_secret_chars = min_secret_chars
        self.shapes = shapes
        self._values = SecretValues(environ, secrets, min_secret_chars)
        # bound once: the run log asks for the forms at every line
        self._value_forms = self._values.forms
        # short texts found free of secret shapes (a pure property of the text): tool names
        self._shape_free_texts: set[str] = set()

    def secret_values(self) -> list[str]:
        """The values redacted right now (given ones and the environment's), longest first."""
        return self._values.values()

    # -- redaction ---------------------------------------------------------------------------
    def redact_values(self, text: str) -> str:
        """``text`` with the secret values (and their JSON-escaped forms) replaced."""
        return _replace_forms(text, self._value_forms())

    def redact(self, text: str) -> str:
        """``text`` with secret values and secret shapes replaced by ``[redacted]``."""
        return self._redact(text, self._value_forms())

    def _redact(self, text: str, forms: tuple[str, ...]) -> str:
        text = _replace_forms(text, forms)
        return redact_shapes(text) if self.shapes else text

    def redact_data(self, value: Any, *, max_depth: int = 64) -> Any:
        """``value`` as JSON-ready data with every string redacted; never raises.

        Dicts (keys become strings), lists, tuples and sets are walked; ``bytes`` are decoded
        (undecodable bytes as ``\\xNN``); other objects become their ``str()`` (or a note when
        that raises); NaN and infinities become strings; deeper than ``max_depth`` (or cyclic)
        becomes a note. Lone surrogates are escaped (``\\udcNN`` as text), so the result always
        encodes as UTF-8.
        """
        return self._walk(value, max_depth, self._value_forms())

    def to_json(self, value: Any) -> str:
        """One compact JSON text of ``value`` (UTF-8, non-ASCII kept) with secrets redacted.

        Never raises: what ``json`` cannot encode goes through :meth:`redact_data` first. Fast
        path: the plain JSON text is checked once for the anchors of every secret shape and for
        every secret value (raw and escaped); only a text holding one is redacted string by
        string (before escaping) and then once more as a whole (escaped values).
        """
        return self._to_json(value, self._value_forms())

    def json_line(
        self, head: str, value: Any, texts: Sequence[str] | None = None, end: str = "}"
    ) -> str:
        """``head + to_json(value) + end``: a JSON object whose last field is ``value``
        (``end`` closes it, e.g. ``"}\n"`` for a line of a file).

        ``head`` is the object's text up to that field's value, already JSON (e.g.
        ``{"type":"round","data":``), made by the caller from its own names: the secret
        *values* in it are replaced, but it is not searched for secret shapes (check what you
        did not write yourself with :func:`might_hold_a_shape`). One look at the environment
        for the whole line (the run log writes its lines with it).

        ``texts``, when given, are all the strings in ``value`` that could hold a secret shape
        (the caller vouches that the rest are its own key names, numbers, booleans): only they
        are searched for shapes, not the whole JSON (a shape never spans two strings: the
        careful path redacts string by string). Short ones found clean are remembered. Secret
        values are still searched in the whole line.
        """
        forms = self._value_forms()
        if forms and _holds_a_form(head, forms):
            head = _replace_forms(head, forms)
        return head + self._to_json(value, forms, texts) + end

    def _to_json(
        self, value: Any, forms: tuple[str, ...], texts: Sequence[str] | None = None
    ) -> str:
        try:
            line = encode(value)
            if not line.isascii():
                line.encode("utf-8")  # lone surrogates: take the careful path
        except (TypeError, ValueError, RecursionError):
            line = None
        if line is not None and not (
            (
                self.shapes
                and (might_hold_a_shape(line) if texts is None else not self._shape_free(texts))
            )
            or (forms and _holds_a_form(line, forms))
        ):
            return line
        data = self._walk(value, 64, forms)
        return _replace_forms(encode(data), forms)

    def _shape_free(self, texts: Sequence[str]) -> bool:
        """Whether no text holds the anchor of a secret shape (one search for them all)."""
        known = self._shape_free_texts
        unknown = [text for text in texts if text not in known]
        # joined by a line break, which no anchor holds: no anchor spans two texts
        if not unknown or not might_hold_a_shape("\n".join(unknown)):
            if len(known) > 1024:
                known.clear()
            known.update(text for text in unknown if len(text) <= 64)
            return True
        return False

    def _walk(self, value: Any, depth: int, forms: tuple[str, ...]) -> Any:
        if isinstance(value, str):
            return self._redact(valid_text(value), forms)
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if depth <= 0:
            return "<nested too deeply>"
        if isinstance(value, dict):
            return {self._key(k, forms): self._walk(v, depth - 1, forms) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._walk(v, depth - 1, forms) for v in value]
        if isinstance(value, bytes | bytearray | memoryview):
            return self._redact(bytes_text(value), forms)
        return self._redact(valid_text(safe_str(value)), forms)

    def _key(self, key: Any, forms: tuple[str, ...]) -> str:
        if isinstance(key, str):
            text = key
        elif isinstance(key, bytes):
            text = bytes_text(key)
        elif key is None or isinstance(key, bool):
            text = json.dumps(key)  # null, true, false: as json writes them on the fast path
        else:
            text = safe_str(key)
        return self._redact(valid_text(text), forms)


def _holds_a_form(text: str, forms: tuple[str, ...]) -> bool:
    # a loop, not any(...): the generator cost more than the search on every run-log line
    for form in forms:  # noqa: SIM110
        if form in text:
            return True
    return False


def _replace_forms(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text


class RedactingStream:
    """A text stream that redacts everything written to it before passing it on.

    Use it wherever text leaves the process, e.g. ``Console(file=RedactingStream(sys.stdout))``
    for rich. Each ``write`` is redacted on its own: a secret split over two writes is not seen,
    and neither is one that rich folded over two lines of a table cell (use
    :class:`loopkit.redacting_console.RedactingConsole`, which redacts text before layout).
    """

    def __init__(self, stream: TextIO, redactor: Redactor | None = None) -> None:
        self.stream = stream
        self.redactor = redactor or Redactor()

    def write(self, text: str) -> int:
        """Write ``text`` redacted; returns ``len(text)`` as callers expect."""
        self.stream.write(self.redactor.redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each line redacted."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush the underlying stream."""
        self.stream.flush()

    def isatty(self) -> bool:
        """Whether the underlying stream is a terminal."""
        return self.stream.isatty()

    def fileno(self) -> int:
        """The underlying stream's file descriptor."""
        return self.stream.fileno()

    def writable(self) -> bool:
        """Always true."""
        return True

    @property
    def closed(self) -> bool:
        """Whether the underlying stream is closed."""
        return bool(getattr(self.stream, "closed", False))

    def __getattr__(self, name: str) -> Any:  # encoding, errors, name, ...
        return getattr(self.stream, name)
