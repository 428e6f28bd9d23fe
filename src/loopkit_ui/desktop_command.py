"""One command run on a headless desktop by a process that stays its parent (``python -m
loopkit_ui.session``, and :mod:`loopkit_ui.session_fork`'s forked children): signals passed on to
the command, and the orphans it leaves adopted (as subreaper), reaped while it runs and ended at
teardown, never the desktop's own processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from types import FrameType

from loopkit_ui import desktop_guard
from loopkit_ui.headless_desktop import HeadlessDesktop, _children_of

__all__ = ["CommandSignals", "become_subreaper", "end_orphans", "wait_reaping"]

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so none escapes the sweep."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class CommandSignals:
    """SIGINT, SIGTERM and SIGHUP: during start-up the first one raises KeyboardInterrupt (so the
    desktop tears down what it started); from the command's start on, each is passed on to it
    (one that lands while it is being started is passed on right after); during teardown they
    are ignored, so a second Ctrl-C cannot leave a daemon behind."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self.command: subprocess.Popen[bytes] | None = None
        self.spawning = False
        self.kept: list[int] = []
        self.tearing_down = False
        for signum in self.SIGNALS:
            signal.signal(signum, self._handle)

    def attach(self, command: subprocess.Popen[bytes]) -> None:
        """From now on signals go to ``command``, starting with those kept while it started."""
        self.command = command
        while self.kept:
            with contextlib.suppress(ProcessLookupError):
                command.send_signal(self.kept.pop(0))

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.tearing_down:
            return
        if self.command is not None:
            with contextlib.suppress(ProcessLookupError):
                self.command.send_signal(signum)
            return
        if self.spawning:
            self.kept.append(signum)
            return
        if self.received is None:
            self.received = signum
            raise KeyboardInterrupt


def wait_reaping(proc: subprocess.Popen[bytes], desktop: HeadlessDesktop) -> int:
    """Wait for ``proc``; meanwhile reap the orphans we adopted as subreaper once they exit
    (the desktop's own children are left to their ``Popen``)."""
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            ours = _own_children(desktop) | {proc.pid}
            for pid, fields in desktop_guard.proc_table().items():
                if fields[0] == "Z" and int(fields[1]) == os.getpid() and pid not in ours:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)


def _own_children(desktop: HeadlessDesktop) -> set[int]:
    ours = {p.pid for p in desktop._procs}
    if desktop._guard is not None:
        ours.add(desktop._guard.pid)
    return ours


def end_orphans(desktop: HeadlessDesktop) -> None:
    """End what the command orphaned (adopted by us as the subreaper), not the desktop's own."""
    for pid in _children_of({os.getpid()}) - _own_children(desktop):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
