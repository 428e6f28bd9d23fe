"""Findings of the oracles, their fingerprints, and reading crash text.

A finding's fingerprint is a hash over its kind (the oracle's verdict: ``crash_dialog``,
``app_log_error``, ...), its normalised title, and its first stack-trace line (normalised): the
same crash found by ten scripts, in ten temp folders, is one finding. The kind is used rather
than the name of the oracle that saw it, so a crash dialog seen by the event hook in one run and
by polling in another is still one finding.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "CrashSigns",
    "Finding",
    "crash_signs",
    "exception_type",
    "fingerprint",
    "first_stack_line",
    "normalise_stack_line",
    "normalise_title",
]

Severity = Literal["error", "warning"]

# Stack-trace lines of the common runtimes: Python, .NET, Java/JS.
_PY_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_NET_FRAME = re.compile(
    r"^\s*at (?P<func>[\w.<>`+\[\], ]+\(.*?\))(?: in (?P<file>.+?):line (?P<line>\d+))?\s*$"
)
_JAVA_FRAME = re.compile(
    r"^\s*at (?P<func>[\w.$<>]+)\((?P<file>[\w$.-]+\.(?:java|kt|scala|groovy|js|ts))"
    r"(?::(?P<line>\d+))?(?::\d+)?\)"
)
_EXCEPTION = re.compile(
    r"\b(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Fault|Interrupt|Exit))\b(?=:|\s|$)"
)
_CONTINUE = re.compile(r"^\s*&?(continue|ignore|weiter|fortfahren|ignorieren)\s*$", re.I)
_QUIT = re.compile(r"^\s*&?(quit|exit|abort|close application|beenden|abbrechen)\s*$", re.I)
_PATH = re.compile(r"(?:[A-Za-z]:\\|/)[^\s\"':;,]*")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_LONG_NUMBER = re.compile(r"\d{3,}")


class Finding(BaseModel):
    """One thing an oracle noticed after a step."""

    kind: str = Field(description="crash_dialog, new_window, process_ended, ... (the verdict)")
    oracle: str = Field(description="the oracle that saw it")
    severity: Severity = "error"
    title: str = Field(description="what it is about: a window title, a label, an exception type")
    summary: str
    detail: str = ""
    stack_line: str | None = Field(default=None, description="first stack-trace line, if any")
    step: str | None = Field(default=None, description="path of the step after which it was seen")
    expected: bool = Field(default=False, description="the step declared it (expect_findings)")

    @property
    def fingerprint(self) -> str:
        """Hash over kind, normalised title and normalised first stack line."""
        return fingerprint(self.kind, self.title, self.stack_line)


def normalise_title(title: str) -> str:
    """Lower case, paths/hex/long numbers replaced, whitespace collapsed: stable across runs."""
    text = _PATH.sub("<path>", title)
    text = _HEX.sub("<hex>", text)
    text = _LONG_NUMBER.sub("<n>", text)
    return " ".join(text.lower().split())


def normalise_stack_line(line: str | None) -> str:
    """``File "/abs/dir/x.py", line 3, in f`` -> ``x.py:3 in f`` (folders differ per machine)."""
    if not line:
        return ""
    for pattern in (_PY_FRAME, _JAVA_FRAME, _NET_FRAME):
        match = pattern.search(line)
        if match:
            file = re.split(r"[\\/]", match.group("file") or "")[-1]
            where = f"{file}:{match.group('line')}" if match.group("line") else file
            func = match.group("func")
            return f"{where} in {func}" if func else where
    return " ".join(line.split())


def fingerprint(kind: str, title: str, stack_line: str | None) -> str:
    """The finding identity (16 hex digits)."""
    key = "\n".join((kind, normalise_title(title), normalise_stack_line(stack_line)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _lines(texts: Iterable[str]) -> list[str]:
    lines: list[str] = []
    for text in texts:
        lines.extend((text or "").replace("#012", "\n").splitlines())
    return lines


def first_stack_line(texts: Iterable[str]) -> str | None:
    """The first line that looks like a stack frame (Python, .NET or Java style).

    With chained Python exceptions ("During handling of the above exception ...") the last
    traceback is the one of the exception that went unhandled: its first frame is used."""
    lines = _lines(texts)
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    for line in lines[starts[-1] if starts else 0 :]:
        if any(p.search(line) for p in (_PY_FRAME, _JAVA_FRAME, _NET_FRAME)):
            return line.strip()
    return None


def exception_type(texts: Iterable[str]) -> str | None:
    """The first exception type named in the texts (``ValueError``, ``System.IO.IOException``)."""
    for line in _lines(texts):
        if "Traceback" in line:
            continue
        match = _EXCEPTION.search(line)
        if match:
            return match.group("type")
    return None


class CrashSigns(BaseModel):
    """What in a window's content says "unhandled exception"."""

    exception_type: str | None = None
    stack_line: str | None = None
    continue_button: str | None = None
    quit_button: str | None = None

    @property
    def is_crash(self) -> bool:
        """An exception type, a stack line, or both continue and quit buttons."""
        buttons = self.continue_button is not None and self.quit_button is not None
        return bool(self.exception_type or self.stack_line or buttons)

    def reasons(self) -> list[str]:
        """Human-readable evidence, for the report."""
        found = []
        if self.exception_type:
            found.append(f"exception type {self.exception_type}")
        if self.stack_line:
            found.append(f"stack line {normalise_stack_line(self.stack_line)!r}")
        if self.continue_button and self.quit_button:
            found.append(f"buttons {self.continue_button!r}/{self.quit_button!r}")
        return found


def crash_signs(texts: Sequence[str], buttons: Sequence[str]) -> CrashSigns:
    """Read a window's texts and button names for signs of a crash dialog (not its title)."""
    return CrashSigns(
        exception_type=exception_type(texts),
        stack_line=first_stack_line(texts),
        continue_button=next((b for b in buttons if _CONTINUE.match(b)), None),
        quit_button=next((b for b in buttons if _QUIT.match(b)), None),
    )
