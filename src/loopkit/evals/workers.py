"""Local workers of an eval (``--workers K``): K ``python -m loopkit.worker`` processes on the
eval's database, each in a headless desktop of its own, stopped when the eval ends.

A worker is a process of its own, not a part of the eval: when the eval is killed, its workers
go on with the runs they have (each run is durable anyway). Their ids are kept in
``OUT/workers/<name>.pid``; an eval started again in the same folder takes over the ones still
alive instead of starting new ones, and stops them at its end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from loopkit_tools.processes import pid_alive

__all__ = ["LocalWorkers"]


def _command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return []


class LocalWorkers:
    """Starts (or takes over) ``count`` workers named ``<prefix>-1`` ... on ``database``; their
    output goes to ``folder/<name>.log``. :meth:`stop` sends SIGTERM (a run in progress is
    interrupted and stays pending for the next worker) and waits."""

    def __init__(self, count: int, database: str, folder: Path, prefix: str = "eval") -> None:
        self.count = count
        self.database = database
        self.folder = folder
        self.prefix = prefix
        self.pids: dict[str, int] = {}
        self.adopted: list[str] = []
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def _ours(self, name: str, pid: int) -> bool:
        """``pid`` is still this eval's worker ``name`` (not a recycled id)."""
        line = _command_line(pid)
        return (
            pid_alive(pid) and "loopkit.worker" in line and name in line and self.database in line
        )

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "LOOPKIT_HEADLESS": "always"}
        # The database is given on the command line, never from the caller's environment.
        env.pop("LOOPKIT_DATABASE_URL", None)
        for n in range(1, self.count + 1):
            name = f"{self.prefix}-{n}"
            pid_file = self.folder / f"{name}.pid"
            with contextlib.suppress(OSError, ValueError):
                pid = int(pid_file.read_text().strip())
                if self._ours(name, pid):
                    self.pids[name] = pid
                    self.adopted.append(name)
                    continue
            with open(self.folder / f"{name}.log", "ab") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "loopkit.worker", "--database", self.database,
                     "--name", name],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True,
                )  # fmt: skip
            self._children[process.pid] = process
            self.pids[name] = process.pid
            pid_file.write_text(f"{process.pid}\n")

    def alive(self) -> int:
        return sum(1 for name, pid in self.pids.items() if self._running(name, pid))

    def _running(self, name: str, pid: int) -> bool:
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is None
        return self._ours(name, pid)

    def stop(self, timeout: float = 60.0) -> None:
        for name, pid in self.pids.items():
            if self._running(name, pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, pid in self.pids.items():
            while self._running(name, pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if self._running(name, pid):
                # Its whole group: the worker runs inside a desktop session of its own.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            child = self._children.get(pid)
            if child is not None:
                child.wait()
            (self.folder / f"{name}.pid").unlink(missing_ok=True)
        self.pids.clear()
        self._children.clear()
