"""Local workers of an eval (``--workers K``): K ``python -m loopkit.worker`` processes on the
eval's database, each in a headless desktop of its own, stopped when the eval ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["LocalWorkers"]


class LocalWorkers:
    """Starts ``count`` workers named ``<prefix>-1`` ... on ``database``; their output goes to
    ``folder/<name>.log``. :meth:`stop` sends SIGTERM (a run in progress is interrupted and
    stays pending for the next worker) and waits."""

    def __init__(self, count: int, database: str, folder: Path, prefix: str = "eval") -> None:
        self.count = count
        self.database = database
        self.folder = folder
        self.prefix = prefix
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "LOOPKIT_HEADLESS": "always"}
        # The database is given on the command line, never from a config file of the caller.
        env.pop("LOOPKIT_DATABASE_URL", None)
        for n in range(1, self.count + 1):
            name = f"{self.prefix}-{n}"
            with open(self.folder / f"{name}.log", "ab") as log:
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "loopkit.worker", "--database", self.database,
                         "--name", name],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                        start_new_session=True,
                    )
                )  # fmt: skip

    def alive(self) -> int:
        return sum(1 for p in self.processes if p.poll() is None)

    def stop(self, timeout: float = 60.0) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # Its whole group: the worker runs inside a desktop session of its own.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
