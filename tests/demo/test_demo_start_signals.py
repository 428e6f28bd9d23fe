"""A stop signal while the demo is still importing ends it with one line and 130, never with a
``KeyboardInterrupt`` traceback.

The demo runs with ``-X importtime``, which writes a line to stderr as each module is imported:
the test sends SIGINT (or SIGTERM) right after the N-th import, for N spread over the whole
start (its own modules, rich, pydantic, DBOS for ``--resume``), so the signal lands inside an
import each time, wherever it is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo.helpers import ROOT

IMPORT_LINE = "import time:"


def start(tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "loopkit.demo", "--resume"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def imports_of_a_whole_start(tmp_path: Path) -> tuple[int, int, int]:
    """(the import after which the demo's own code runs, the import after which its handlers
    go in, the number of imports)."""
    proc = start(tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    imports = [line for line in err.splitlines() if line.startswith(IMPORT_LINE)]
    # The interpreter's own start (encodings, site) comes before any of the demo's code: a
    # signal there ends Python as the signal does (no traceback either).
    first = next(i for i, line in enumerate(imports, 1) if line.endswith("| loopkit.demo"))
    # The handlers need the signal module: a signal right after its import (and before the
    # next statement) still meets Python's defaults, as before any of the demo's code.
    handlers = next((i for i, line in enumerate(imports, 1) if line.endswith("| signal")), first)
    return first, max(first, handlers), len(imports)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_during_the_imports_is_one_line_and_130(
    tmp_path: Path, signum: signal.Signals
) -> None:
    first, handlers, total = imports_of_a_whole_start(tmp_path)
    assert total - first > 100
    span = total - first
    for n in (first + 1, first + 3, first + 10, *(first + span * k // 8 for k in range(1, 8))):
        proc = start(tmp_path)
        assert proc.stderr is not None
        seen: list[str] = []
        for line in proc.stderr:
            seen.append(line)
            if (
                line.startswith(IMPORT_LINE)
                and sum(map(lambda s: s.startswith(IMPORT_LINE), seen)) >= n
            ):
                proc.send_signal(signum)
                break
        _, rest_err = proc.communicate(timeout=120)
        err = "".join(seen) + rest_err
        told = [line for line in err.splitlines() if not line.startswith(IMPORT_LINE)]
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (n, told)
        if proc.returncode == 0:  # the signal came after the work was done
            continue
        # 130, or killed by SIGINT (which the shell shows as 130); killed by the signal itself
        # only when it came before the demo's handlers were in place.
        before_handlers = (-signum,) if n <= handlers else ()
        assert proc.returncode in (130, -signal.SIGINT, *before_handlers), (
            n,
            proc.returncode,
            told,
        )
        assert len(told) <= 1, (n, told)
