"""The RESULT contract: the last line of a run's final answer says how it ended."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

# The whole line, nothing after "done": "RESULT: done, mostly" and "RESULT: done: ..." are not done.
_RESULT_LINE = r"^RESULT:\s*(?:(?P<done>{word})|failed(?:\s*:\s*(?P<reason>.*))?)$"
_LOOKS_LIKE_RESULT = re.compile(r"^RESULT\b", re.IGNORECASE)
# Markdown a model puts around the whole line (**RESULT: done**, `RESULT: done`).
_DECORATION = "`*_ "
_SHOWN_CHARS = 120


class RunResult(BaseModel):
    """How a run ended: ``done``, or ``failed`` with a one-line reason."""

    status: Literal["done", "failed"]
    reason: str | None = None
    #: The role's word for success in its RESULT line (``done``; a tester's ``passed``).
    success_word: str = "done"

    @property
    def done(self) -> bool:
        """Whether the run succeeded (``RESULT: <success word>``)."""
        return self.status == "done"

    @property
    def word(self) -> str:
        """The word of the RESULT line: the success word, or ``failed``."""
        return self.success_word if self.done else "failed"

    def line(self) -> str:
        """The RESULT line this result stands for."""
        if self.done:
            return f"RESULT: {self.success_word}"
        return f"RESULT: failed: {self.reason or 'no reason given'}"


def parse_result(text: str, success: str = "done") -> RunResult:
    """Read the RESULT line from the end of ``text``.

    The whole last non-empty line (markdown emphasis around it aside) must be ``RESULT: done`` or
    ``RESULT: failed: <reason>``; the keywords are case-insensitive. Anything else is a failed
    run whose reason says the line was missing or malformed and quotes what was there instead:
    ``RESULT: done, mostly``, ``RESULT: done.`` and ``RESULT: done: but ...`` are not done.
    ``success`` is the role's word for success in place of ``done`` (a tester's ``passed``): the
    other word is then not a success.
    """
    word = {"success_word": success} if success != "done" else {}
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return RunResult(
            status="failed", reason="the final answer was empty: no RESULT line", **word
        )
    written = lines[-1]
    last = written.strip(_DECORATION)
    match = re.match(_RESULT_LINE.format(word=re.escape(success)), last, re.IGNORECASE)
    if match is None:
        shown = written if len(written) <= _SHOWN_CHARS else written[: _SHOWN_CHARS - 3] + "..."
        if _LOOKS_LIKE_RESULT.match(last):
            what = f"the last line is not 'RESULT: {success}' or 'RESULT: failed: <reason>'"
        else:
            what = "the final answer did not end with a RESULT line"
        return RunResult(status="failed", reason=f"{what} (last line: {shown!r})", **word)
    if match.group("done"):
        return RunResult(status="done", **word)
    reason = (match.group("reason") or "").strip()
    return RunResult(status="failed", reason=reason or "the model gave no reason", **word)


_CITED = re.compile(r"\brules?\s*:?\s*((?:\d+)(?:\s*(?:,|and|&)\s*\d+)*)", re.IGNORECASE)


def cited_rules(text: str) -> list[int]:
    """The feedback-rule numbers ``text`` cites ("rule 1", "rules 2, 3 and 5"), sorted."""
    return sorted({int(n) for m in _CITED.finditer(text) for n in re.findall(r"\d+", m.group(1))})
