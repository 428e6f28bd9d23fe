"""The system log as an oracle's source: new entries written by the application under test.

On Linux this is the systemd journal (read with ``journalctl``) where it runs, else a syslog text
file written by a syslog daemon (rsyslog's traditional format or RFC 5424-ish timestamps). On
Windows the same role falls to the Application event log (not built yet: see docs/scripts.md).
Entries are matched to the app by program name (the syslog tag) or by process id.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

__all__ = [
    "JournalSource",
    "SyslogFileSource",
    "SystemLogEntry",
    "SystemLogSource",
    "default_system_log",
]

# "Nov 30 05:01:02 host tag[123]: message" or "2026-11-30T05:01:02.1+00:00 host tag[123]: message"
_SYSLOG_LINE = re.compile(
    r"^(?P<time>[A-Z][a-z]{2} [ \d]\d [\d:]{8}|\d{4}-\d\d-\d\dT\S+) (?P<host>\S+) "
    r"(?P<tag>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: ?(?P<message>.*)$"
)


class SystemLogEntry(BaseModel):
    """One system-log entry of the application."""

    time: str
    ident: str
    pid: int | None = None
    message: str


@runtime_checkable
class SystemLogSource(Protocol):
    """New system-log entries of one program."""

    name: str

    def start(self, ident: str, pids: Iterable[int]) -> None:
        """Skip everything logged so far; from now on follow ``ident`` and ``pids``."""
        ...

    def add_pid(self, pid: int) -> None:
        """Also follow ``pid`` (the app was restarted)."""
        ...

    def read_new(self) -> list[SystemLogEntry]:
        """The program's entries since the last read."""
        ...


class SyslogFileSource:
    """Follows a syslog text file (``/var/log/syslog``, or a test daemon's file)."""

    name = "syslog file"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.ident = ""
        self.pids: set[int] = set()
        self._offset = 0
        self._partial = b""

    def describe(self) -> str:
        """For the report."""
        return f"syslog file {self.path}"

    def start(self, ident: str, pids: Iterable[int]) -> None:
        """Start at the file's current end."""
        self.ident = ident
        self.pids = set(pids)
        self._offset = self.path.stat().st_size if self.path.exists() else 0
        self._partial = b""

    def add_pid(self, pid: int) -> None:
        """Also follow ``pid``."""
        self.pids.add(pid)

    def read_new(self) -> list[SystemLogEntry]:
        """Complete new lines of the followed program."""
        if not self.path.exists():
            return []
        size = self.path.stat().st_size
        if size < self._offset:  # rotated or truncated: start over
            self._offset = 0
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            data = self._partial + handle.read()
            self._offset = handle.tell()
        *lines, self._partial = data.split(b"\n")
        entries = []
        for raw in lines:
            match = _SYSLOG_LINE.match(raw.decode("utf-8", errors="replace"))
            if match is None:
                continue
            pid = int(match["pid"]) if match["pid"] else None
            if match["tag"] == self.ident or (pid is not None and pid in self.pids):
                # rsyslog escapes control characters: a newline arrives as "#012".
                message = match["message"].replace("#012", "\n").replace("#011", "\t")
                entries.append(
                    SystemLogEntry(time=match["time"], ident=match["tag"], pid=pid, message=message)
                )
        return entries


class JournalSource:
    """Follows the systemd journal with ``journalctl`` (cursor-based, JSON output)."""

    name = "journal"

    def __init__(self, journalctl: str = "journalctl", timeout: float = 5.0) -> None:
        self.journalctl = journalctl
        self.timeout = timeout
        self.ident = ""
        self.pids: set[int] = set()
        self._cursor: str | None = None

    @staticmethod
    def available() -> bool:
        """True when journalctl exists and a journal is being written."""
        return shutil.which("journalctl") is not None and (
            Path("/run/systemd/journal/socket").exists() or Path("/var/log/journal").is_dir()
        )

    def describe(self) -> str:
        """For the report."""
        return "systemd journal (journalctl)"

    def _run(self, *args: str) -> list[dict[str, object]]:
        result = subprocess.run(
            [self.journalctl, "--no-pager", "-o", "json", *args],
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        entries = []
        for line in result.stdout.splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return entries

    def start(self, ident: str, pids: Iterable[int]) -> None:
        """Remember the journal's current end."""
        self.ident = ident
        self.pids = set(pids)
        last = self._run("-n", "1")
        self._cursor = str(last[-1]["__CURSOR"]) if last else None

    def add_pid(self, pid: int) -> None:
        """Also follow ``pid``."""
        self.pids.add(pid)

    def read_new(self) -> list[SystemLogEntry]:
        """Entries after the remembered cursor of the followed program."""
        args = ["--after-cursor", self._cursor] if self._cursor else []
        found = []
        for entry in self._run(*args):
            self._cursor = str(entry.get("__CURSOR", self._cursor))
            ident = str(entry.get("SYSLOG_IDENTIFIER", ""))
            pid_text = str(entry.get("_PID") or entry.get("SYSLOG_PID") or "")
            pid = int(pid_text) if pid_text.isdigit() else None
            if ident == self.ident or (pid is not None and pid in self.pids):
                found.append(
                    SystemLogEntry(
                        time=str(entry.get("__REALTIME_TIMESTAMP", "")),
                        ident=ident,
                        pid=pid,
                        message=str(entry.get("MESSAGE", "")),
                    )
                )
        return found


def default_system_log() -> SystemLogSource | None:
    """The journal where it runs, else a readable syslog file, else None (no system log)."""
    if JournalSource.available():
        return JournalSource()
    for candidate in ("/var/log/syslog", "/var/log/messages"):
        if os.access(candidate, os.R_OK):
            return SyslogFileSource(candidate)
    return None
