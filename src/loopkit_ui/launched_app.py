"""The application the server started itself (``--launch``): its process, its output, how it
ended, and starting it again.

Its stdout and stderr go to a private file in the output folder (``app-output-NNN-*.log``, one
per start), so when it dies the server can answer with the exit status and the last lines it
printed (a traceback, "No module named 'PySide6'") instead of an accessibility hint.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from loopkit_ui.outputs import OutputFolder

__all__ = ["LaunchedApp", "describe_exit"]

TAIL_LINES = 15
TAIL_CHARS = 2000


def describe_exit(status: int) -> str:
    """``exit status 1`` or ``killed by signal 9 (SIGKILL)`` for a Popen return code."""
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-status} ({name})"
    return f"exit status {status}"


class LaunchedApp:
    """One launched application: ``start()`` it, ask how it ``ended()``, ``restart()`` it,
    ``stop()`` it. Each start writes its output to a new file of ``outputs``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        outputs: OutputFolder,
    ) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env)
        self.outputs = outputs
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        """The current process id (``start()`` first)."""
        if self.process is None:
            raise RuntimeError("the app has not been started")
        return self.process.pid

    def start(self) -> int:
        """Start the app (its own process group, output to a new log file); answers its pid.
        OSError when the program cannot be started."""
        self.log_path = self.outputs.new_file("app-output", ".log")
        self._close_log()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - open while the app runs
        # Our own child in its own process group: ended with us.
        group: dict[str, Any] = (
            {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
            if sys.platform == "win32"
            else {"start_new_session": True}
        )
        try:
            self.process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                **group,
            )
        except OSError:
            self._close_log()
            self.log_path.unlink(missing_ok=True)
            raise
        return self.process.pid

    def ended(self) -> int | None:
        """The return code when the app has ended, else None."""
        return None if self.process is None else self.process.poll()

    def wait_ended(self, timeout: float) -> int | None:
        """The return code once the app has ended, waiting up to ``timeout`` seconds; None
        when it still runs. (A killed multi-threaded app shows as a zombie a moment before it
        can be reaped: an accessibility error may arrive first.)"""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines the app printed (stdout and stderr), at most ``TAIL_CHARS``."""
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - 8 * TAIL_CHARS))
                data = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        text = "\n".join(data.rstrip().splitlines()[-lines:])
        return text[-TAIL_CHARS:]

    def death_report(self) -> str | None:
        """None while the app runs; else how it ended and the tail of its output, for the
        answer of a tool that cannot work without it."""
        status = self.ended()
        if status is None:
            return None
        tail = self.tail()
        shown = f"; its last output ({self.log_path}):\n{tail}" if tail else "; it printed nothing"
        return (
            f"the application started with --launch ({' '.join(self.argv)}) has ended: "
            f"{describe_exit(status)}{shown}\nStart it again with ui_restart_app."
        )

    def restart(self, timeout: float = 5.0) -> str:
        """Stop the app if it runs and start it again; answers how the previous one ended."""
        previous = self.ended()
        if self.process is not None and previous is None:
            previous = self.stop(timeout)
        self.start()
        return "never started" if previous is None else describe_exit(previous)

    def stop(self, timeout: float = 5.0) -> int | None:
        """End the app's process group (SIGTERM, then SIGKILL after ``timeout``); answers its
        return code."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            try:
                if sys.platform == "win32":
                    process.terminate()
                else:
                    os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                process.kill()
                process.wait(timeout)
        self._close_log()
        return process.returncode

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
