"""Child processes that die with their parent: Linux's ``PR_SET_PDEATHSIG`` as a ``preexec_fn``.

The kernel sends the signal when the *thread* that forked the child exits, not the process: a
child started from a short-lived thread would be killed when that thread ends. So by default the
hook is given only on the main thread; a caller whose threads live as long as the process may
ask for it anywhere.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

__all__ = ["parent_death_preexec"]

_PR_SET_PDEATHSIG = 1


def parent_death_preexec(
    sig: int = signal.SIGTERM, *, main_thread_only: bool = True
) -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that has Linux send ``sig`` to the child
    when this process (its forking thread) dies, and ends the child at once when the parent is
    already gone. None where it cannot be had: not Linux, no libc, or (``main_thread_only``)
    called from another thread than the main one."""
    if not sys.platform.startswith("linux"):
        return None
    if main_thread_only and threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec
