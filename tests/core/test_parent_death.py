"""``parent_death_preexec``: a child started with it dies when its parent is killed (even by
SIGKILL); from another thread than the main one it is not given unless asked for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from loopkit.parent_death import parent_death_preexec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

_PARENT = """
import signal, subprocess, sys
from loopkit.parent_death import parent_death_preexec
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         preexec_fn=parent_death_preexec(signal.SIGTERM))
print(child.pid, flush=True)
sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_child_dies_with_a_killed_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30  # a generous bound, not a timing claim
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive


def test_not_given_from_another_thread_unless_asked() -> None:
    got: list[object] = []
    worker = threading.Thread(
        target=lambda: got.extend(
            [parent_death_preexec(), parent_death_preexec(main_thread_only=False)]
        )
    )
    worker.start()
    worker.join()
    assert got[0] is None and callable(got[1])
    assert callable(parent_death_preexec())
