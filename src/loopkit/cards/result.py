"""The RESULT contract: the last line of a run's final answer says how it ended."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

# The whole line, nothing after "done": "RESULT: done, mostly" and "RESULT: done: ..." are not done.
_RESULT_LINE = re.compile(
    r"^RESULT:\s*(?:(?P<done>done)|failed(?:\s*:\s*(?P<reason>.*))?)$", re.IGNORECASE
)
_LOOKS_LIKE_RESULT = re.compile(r"^RESULT\b", re.IGNORECASE)
# Markdown a model puts around the whole line (**RESULT: done**, `RESULT: done`).
_DECORATION = "`*_ "
_SHOWN_CHARS = 120


class RunResult(BaseModel):
    """How a run ended: ``done``, or ``failed`` with a one-line reason."""

    status: Literal["done", "failed"]
    reason: str | None = None

    @property
    def done(self) -> bool:
        return self.status == "done"

    def line(self) -> str:
        """The RESULT line this result stands for."""
        return (
            "RESULT: done" if self.done else f"RESULT: failed: {self.reason or 'no reason given'}"
        )


def parse_result(text: str) -> RunResult:
    """Read the RESULT line from the end of ``text``.

    The whole last non-empty line (markdown emphasis around it aside) must be ``RESULT: done`` or
    ``RESULT: failed: <reason>``; the keywords are case-insensitive. Anything else is a failed
    run whose reason says the line was missing or malformed and quotes what was there instead:
    ``RESULT: done, mostly``, ``RESULT: done.`` and ``RESULT: done: but ...`` are not done.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return RunResult(status="failed", reason="the final answer was empty: no RESULT line")
    written = lines[-1]
    last = written.strip(_DECORATION)
    match = _RESULT_LINE.match(last)
    if match is None:
        shown = written if len(written) <= _SHOWN_CHARS else written[: _SHOWN_CHARS - 3] + "..."
        if _LOOKS_LIKE_RESULT.match(last):
            what = "the last line is not 'RESULT: done' or 'RESULT: failed: <reason>'"
        else:
            what = "the final answer did not end with a RESULT line"
        return RunResult(status="failed", reason=f"{what} (last line: {shown!r})")
    if match.group("done"):
        return RunResult(status="done")
    reason = (match.group("reason") or "").strip()
    return RunResult(status="failed", reason=reason or "the model gave no reason")
