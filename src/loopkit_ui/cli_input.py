"""Command-line input checks shared by ``python -m loopkit_ui.server`` and
``python -m loopkit_ui.scripts``: bad input ends in one clear line and exit status 2, before
anything is started or created; a signal ends the command through its clean-up code.

Light on purpose (standard library only): the checks run before the heavy imports, so a typo
is answered at once.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import NoReturn

# One class and one spelling for the library's commands and these (the HTTP address and token
# checks in loopkit.mcp.http_security raise it).
from loopkit.command_line import BadInput, shown
from loopkit.errors import KeepsFieldsWhenPickled

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CODES_EPILOG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "STOP_SIGNALS",
    "BadInput",
    "Interrupted",
    "OneLineParser",
    "check_launch",
    "check_output_dir",
    "check_pid",
    "check_readable_file",
    "finish",
    "interrupt_on_signals",
    "loop_interrupts_on_signals",
    "non_negative_seconds",
    "positive_int",
    "positive_seconds",
    "printable",
    "shown",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_CODES_EPILOG = (
    "exit status: 0 ok (all passed), 1 failed (a script or run failed), 2 bad input "
    "(nothing was started), 130 interrupted (Ctrl+C, SIGTERM, SIGHUP)"
)


class Interrupted(KeepsFieldsWhenPickled, KeyboardInterrupt):
    """A stop signal arrived; raised in the main thread so clean-up code runs.

    A :class:`KeyboardInterrupt`, as Ctrl+C is: an event loop re-raises it from any callback
    (an ``Exception`` would be logged there and swallowed) and ``except Exception`` in a tool
    does not catch it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def printable(value: object) -> str:
    """``value`` as text when every character prints plainly, else :func:`shown` (a file name
    with a newline, a bidi override or an undecodable byte cannot break or disguise a line)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    plain = text.isprintable() and not any("\ud800" <= char <= "\udfff" for char in text)
    return text if plain else shown(text)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2), not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text!r}")
    return value


def non_negative_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, 0 or more."""
    value = _seconds(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more), got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds, got {text!r}")
    return value


def positive_int(limit: int) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to ``limit``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not 1 <= value <= limit:
            raise argparse.ArgumentTypeError(f"expected 1 to {limit:,}, got {text!r}")
        return value

    return parse


def check_pid(pid: int) -> None:
    """A process id that names a running process (BadInput otherwise)."""
    if pid <= 0:
        raise BadInput(f"--pid {pid}: expected the id of a running process (a number above 0)")
    if sys.platform == "win32":
        return  # os.kill(pid, 0) would end the process there; the backend reports it instead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise BadInput(f"--pid {pid}: no process with this id is running") from None
    except PermissionError:
        return  # it exists (another user's); whether it can be driven is the backend's answer


def check_launch(command: str, cwd: str | None) -> list[str]:
    """``--launch``'s argv, checked: quoting, the working folder, a program that can run."""
    if cwd is not None and not Path(cwd).is_dir():
        raise BadInput(f"--launch-cwd {shown(cwd)}: expected an existing folder")
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise BadInput(f"--launch {shown(command)}: {error} (shell quoting expected)") from None
    if not argv:
        raise BadInput("--launch '': expected a command, e.g. --launch 'python -m invoice_app'")
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if Path(program).is_absolute() else Path(cwd or ".") / program
        if not path.is_file() or not os.access(path, os.X_OK):
            raise BadInput(f"--launch {shown(command)}: {shown(program)} is not an executable file")
    elif shutil.which(program) is None:
        raise BadInput(f"--launch {shown(command)}: program {shown(program)} not found on PATH")
    return argv


def check_readable_file(path: Path, option: str, what: str) -> None:
    """An existing regular file that can be read."""
    if not path.exists():
        raise BadInput(f"{option} {shown(path)}: no such file (expected {what})")
    if not path.is_file():
        raise BadInput(f"{option} {shown(path)}: not a regular file (expected {what})")
    if not os.access(path, os.R_OK):
        raise BadInput(f"{option} {shown(path)}: cannot be read (expected {what})")


def check_output_dir(path: Path, option: str, *, given: Path | None = None) -> None:
    """A folder that exists, or can be created: no file in its place or on its way. Creating it
    is left to the command (after every other check), which reports an unwritable place.
    ``given``: the input as typed, when ``path`` is the folder it goes into."""
    given = given or path
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            if not candidate.is_dir():
                where = "is" if candidate == given else f"is under {shown(candidate)}, which is"
                raise BadInput(f"{option} {shown(given)}: {where} a file, not a folder")
            return


def finish(code: int) -> NoReturn:
    """Exit with ``code``. After an interrupt the clean-up has run; exit at once then, since a
    worker thread may still block on a read that never ends (the stdio transport reading
    stdin) and would keep the interpreter from exiting."""
    if code == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    from loopkit.command_line import exit_without_final_collection

    exit_without_final_collection(code)


STOP_SIGNALS: tuple[signal.Signals, ...] = (
    (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    if hasattr(signal, "SIGHUP")
    else (signal.SIGINT, signal.SIGTERM)
)


def _raise_interrupted(signum: int) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def loop_interrupts_on_signals() -> Iterator[None]:
    """Inside a running asyncio loop: raise :class:`Interrupted` out of it on a stop signal.

    The kernel may hand a process's signal to any thread, such as the worker blocked reading
    stdin; a Python-level handler then waits for the main thread, asleep in the loop's
    ``select`` with nothing to wake it. The loop's own handlers write to its wakeup descriptor,
    so the signal is seen at once. The handlers in place before come back after."""
    import asyncio

    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, _raise_interrupted, sig)
    try:
        yield
    finally:
        for sig, old in previous.items():
            loop.remove_signal_handler(sig)  # resets to the default: put the old one back
            signal.signal(sig, old)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP (and SIGINT) into :class:`Interrupted` in the main thread, so
    ``finally`` blocks end what the command started; the old handlers come back after."""
    wanted = STOP_SIGNALS

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in wanted}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
