"""kill -9 and signals end a demo run and everything it started; nothing goes on to commit.

Real processes throughout: the demo re-runs itself inside ``python -m loopkit_ui.session`` (Xvfb,
D-Bus, AT-SPI), which runs the UI server, the app and the tools' process guards.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit.demo.__main__ import exit_status
from loopkit_ui.headless_desktop import HeadlessDesktop

from .helpers import (
    carrying,
    cmdline,
    copy_card,
    descendants,
    start_demo,
    survivors,
    wait_for_round,
)

pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"
BUILD_SECONDS = 4


def slow_build_config(tmp_path: Path) -> Path:
    """A config whose build takes BUILD_SECONDS: the kill lands while the run is building, well
    before the transcript's git_commit (the build is round 11 of its 26)."""
    config = tmp_path / "slow-build.toml"
    argv = [sys.executable, "-c", f"import time; time.sleep({BUILD_SECONDS})"]
    config.write_text(f"[tools]\nbuild_command = {json.dumps(argv)}\n", encoding="utf-8")
    return config


def repo_commits(runs_dir: Path) -> int:
    import subprocess

    repo = next(runs_dir.glob("*/repo"))
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
    )
    return int(out.stdout)


def log_events(runs_dir: Path) -> list[dict]:
    log = next(runs_dir.glob("*/run.jsonl"))
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_kill_9_of_the_demo_ends_the_run_before_it_commits(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    demo = start_demo(tmp_path, card, "--config", str(slow_build_config(tmp_path)))
    seen = wait_for_round(demo, runs, "build_app")
    building_since = time.monotonic()
    assert any("loopkit_ui.server" in cmdline(p) for p in seen)  # the run was in full swing
    demo.kill()
    demo.communicate(timeout=120)
    assert demo.returncode == -signal.SIGKILL
    # The whole tree goes: the session, its desktop, the run inside, the UI server, the build.
    assert survivors(seen | carrying(str(runs))) == []
    # Wait past the moment the build would have ended and the run committed: nothing happens.
    time.sleep(max(0.0, building_since + BUILD_SECONDS + 5 - time.monotonic()))
    assert repo_commits(runs) == 1  # only the initial copy of the app
    events = log_events(runs)
    assert not [e for e in events if e["type"] == "tool" and e["data"]["name"] == "git_commit"]
    # The run inside was told (SIGTERM), so it ended as an interrupted run does.
    assert events[-1]["type"] == "result"
    assert events[-1]["data"]["reason"] == "the run was interrupted"
    assert Card.load(card).state is CardState.FAILED
    assert survivors(carrying(str(runs)), within=1) == []


def test_kill_9_of_the_run_inside_the_desktop_leaves_nothing(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    demo = start_demo(tmp_path, card)
    seen = wait_for_round(demo, runs, "ui_list_windows")  # the app runs, the UI server is on it
    inner = [p for p in seen if cmdline(p).split()[1:3] == ["-m", "loopkit.demo"]]
    assert len(inner) == 1, [cmdline(p) for p in seen]
    assert any(" -m invoice_app" in cmdline(p) for p in seen)
    os.kill(inner[0], signal.SIGKILL)
    output, _ = demo.communicate(timeout=120)
    assert demo.returncode == 1, output  # failed: the run did not finish
    assert "error: the run ended abnormally (killed by SIGKILL); the card is marked Failed" in (
        output
    )
    assert "Traceback" not in output
    assert survivors(seen | carrying(str(runs))) == []
    assert Card.load(card).state is CardState.FAILED
    assert repo_commits(runs) == 1


def test_kill_9_of_a_demo_on_a_display_leaves_nothing(
    tmp_path: Path, headless_desktop: HeadlessDesktop
) -> None:
    """With a display the demo runs directly: its app and UI server must still go with it."""
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    env = {**headless_desktop.env, "LOOPKIT_HEADLESS": "never"}
    demo = start_demo(tmp_path, card, env=env)
    seen = wait_for_round(demo, runs, "ui_list_windows")
    assert any(" -m invoice_app" in cmdline(p) for p in seen)
    assert any("loopkit_ui.server" in cmdline(p) for p in seen)
    demo.kill()
    demo.communicate(timeout=120)
    assert survivors(seen | carrying(str(runs))) == []
    # Nothing is left to write the state: the card stays In Work (documented), never Done.
    assert Card.load(card).state is CardState.IN_WORK
    assert repo_commits(runs) == 1


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c(tmp_path: Path, signum: int) -> None:
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    demo = start_demo(tmp_path, card)
    seen = wait_for_round(demo, runs, "ui_list_windows")
    demo.send_signal(signum)
    output, _ = demo.communicate(timeout=120)
    assert demo.returncode == 130, output
    assert "Traceback" not in output
    assert "RESULT: failed: the run was interrupted" in " ".join(output.split())
    assert log_events(runs)[-1]["data"]["reason"] == "the run was interrupted"
    assert Card.load(card).state is CardState.FAILED
    assert survivors(seen | descendants(demo.pid)) == []


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (0, 0),
        (1, 1),
        (2, 2),
        (130, 130),
        (-signal.SIGKILL, 1),  # the session itself killed: failed
        (-signal.SIGTERM, 130),
        (-signal.SIGHUP, 130),
        (128 + signal.SIGKILL, 1),  # the run inside killed, as the session reports it
        (128 + signal.SIGSEGV, 1),
        (128 + signal.SIGTERM, 130),
        (128 + signal.SIGHUP, 130),
        (7, 1),
        (247, 1),
    ],
)
def test_exit_status_is_only_0_1_2_or_130(status: int, code: int) -> None:
    assert exit_status(status) == code


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_desktop_starts_ends_quietly_with_130(
    tmp_path: Path, signum: int
) -> None:
    """The signal reaches the demo while its session is starting Xvfb (a wrapper on PATH makes
    that moment last): 130, no traceback, nothing left, the card untouched."""
    import shutil

    bin_dir = tmp_path / "slow-bin"
    bin_dir.mkdir()
    real = shutil.which("Xvfb")
    assert real is not None
    (bin_dir / "Xvfb").write_text(f'#!/bin/sh\nsleep 0.5\nexec {real} "$@"\n')
    (bin_dir / "Xvfb").chmod(0o755)
    card = copy_card(tmp_path, CARD)
    before = card.read_bytes()
    demo = start_demo(tmp_path, card, env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    seen: set[int] = set()
    deadline = time.monotonic() + 300  # a deadline for a loaded machine, not a timing claim
    while time.monotonic() < deadline and demo.poll() is None:
        seen |= descendants(demo.pid)
        if any("slow-bin/Xvfb" in cmdline(p) for p in seen):
            break
        time.sleep(0.005)
    demo.send_signal(signum)
    output, _ = demo.communicate(timeout=120)
    assert demo.returncode == 130, output
    assert "Traceback" not in output
    assert survivors(seen | carrying(str(bin_dir))) == []
    assert card.read_bytes() == before
    assert not (tmp_path / "runs").exists()
