"""Condensing command output for the model: a summary line plus the error and warning lines only.

The full output of a build costs tokens in every later round, so the model gets one summary line
and the lines that matter: errors, warnings, failures and the locations they point at
(``File "x.py", line 3`` and ``path:line:`` forms), de-duplicated, each cut to a sane length, and
capped with a note saying how many were left out.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RELEVANT = re.compile(
    r"\b(error|errors|warning|warnings|fail|failed|failure|failures|exception|traceback)\b"
    r"|Error\b|Warning\b"  # SyntaxError, DeprecationWarning, ...
    r"|File \"[^\"]+\", line \d+"  # Python tracebacks and compile errors
    r"|^\S+?:\d+(:\d+)?:",  # path:line[:col]: compilers, linters, invoice_app.build
    re.IGNORECASE,
)
MAX_LINE_CHARS = 300


def relevant_lines(output: str) -> list[str]:
    """The error/warning/location lines of ``output``, in order, without duplicates."""
    seen: set[str] = set()
    lines: list[str] = []
    for raw in _ANSI.sub("", output).splitlines():
        line = raw.rstrip()
        if not line.strip() or not _RELEVANT.search(line):
            continue
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " [...]"
        if line in seen:
            continue
        seen.add(line)
        lines.append(line)
    return lines


def condense(summary: str, output: str, max_lines: int) -> str:
    """``summary`` on the first line, then at most ``max_lines`` relevant lines of ``output``."""
    lines = relevant_lines(output)
    shown = lines[:max_lines]
    text = "\n".join([summary, *shown])
    if len(lines) > max_lines:
        text += (
            f"\n[... {len(lines) - max_lines} more error/warning lines not shown; fix these first]"
        )
    return text
