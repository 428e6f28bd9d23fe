"""A rich ``Console`` that never shows a secret: text is redacted before rich lays it out.

A stream filter alone (:class:`~loopkit.redaction.RedactingStream`) cannot catch a secret that
rich folded over two lines of a table cell or wrapped at the terminal's width: each half is too
short to be recognised. :class:`RedactingConsole` redacts every ``str`` and ``Text`` as rich
renders it (``Console.render`` is where every renderable, nested ones included, passes), so the
live progress line, tables and panels are cut from redacted text; its output stream is wrapped
in a ``RedactingStream`` as well, for whatever a renderable emits as raw segments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from loopkit.redaction import RedactingStream, Redactor

__all__ = ["RedactingConsole"]


class RedactingConsole(Console):
    """``rich.console.Console`` with every text redacted by ``redactor`` before layout.

    Takes the same arguments as ``Console`` plus ``redactor`` (default: a new
    :class:`~loopkit.redaction.Redactor`, which reads secret environment values at each use).
    """

    def __init__(self, *args: Any, redactor: Redactor | None = None, **kwargs: Any) -> None:
        self.redactor = redactor or Redactor()
        self._wrapped: tuple[IO[str], RedactingStream] | None = None
        super().__init__(*args, **kwargs)

    @property
    def file(self) -> IO[str]:
        """The output stream (stdout unless given), wrapped so that it redacts what it gets."""
        inner = Console.file.fget(self)  # type: ignore[attr-defined]
        if self._wrapped is None or self._wrapped[0] is not inner:
            self._wrapped = (inner, RedactingStream(inner, self.redactor))
        return self._wrapped[1]  # type: ignore[return-value]

    @file.setter
    def file(self, new_file: IO[str]) -> None:
        Console.file.fset(self, new_file)  # type: ignore[attr-defined]

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render like ``Console.render``, with strings and ``Text`` redacted first."""
        if isinstance(renderable, str):
            renderable = self.redactor.redact(renderable)
        elif isinstance(renderable, Text):
            renderable = _redacted_text(renderable, self.redactor)
        return super().render(renderable, options)


def _redacted_text(text: Text, redactor: Redactor) -> Text:
    """``text`` itself when it holds no secret, else a copy of its plain text redacted (the
    base style, justification and overflow are kept; spans are dropped, as their offsets no
    longer fit)."""
    plain = text.plain
    redacted = redactor.redact(plain)
    return text if redacted == plain else text.blank_copy(redacted)
