"""A desktop never signals a process that merely reused the pid of one of its own.

Pids wrap around at 32768 here; with several test suites on one machine a number comes back
within minutes. A desktop that kept the pids of the processes it started (long gone) and read
their start time only at ``stop()`` took whatever ran under those numbers then for its own and
sent it SIGTERM: a test of another worker saw its subprocess end with -15.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import desktop_available
from tests.installed import unavailable

pytestmark = [pytest.mark.ui, pytest.mark.integration]

_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _start_with_pid(pid: int, argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` as process ``pid`` (the kernel hands out ns_last_pid + 1 next; another
    process may fork in between on a busy machine, so try again)."""
    for _ in range(500):
        try:
            _LAST_PID.write_text(str(pid - 1))
        except OSError as error:
            pytest.skip(f"cannot choose the next pid here ({_LAST_PID}: {error}); needs root")
        proc = subprocess.Popen(list(argv))
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    raise AssertionError(f"pid {pid} was taken by other processes 500 times in a row")


def test_a_process_that_reused_a_pid_of_the_desktop_is_not_its_own() -> None:
    reason = desktop_available()
    if reason:
        unavailable(reason)
    desktop = HeadlessDesktop().start()
    stranger: subprocess.Popen[bytes] | None = None
    try:
        gone = desktop.spawn(["true"])
        gone.wait()  # reaped: its number is free for anyone
        # Start times count clock ticks (10 ms): the stranger must start in a later one, as a
        # real reuse minutes later does.
        time.sleep(0.1)
        stranger = _start_with_pid(gone.pid, [sys.executable, "-c", "import time; time.sleep(120)"])
        assert stranger.pid not in desktop.pids()
        desktop.stop()
        assert stranger.poll() is None, f"the desktop's stop() ended pid {stranger.pid}"
    finally:
        desktop.stop()
        if stranger is not None:
            stranger.kill()
            stranger.wait()
