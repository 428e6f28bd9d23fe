"""The desktop guard: ends a headless desktop whose owner died, even by SIGKILL.

:class:`~loopkit_ui.headless_desktop.HeadlessDesktop` starts this file as a tiny separate process
(``python -I -S desktop_guard.py MARKER GRACE``, its own session, so a Ctrl-C or a ``killpg`` of the
owner's group does not reach it) before any daemon. Its stdin is a pipe whose write end only the
owner holds (close-on-exec, so no child inherits it). The owner writes one line per thing to end:

- ``g PGID``: the desktop's process group;
- ``p PID STARTTIME``: a process it started (the start time guards against a reused pid);
- ``done``: the owner tore the desktop down itself; exit without touching anything.

When the owner dies for any reason the kernel closes the pipe; the guard reads end-of-file without
``done`` and ends every process that is in the group, was recorded, carries the desktop's marker
variable in its environment (``MARKER=1``: children that left the group or were orphaned), or
descends from one of those: SIGTERM, up to GRACE seconds, then SIGKILL.

Only the standard library: this file runs with ``-I -S`` (no site, no PYTHONPATH) and is imported
by the owner for the same process scan (:func:`desktop_processes`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

__all__ = ["desktop_processes", "proc_table", "start_time"]

_FIELD_STATE, _FIELD_PPID, _FIELD_PGRP, _FIELD_STARTTIME = 0, 1, 2, 19


def proc_table() -> dict[int, list[str]]:
    """Every process's ``/proc/PID/stat`` fields after the command name (state is field 0)."""
    table: dict[int, list[str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                # The command name is in parentheses and may contain anything: split after the
                # last ')'.
                table[int(name)] = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
    return table


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[_FIELD_STARTTIME]
    except (OSError, IndexError):
        return None


def _carries(pid: int, marker: bytes) -> bool:
    # The marker is the variable's name; a process carries it as ``NAME=1``.
    wanted = marker if marker.endswith(b"=1") else marker + b"=1"
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return wanted in f.read().split(b"\0")
    except OSError:
        return False


def desktop_processes(
    marker: str, groups: set[int], recorded: dict[int, str], exclude: set[int]
) -> dict[int, str]:
    """Live processes of a desktop, with their start times: the members of ``groups``, the
    ``recorded`` pids (whose start time still matches), the carriers of ``marker`` (``NAME=1``) and
    every descendant of those. ``exclude`` is never part of it (the caller, the guard)."""
    table = proc_table()
    marker_bytes = marker.encode()
    found: set[int] = set()
    for pid, fields in table.items():
        if pid in exclude or fields[_FIELD_STATE] == "Z":
            continue
        if (
            int(fields[_FIELD_PGRP]) in groups
            or recorded.get(pid) == fields[_FIELD_STARTTIME]
            or _carries(pid, marker_bytes)
        ):
            found.add(pid)
    frontier = set(found)
    while frontier:
        frontier = (
            {
                pid
                for pid, fields in table.items()
                if int(fields[_FIELD_PPID]) in frontier and fields[_FIELD_STATE] != "Z"
            }
            - found
            - exclude
        )
        found |= frontier
    return {pid: table[pid][_FIELD_STARTTIME] for pid in found}


def _signal_all(victims: dict[int, str], sig: int) -> None:
    for pid, started in victims.items():
        if start_time(pid) == started:  # not a reused pid
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def _guard(marker: str, grace: float) -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    recorded: dict[int, str] = {}
    pending = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            kind, _, rest = line.decode().partition(" ")
            if kind == "done":
                return
            if kind == "g":
                groups.add(int(rest))
            elif kind == "p":
                pid, _, started = rest.partition(" ")
                recorded[int(pid)] = started
    me = {os.getpid()}
    victims = desktop_processes(marker, groups, recorded, me)
    _signal_all(victims, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        time.sleep(0.05)
        # Alive victims plus anything new (a child forked meanwhile, a late orphan).
        alive = {pid: s for pid, s in victims.items() if start_time(pid) == s}
        fresh = desktop_processes(marker, groups, recorded | alive, me)
        if not fresh:
            return
        _signal_all({p: s for p, s in fresh.items() if p not in victims}, signal.SIGTERM)
        victims.update(fresh)
    victims.update(desktop_processes(marker, groups, recorded, me))
    _signal_all(victims, signal.SIGKILL)


if __name__ == "__main__":
    _guard(sys.argv[1], float(sys.argv[2]))
