"""Running a loopkit command inside a headless desktop of its own (Linux).

The desktop (Xvfb + a private D-Bus + AT-SPI) is ``loopkit_ui``'s. The worker
(``python -m loopkit.worker``) re-runs itself inside it as a command (``python -m
loopkit_ui.session -- python -m MODULE ...``); the demo's run, which has checked its settings
and imported what it needs by then, goes on in a child forked on the desktop
(:func:`run_forked_in_headless_desktop`), which spares it a second interpreter that would import
and check all of it again (half a second or more of the user's command).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType

__all__ = [
    "STOP_SIGNALS",
    "needs_headless_desktop",
    "run_forked_in_headless_desktop",
    "run_in_headless_desktop",
]

#: The signals that stop a run cleanly (passed on to the command inside the desktop).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
#: The process name (``/proc/PID/comm``) of a run forked on the desktop.
RUN_PROCESS_NAME = "loopkit-run"
#: Set in the environment of the command inside the desktop (so it does not start another).
IN_SESSION_VARIABLE = "LOOPKIT_IN_HEADLESS_SESSION"


def needs_headless_desktop(mode: str) -> bool:
    """Whether a command started with the ``headless`` setting ``mode`` (``always``, ``auto``,
    ``never``) must re-run itself inside a headless desktop."""
    if os.environ.get(IN_SESSION_VARIABLE):
        return False
    if mode == "always":
        return True
    return mode == "auto" and not os.environ.get("DISPLAY") and sys.platform.startswith("linux")


def _prctl() -> Callable[..., int] | None:
    """libc's prctl where PR_SET_PDEATHSIG can be used: Linux, from the main thread (the signal
    follows the *thread* that forked the child)."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _start_dying_with_us(
    command: list[str],
    env: dict[str, str],
    prctl: Callable[..., int],
    mask: set[int | signal.Signals],
) -> subprocess.Popen[bytes]:
    """Start ``command``; it gets SIGTERM when this process dies, even by SIGKILL, and the
    signal ``mask`` back before it execs."""
    parent = os.getpid()

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # we died before prctl took effect
            os._exit(1)

    return subprocess.Popen(command, env=env, preexec_fn=preexec)


def run_in_headless_desktop(module: str, argv: list[str]) -> int:
    """Run ``python -m module *argv`` inside a new headless desktop and return its status (as
    the session reports it: a signal is negative or 128+N). A stop signal this process gets is
    passed on, and the command ends its work before the desktop goes."""
    env = {**os.environ, IN_SESSION_VARIABLE: "1"}
    command = [sys.executable, "-m", "loopkit_ui.session", "--",
               sys.executable, "-m", module, *argv]  # fmt: skip
    proc: subprocess.Popen[bytes] | None = None

    # Pass an interrupt on and wait: the run inside marks its card and ends its log before the
    # desktop goes (subprocess.call would kill it at once).
    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc is None:  # not started yet: stop here, as before
            raise KeyboardInterrupt
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, forward)
    prctl = _prctl()
    if prctl is None:
        proc = subprocess.Popen(command, env=env)
    else:
        # Held while the child is forked (a handler run inside the fork's hooks would lose its
        # exception) and until ``proc`` is set, then passed on by ``forward``.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        try:
            proc = _start_dying_with_us(command, env, prctl, mask)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return proc.wait()


def run_forked_in_headless_desktop(
    module: str,
    argv: list[str],
    work: Callable[[], int],
    prepare: Callable[[], object] | None = None,
    *,
    after_fork: Callable[[], object] | None = None,
) -> int:
    """Run ``work()`` in a child forked on a new headless desktop and return its status as
    :func:`run_in_headless_desktop` does (a signal is 128+N). The child dies with this process
    (SIGTERM, even when this one is killed with SIGKILL); a stop signal is passed on to it. Where
    a fork cannot be used (not Linux, another thread running) ``python -m module *argv`` is
    re-run inside the desktop instead. ``prepare()`` runs while the desktop starts (see
    :func:`loopkit_ui.session_fork.run_forked_on_desktop`); ``after_fork()`` runs here right
    after the fork."""
    from loopkit_ui.session_fork import can_fork, run_forked_on_desktop

    if not can_fork():
        return run_in_headless_desktop(module, argv)
    return run_forked_on_desktop(
        work,
        env={IN_SESSION_VARIABLE: "1"},
        name=RUN_PROCESS_NAME,
        prepare=prepare,
        after_fork=after_fork,
    )
