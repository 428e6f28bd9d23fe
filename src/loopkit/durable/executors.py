"""Executor ids: the name a process runs durable runs under, and whether that process still runs.

loopkit's default id names the process (``kind:host:pid:start-time``), so that
:func:`executor_alive` can tell a run whose process is gone (interrupted: it can be resumed) from
one that is still running. The runtime gives a process its id; a run's record reads it back.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

__all__ = ["executor_alive", "process_executor_id"]


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is another
    process; "" where /proc is not there."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def process_executor_id(kind: str = "process") -> str:
    """An executor id naming this process: ``kind:host:pid:start``."""
    pid = os.getpid()
    return f"{kind}:{socket.gethostname()}:{pid}:{_process_start(pid)}"


def executor_alive(executor_id: str | None) -> bool | None:
    """Whether the process an executor id of :func:`process_executor_id` names still runs:
    True or False on this host, None for an id of another host or of another form (a worker's
    own name), where only that machine can tell."""
    if not executor_id:
        return None
    parts = executor_id.split(":")
    if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return None
    pid, start = int(parts[2]), parts[3]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    if sys.platform.startswith("linux") and start:
        now = _process_start(pid)
        return now == start
    return True
