"""The command line of the headless desktop: ``python -m loopkit_ui.session -- COMMAND...``.

The command runs on a private desktop (:class:`~loopkit_ui.headless_desktop.HeadlessDesktop`;
signals and orphans as :mod:`loopkit_ui.desktop_command` handles them) and its exit
status is passed on. Bad input (no command, one that cannot be started, a bad ``--screen``) is one
line and exit status 2, checked before anything starts. SIGINT, SIGTERM and SIGHUP during start-up
end with 130 after the desktop is torn down, without a traceback; afterwards they are passed on to
the command. As a subreaper the session adopts what the command orphans and ends it at teardown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from loopkit_ui.desktop_command import CommandSignals, become_subreaper, end_orphans, wait_reaping
from loopkit_ui.headless_desktop import DesktopError, HeadlessDesktop, screen_problem

__all__ = ["command_problem", "main"]


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


_EPILOG = """\
exit status: the command's own; 128+N when the command was killed by signal N (as a shell
reports it); 130 when interrupted (SIGINT, SIGTERM, SIGHUP) before the command started; 2 for bad
input (no command, a command that cannot be started, a bad --screen); 1 when the desktop could
not start. The desktop ends with the command, and also when this process is killed (even -9).
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loopkit_ui.session [--screen WxHxD] -- COMMAND...``: run COMMAND on a headless
    desktop and pass on its exit status (the epilog lists every status)."""
    signals = CommandSignals()  # first: an early Ctrl-C must not print a traceback either
    try:
        return _run(argv, signals)
    except KeyboardInterrupt:  # before the command started; the desktop is already torn down
        return 130


def _run(argv: Sequence[str] | None, signals: CommandSignals) -> int:
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
    become_subreaper()
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
        status = wait_reaping(proc, desktop)
    except DesktopError as e:
        print(f"{parser.prog}: error: the headless desktop did not start: {e}", file=sys.stderr)
        return 1
    finally:
        signals.tearing_down = True
        end_orphans(desktop)
        desktop.stop()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
