"""Process groups that never outlive the run: start, stop (terminate, then kill), run with timeout.

Every command runs as the leader of its own process group (its own session, so a terminal's Ctrl+C
does not reach it) and stopping ends the whole group: SIGTERM, a grace period, then SIGKILL.

No process may outlive the run, even when the Python process dies. Three layers:

1. ``LocalTools`` stops the app on exit of its ``async with`` block (normal, exception, cancel).
2. An ``atexit`` hook kills every group still registered when the interpreter exits normally.
3. A *group guard*: one tiny Python process per process (started with the first group), reading
   a pipe whose write end only this process holds; each group is announced to it when it starts
   and withdrawn when it is stopped. When this process dies for any reason (SIGKILL included),
   the kernel closes the pipe, the guard reads end-of-file and kills every group still announced
   (SIGTERM, the group's grace, SIGKILL). This covers grandchildren too and works on every POSIX
   system. One guard for all groups, not one each: a short command (git, a readiness probe) would
   otherwise pay for starting an interpreter beside it.

Every command gets an allowlisted environment (:func:`loopkit.child_env.child_environment`:
PATH, locale, display, D-Bus/AT-SPI, Qt, Python, ``LOOPKIT_*``, plus a configured passthrough
and the explicit ``env`` values), never the provider key or another secret-looking variable.

On Linux the leader additionally gets ``PR_SET_PDEATHSIG`` (SIGKILL when its parent dies) through a
small ``preexec_fn``. Two caveats, which is why it is only the second line of defence: the signal
fires when the *thread* that forked the child exits, not the process (we always fork from the
event-loop thread, never from a worker thread), and it reaches the leader only, not its children.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from loopkit.abstractions import ToolError
from loopkit.child_env import child_environment
from loopkit.parent_death import parent_death_preexec

# The guard: read "+ PGID GRACE" (watch) and "- PGID" (forget) lines until end-of-file (our death
# or a clean exit), then end every group still watched: SIGTERM, its grace, SIGKILL.
_GUARD_CODE = """
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
groups, buffer = {}, b""
try:
    while chunk := os.read(0, 4096):
        *lines, buffer = (buffer + chunk).split(b"\\n")
        for line in lines:
            verb, pgid, *grace = line.split()
            if verb == b"+":
                groups[int(pgid)] = float(grace[0])
            else:
                groups.pop(int(pgid), None)
except OSError:
    pass
