"""The command line of the headless desktop: ``python -m loopkit_ui.session -- COMMAND...``.

The command runs on a private desktop (:class:`~loopkit_ui.session.HeadlessDesktop`) and its exit
status is passed on. Bad input (no command, one that cannot be started, a bad ``--screen``) is one
line and exit status 2, checked before anything starts. SIGINT, SIGTERM and SIGHUP during start-up
end with 130 after the desktop is torn down, without a traceback; afterwards they are passed on to
the command. As a subreaper the session adopts what the command orphans and ends it at teardown.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

from loopkit_ui import desktop_guard
from loopkit_ui.session import DesktopError, HeadlessDesktop, _children_of, screen_problem

__all__ = ["command_problem", "main"]

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """Adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so none escapes the sweep."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def command_problem(program: str) -> str | None:
    """None when ``program`` can be started, else a sentence saying why not."""
    if os.sep in program:
        path = Path(program)
        if not path.exists():
            return f"command {program!r} not found: no such file"
        if path.is_dir():
            return f"command {program!r} is a directory, not a program"
        if not os.access(path, os.X_OK):
            return f"command {program!r} is not executable (chmod +x, or name its interpreter)"
        return None
    if shutil.which(program) is None:
        return f"command {program!r} not found on PATH"
    return None


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (and exit status 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class _Signals:
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


_EPILOG = """\
exit status: the command's own; 128+N when the command was killed by signal N (as a shell
reports it); 130 when interrupted (SIGINT, SIGTERM, SIGHUP) before the command started; 2 for bad
input (no command, a command that cannot be started, a bad --screen); 1 when the desktop could
not start. The desktop ends with the command, and also when this process is killed (even -9).
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loopkit_ui.session [--screen WxHxD] -- COMMAND...``: run COMMAND on a headless
    desktop and pass on its exit status (the epilog lists every status)."""
    signals = _Signals()  # first: an early Ctrl-C must not print a traceback either
    try:
        return _run(argv, signals)
    except KeyboardInterrupt:  # before the command started; the desktop is already torn down
        return 130


def _run(argv: Sequence[str] | None, signals: _Signals) -> int:
    parser = _Parser(
        prog="python -m loopkit_ui.session",
        description="Run a command on a private headless desktop (Xvfb + D-Bus + AT-SPI).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--screen", default="1280x1024x24", help="Xvfb screen, WxHxDEPTH")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("missing COMMAND: use python -m loopkit_ui.session -- COMMAND [ARGS...]")
    problem = screen_problem(args.screen) or command_problem(command[0])
    if problem:  # checked before anything starts
        parser.exit(2, f"{parser.prog}: error: {problem}\n")
    _become_subreaper()
    desktop = HeadlessDesktop(screen=args.screen)
    try:
        desktop.start()
        if signals.received is not None:  # its KeyboardInterrupt was swallowed somewhere
            raise KeyboardInterrupt
        # The command stays in our (foreground) process group so it can read the terminal;
        # as a subreaper we adopt whatever it orphans, and teardown sweeps our descendants.
        signals.spawning = True
        try:
            proc = desktop.spawn(command, in_group=False)
        except OSError as e:  # an executable file that is not a program (exec format error)
            print(f"{parser.prog}: error: cannot start {command[0]!r}: {e}", file=sys.stderr)
            return 2
        signals.attach(proc)
        status = _wait_reaping(proc, desktop)
    except DesktopError as e:
        print(f"{parser.prog}: error: the headless desktop did not start: {e}", file=sys.stderr)
        return 1
    finally:
        signals.tearing_down = True
        _end_orphans(desktop)
        desktop.stop()
    return status if status >= 0 else 128 - status


def _wait_reaping(proc: subprocess.Popen[bytes], desktop: HeadlessDesktop) -> int:
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


def _end_orphans(desktop: HeadlessDesktop) -> None:
    """End what the command orphaned (adopted by us as the subreaper), not the desktop's own."""
    for pid in _children_of({os.getpid()}) - _own_children(desktop):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
