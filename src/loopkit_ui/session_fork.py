"""Running a Python callable on a headless desktop in a forked child of this process.

``python -m loopkit_ui.session -- python -m MODULE ...`` starts two more interpreters (the
session's and the command's) and the command imports and checks again what its caller already
had: half a second or more before the command's own work, on top of the desktop's start.
:func:`run_forked_on_desktop` gives the caller the same contract in-process: the desktop starts
here, the work runs in a child forked from this (checked, imported) process with the desktop's
environment, and its status comes back as the session reports it.

What the session guarantees holds here too:

- SIGINT, SIGTERM and SIGHUP during the desktop's start end with 130 after it is torn down;
  from the child's start on they are passed on to it (it is in this process's group, so a
  terminal's Ctrl-C reaches it twice: its handler must be idempotent);
- the child gets SIGTERM when this process dies, even by SIGKILL (``PR_SET_PDEATHSIG``), and the
  desktop's guard ends the desktop then;
- this process adopts what the child orphans (subreaper) and ends it at teardown, with the
  desktop, after the child has exited.

The child must be forked from a process with one thread (a fork copies only the calling
thread); :func:`can_fork` says whether that holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping

from loopkit_ui.desktop_command import CommandSignals, become_subreaper, end_orphans, wait_reaping
from loopkit_ui.headless_desktop import DesktopError, HeadlessDesktop

__all__ = ["can_fork", "run_forked_on_desktop"]

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
#: Status of a child whose work raised (a traceback is printed), as a crashed command's.
_CRASHED = 1


def can_fork() -> bool:
    """Whether :func:`run_forked_on_desktop` can run here: Linux, from the main thread of a
    process that has no other thread."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and threading.current_thread() is threading.main_thread()
        and threading.active_count() == 1
    )


class _ForkedChild:
    """The forked child, with the part of :class:`subprocess.Popen`'s interface the session's
    signal forwarding and reaping use (``pid``, ``send_signal``, ``wait``, ``poll``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._pidfd = os.pidfd_open(pid)

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signum)

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone, its status unknown
                self.returncode = _CRASHED
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
            if self.returncode is not None and self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0)
            if self._pidfd is not None:
                # Readable when the child exits: no polling delay at the end of the run.
                select.select([self._pidfd], [], [], left)
            else:
                time.sleep(min(0.01, left) if left is not None else 0.01)
        assert self.returncode is not None
        return self.returncode


def _run_child(
    work: Callable[[], int], env: Mapping[str, str], parent: int, name: str | None
) -> int:
    """In the forked child: die with the parent, take the desktop's environment and ``name``,
    run ``work``."""
    with contextlib.suppress(OSError, AttributeError):
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if name:  # /proc/PID/comm: what ps and top show, and how to tell it from its parent
            prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        return _CRASHED
    for signum in CommandSignals.SIGNALS:  # the work installs its own
        signal.signal(signum, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(env)
    return work()


def _fork(work: Callable[[], int], env: Mapping[str, str], name: str | None) -> _ForkedChild:
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
        with contextlib.suppress(Exception):
            stream.flush()
    # Stop signals are held across the fork: the child sets its own handlers before taking
    # them, the parent forwards the ones that land meanwhile as soon as the child is attached.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, set(CommandSignals.SIGNALS))
    try:
        pid = os.fork()
        if pid == 0:  # the child never returns from here
            status = _CRASHED
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                status = _run_child(work, env, parent, name)
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else _CRASHED
            except KeyboardInterrupt:
                status = 130
            except BaseException:
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(status)
        return _ForkedChild(pid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _in_background(prepare: Callable[[], object] | None) -> threading.Thread | None:
    """``prepare()`` in a thread, its errors ignored (the work meets them again itself)."""
    if prepare is None:
        return None

    def run() -> None:
        with contextlib.suppress(Exception):
            prepare()

    thread = threading.Thread(target=run, name="prepare the forked work", daemon=True)
    thread.start()
    return thread


def run_forked_on_desktop(
    work: Callable[[], int],
    *,
    env: Mapping[str, str] | None = None,
    screen: str = "1280x1024x24",
    name: str | None = None,
    prepare: Callable[[], object] | None = None,
    after_fork: Callable[[], object] | None = None,
) -> int:
    """Start a headless desktop, run ``work()`` in a forked child on it (``os.environ`` there is
    this process's plus the desktop's plus ``env``) and return its status as
    ``python -m loopkit_ui.session`` does: the child's exit status, 128+N when a signal N killed
    it, 130 when interrupted before it started, 1 when the desktop could not start (one line on
    stderr). The desktop is torn down after the child exits. ``name``: the child's process name
    (``/proc/PID/comm``, 15 bytes at most). Needs :func:`can_fork`.

    ``prepare()`` runs in a thread while the desktop starts (which mostly waits for its
    daemons) and ends before the fork (one thread again), so what it does (an import the work
    needs) is the child's at no cost while it takes less time than the desktop; its errors are
    ignored (the work meets them itself). ``after_fork()`` runs in this process right after the
    fork (to close what now belongs to the child, say); its errors are ignored too."""
    if not can_fork():
        raise RuntimeError("run_forked_on_desktop needs Linux and a process with one thread")
    previous = {signum: signal.getsignal(signum) for signum in CommandSignals.SIGNALS}
    signals = CommandSignals()  # a signal during the desktop's start tears it down: 130
    become_subreaper()
    desktop = HeadlessDesktop(screen=screen)
    try:
        try:
            preparing = _in_background(prepare)
            desktop.start()
            if preparing is not None:
                preparing.join()  # one thread again: a fork copies only this one
            if signals.received is not None:  # its KeyboardInterrupt was swallowed somewhere
                raise KeyboardInterrupt
            signals.spawning = True
            child = _fork(work, desktop.child_env(env), name)
            if after_fork is not None:
                with contextlib.suppress(Exception):
                    after_fork()
            signals.attach(child)  # type: ignore[arg-type]  # duck-typed Popen
            status = wait_reaping(child, desktop)  # type: ignore[arg-type]
        except DesktopError as e:
            print(f"error: the headless desktop did not start: {e}", file=sys.stderr)
            return 1
        finally:
            signals.tearing_down = True
            end_orphans(desktop)
            desktop.stop()
    except KeyboardInterrupt:  # before the child started; the desktop is torn down
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return status if status >= 0 else 128 - status
