"""The application under test: start it, attach the UI backend, close it (always).

The backend is the same :class:`~loopkit_ui.backends.UIBackend` implementation the MCP server
uses (``create_backend``), attached to the started process by pid: a click of a script and a
click of the model run through the same code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from loopkit_ui.backends import UIBackend, create_backend, default_backend_name
from loopkit_ui.scripts.model import AppConfig

__all__ = ["AppProcess"]


class AppProcess:
    """One application process (restartable) and the backend attached to it.

    Args:
        config: the script's app section, already interpolated.
        env: the full environment for the app (desktop variables included).
        output: file that receives the app's stdout and stderr.
        backend_name: ``atspi`` / ``uia`` (default: by platform / LOOPKIT_UI_BACKEND).
    """

    def __init__(
        self,
        config: AppConfig,
        env: Mapping[str, str],
        output: Path,
        *,
        backend_name: str | None = None,
    ) -> None:
        self.config = config
        self.env = dict(env)
        self.output = output
        self.backend_name = backend_name or default_backend_name(self.env)
        self.proc: subprocess.Popen[bytes] | None = None
        self.backend: UIBackend | None = None
        self.pids: list[int] = []
        self._out: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The current process id (None before start)."""
        return self.proc.pid if self.proc is not None else None

    def poll(self) -> int | None:
        """The exit status if the process ended, else None."""
        return self.proc.poll() if self.proc is not None else None

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the process to end; its status, else None."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def start(self, extra_args: Sequence[str] = ()) -> UIBackend:
        """Start the process and attach a backend to it (waits up to ``startup_timeout``)."""
        env = {**self.env, **self.config.env}
        self._out = self.output.open("ab")
        self.proc = subprocess.Popen(
            [*self.config.command, *extra_args],
            cwd=self.config.cwd or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            # Its own process group: closing it ends whatever it started too.
            start_new_session=True,
        )
        self.pids.append(self.proc.pid)
        options: dict[str, object] = {
            "timeout": self.config.call_timeout,
            "attach_timeout": self.config.startup_timeout,
        }
        if self.config.app_name:
            options["app_name"] = self.config.app_name
        else:
            options["pid"] = self.proc.pid
        if self.backend_name == "atspi":
            options["bus_address"] = env.get("AT_SPI_BUS_ADDRESS") or None
            options["display"] = env.get("DISPLAY") or None
        self.backend = create_backend(self.backend_name, **options)
        self.backend.attach()
        if hasattr(self.backend, "attach_timeout"):
            # Attached once, by pid: a process that left cannot come back, so a later call must
            # not wait the whole startup time for it to re-register.
            self.backend.attach_timeout = 0.5
        return self.backend

    def close(self) -> int | None:
        """Close the backend, then the app: SIGTERM, then SIGKILL after ``close_timeout``.
        Returns the exit status (negative: killed by that signal)."""
        if self.backend is not None:
            with contextlib.suppress(Exception):
                self.backend.close()
            self.backend = None
        proc, self.proc = self.proc, None
        status = None
        if proc is not None:
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(self.config.close_timeout)
                except subprocess.TimeoutExpired:
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait(self.config.close_timeout)
            status = proc.returncode
            # Stragglers the app started in its group.
            _signal_group(proc, signal.SIGKILL)
        if self._out is not None:
            self._out.close()
            self._out = None
        return status


def _signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)
