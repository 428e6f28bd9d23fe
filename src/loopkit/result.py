"""The RESULT contract: the last line of a run's final answer says how it ended."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

_RESULT_LINE = re.compile(r"^RESULT:\s*(done|failed)\s*(?::\s*(.*))?$", re.IGNORECASE)


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

    The last non-empty line must be ``RESULT: done`` or ``RESULT: failed: <reason>``; anything else
    is a failed run whose reason says the line was missing (and quotes what was there instead).
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return RunResult(status="failed", reason="the final answer was empty: no RESULT line")
    last = lines[-1].strip("`*_ ")
    match = _RESULT_LINE.match(last)
    if match is None:
        shown = last if len(last) <= 120 else last[:117] + "..."
        return RunResult(
            status="failed",
            reason=f"the final answer did not end with a RESULT line (last line: {shown!r})",
        )
    status = match.group(1).lower()
    if status == "done":
        return RunResult(status="done")
    reason = (match.group(2) or "").strip()
    return RunResult(status="failed", reason=reason or "the model gave no reason")
