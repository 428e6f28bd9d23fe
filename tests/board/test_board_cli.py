"""``python -m loopkit_board`` at start and stop: every setting checked before the port is bound
(one line, exit status 2, nothing listening, nothing created), and SIGINT, SIGTERM or SIGHUP
ending it with 130, as its docstring and docs/security.md say."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.board.helpers import ROOT, board_env, start_board, write_accounts
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = pytest.mark.integration


def _board(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopkit_board", "--cards", str(tmp_path / "cards"),
         "--accounts", str(tmp_path / "accounts.toml"), "--port", "0", *args],
        cwd=ROOT, env=board_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_bad_folders_and_databases_are_refused_before_anything_listens(tmp_path: Path) -> None:
    write_accounts(tmp_path)
    (tmp_path / "cards").mkdir()
    (tmp_path / "a-file").write_text("not a folder\n")
    cases = {
        "--data-dir that is a file": (["--data-dir", str(tmp_path / "a-file")], "not a folder"),
        "--data-dir two levels down": (
            ["--data-dir", str(tmp_path / "no" / "such")],
            "does not exist",
        ),
        "a database in a missing folder": (
            ["--database", f"sqlite:///{tmp_path}/new/dir/x.db"],
            "does not exist",
        ),
        "a database that is a folder": (
            ["--database", f"sqlite:///{tmp_path}/cards"],
            "not a file",
        ),
    }
    if not os.access("/proc/1", os.W_OK):  # a folder even root cannot write in
        cases["--data-dir not writable"] = (["--data-dir", "/proc/1"], "cannot write")
    for name, (args, expected) in cases.items():
        done = _board(tmp_path, *args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], name
        assert "board on" not in done.stdout, name  # it never listened
        assert "Traceback" not in done.stderr, name
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == ["a-file", "accounts.toml", "cards"], made  # no runs, no new/, no no/


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_the_board_with_130(tmp_path: Path, stop: signal.Signals) -> None:
    board = start_board(tmp_path)
    board.process.send_signal(stop)
    try:
        status = board.process.wait(30)
    finally:
        board.stop()
    rest = board.process.stdout.read() if board.process.stdout else ""
    assert status == 130, (status, rest)
    assert "Traceback" not in rest