def alive(pgid):  # a member that is not a zombie (init may reap orphans late)
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if name.isdigit():
            try:
                with open("/proc/" + name + "/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False
now, pending = time.monotonic(), {}
for pgid, grace in groups.items():
    try:
        os.killpg(pgid, signal.SIGTERM)
        pending[pgid] = now + grace
    except OSError:
        pass
while pending:
    for pgid, end in list(pending.items()):
        if not alive(pgid):
            del pending[pgid]
        elif time.monotonic() >= end:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
            del pending[pgid]
    time.sleep(0.05)
"""


class _GroupGuard:
    """This process's guard (see the module docstring): started on first use, again in a forked
    child (which must not share its parent's) or when it is gone; told the groups to watch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None
        self._watched: dict[int, float] = {}

    def reset_in_child(self) -> None:
        """After a fork, in the child: none of the parent's groups, no share in its guard (the
        inherited pipe end would keep that guard from seeing the parent die)."""
        self._lock = threading.Lock()
        self._close()
        self._proc, self._watched = None, {}

    def watch(self, pgid: int, grace_s: float) -> None:
        """End group ``pgid`` (SIGTERM, ``grace_s``, SIGKILL) if this process dies first."""
        with self._lock:
            self._watched[pgid] = grace_s
            self._send(f"+ {pgid} {grace_s!r}\n")

    def forget(self, pgid: int) -> None:
        """Group ``pgid`` is gone (or taken care of): stop watching it."""
        with self._lock:
            if self._watched.pop(pgid, None) is not None and self._running():
                self._send(f"- {pgid}\n")  # a guard that is gone is not started for this

    def _running(self) -> bool:
        return self._fd is not None and self._proc is not None and self._proc.poll() is None

    def _send(self, line: str) -> None:
        if self._running():
            assert self._fd is not None
            try:
                os.write(self._fd, line.encode())
                return
            except OSError:  # the guard died (killed from outside): start another
                self._close()
        self._start()  # it is told every watched group, the one of ``line`` included

    def _start(self) -> None:
        self._close()
        read_fd, write_fd = os.pipe()  # both ends close-on-exec; only the guard gets read_fd
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARD_CODE],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=child_environment(),  # our own code, but no reason to hold the key
                start_new_session=True,
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        self._fd = write_fd
        # Tell the new guard what the old one watched (empty unless the old one died).
        lines = "".join(f"+ {p} {g!r}\n" for p, g in self._watched.items())
        if lines:
            os.write(write_fd, lines.encode())

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


_GUARD = _GroupGuard()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_GUARD.reset_in_child)


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """A preexec function that asks Linux to SIGKILL the child when its parent dies (from any
    thread: the tools' threads live as long as the process)."""
    return parent_death_preexec(signal.SIGKILL, main_thread_only=False)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): kill(0) said it exists
    return stat_text.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int] | None:
    """Live (non-zombie) pids in process group ``pgid``; None where /proc is unavailable."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after "pid (comm)": state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    """Whether any live process remains in process group ``pgid``."""
    members = group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


_LIVE: weakref.WeakSet[ProcessGroup] = weakref.WeakSet()


@atexit.register
def _kill_live_groups() -> None:
    """At interpreter exit, end every group still running (the guard would too, a bit later)."""
    groups = list(_LIVE)
    for g in groups:
        g.signal_group(signal.SIGTERM)
    end = time.monotonic() + 1.0
    while time.monotonic() < end and any(group_alive(g.pgid) for g in groups):
        time.sleep(0.05)
    for g in groups:
        g.signal_group(signal.SIGKILL)
        g.close_guard()


class ProcessGroup:
    """A started command, leader of its own process group, watched by a group guard."""

    def __init__(self, proc: asyncio.subprocess.Process, grace_s: float) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.pgid = proc.pid  # start_new_session makes the leader's pid the group id
        self._guarded = True
        _GUARD.watch(self.pgid, grace_s)
        _LIVE.add(self)

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        passthrough: Sequence[str] = (),
        stdout: int | IO[Any] | None = subprocess.DEVNULL,
        grace_s: float = 5.0,
    ) -> ProcessGroup:
        """Start ``argv`` (never through a shell) in its own session and process group.

        Its environment: the allowlist of :func:`~loopkit.child_env.child_environment`, the
        variables named or matched by ``passthrough``, and ``env`` on top.
        """
        full_env = child_environment(passthrough, extra=env)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=os.fspath(cwd),
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_pdeathsig_preexec(),
            )
        except FileNotFoundError:
            raise ToolError(f"cannot start {argv[0]!r}: no such program") from None
        except PermissionError:
            raise ToolError(f"cannot start {argv[0]!r}: permission denied") from None
        try:
            return cls(proc, grace_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise

    @property
    def returncode(self) -> int | None:
        """The leader's exit status once it has ended (negative: killed by that signal)."""
        return self.proc.returncode

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the whole group; a group that is gone is not an error."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def close_guard(self) -> None:
        """The group is ended: the guard stops watching it (its id may be reused)."""
        if self._guarded:
            self._guarded = False
            _GUARD.forget(self.pgid)

    def alive(self) -> bool:
        """Whether the leader or any other member of the group still runs."""
        return self.proc.returncode is None or group_alive(self.pgid)

    async def _wait_gone(self, within_s: float) -> bool:
        end = time.monotonic() + within_s
        while True:
            if self.proc.returncode is not None and not group_alive(self.pgid):
                return True
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(0.02)

    async def stop(self, grace_s: float) -> str:
        """End the whole group: SIGTERM, ``grace_s`` seconds, then SIGKILL; says how it ended."""
        try:
            if not self.alive():
                how = f"had already exited with code {self.proc.returncode}"
            else:
                self.signal_group(signal.SIGTERM)
                if await self._wait_gone(grace_s):
                    how = "stopped"
                else:
                    self.signal_group(signal.SIGKILL)
                    await self._wait_gone(5.0)
                    how = f"did not stop within {grace_s:g} s and was killed"
            return how
        finally:
            self.signal_group(signal.SIGKILL)  # leftovers of an exited leader
            self.close_guard()
            _LIVE.discard(self)


@dataclass
class CommandResult:
    """What a command did: exit code (None if it timed out), output (capped), and whether cut."""

    exit_code: int | None
    output: str
    timed_out: bool
    output_cut: bool


async def run_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    timeout_s: float,
    max_output_bytes: int = 4_000_000,
    passthrough: Sequence[str] = (),
) -> CommandResult:
    """Run ``argv`` as its own group with a timeout; the group is gone when this returns.

    The environment is built as by :meth:`ProcessGroup.start` (allowlist, passthrough, env).
    """
    group = await ProcessGroup.start(
        argv, cwd=cwd, env=env, passthrough=passthrough, stdout=subprocess.PIPE, grace_s=1.0
    )
    chunks: list[bytes] = []
    size = 0
    cut = False

    async def read_all() -> None:
        nonlocal size, cut
        stream = group.proc.stdout
        assert stream is not None
        while chunk := await stream.read(65536):
            if size < max_output_bytes:
                chunks.append(chunk[: max_output_bytes - size])
            else:
                cut = True  # keep draining so the command never blocks on a full pipe
            size += len(chunk)

    reader = asyncio.create_task(read_all())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(group.proc.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
    finally:
        await group.stop(grace_s=1.0)
        try:
            await asyncio.wait_for(reader, 5.0)
        except (TimeoutError, asyncio.CancelledError):
            reader.cancel()  # someone outside the group still holds the pipe
    output = b"".join(chunks).decode("utf-8", errors="replace")
    return CommandResult(None if timed_out else group.returncode, output, timed_out, cut)
