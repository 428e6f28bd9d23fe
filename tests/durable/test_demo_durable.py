"""``python -m loopkit.demo --durable`` killed with SIGKILL mid-run, then ``--resume``.

Real processes throughout: the demo re-runs itself inside ``python -m loopkit_ui.session`` (Xvfb,
D-Bus, AT-SPI) with the UI server, the app and the tools; the test SIGKILLs the run's own process
(inside the desktop) while a tool call runs, lists the interrupted run and resumes it in a new
demo process. The scripted model is strict: every tool result the resumed run sends must match the
transcript, so a conversation rebuilt wrongly from the checkpoints fails the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import (
    ROOT,
    cmdline,
    copy_card,
    demo_env,
    descendants,
    start_demo,
    wait_for_round,
)

pytest.importorskip("dbos")
pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"


def slow_build_config(tmp_path: Path) -> Path:
    """The first build takes 30 s (the kill lands inside that build_app call), later ones none."""
    config = tmp_path / "slow-build.toml"
    marker = tmp_path / "built-once"
    code = (
        f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
        "p.touch(); time.sleep(30 if first else 0)"
    )
    argv = [sys.executable, "-c", code]
    config.write_text(f"[tools]\nbuild_command = {json.dumps(argv)}\n", encoding="utf-8")
    return config


def parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopkit.demo", *args],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_durable_demo_run_killed_inside_a_tool_call_is_resumed_to_done(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    slow = slow_build_config(tmp_path)
    outer = start_demo(tmp_path, card, "--durable", "--config", str(slow))
    wait_for_round(outer, runs, "build_app")
    # The run's own process: the demo inside the desktop (a fork about to exec shows the same
    # command line for a moment, so look at the ones that keep it).
    inner = [
        p
        for p in descendants(outer.pid)
        if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
        and "loopkit_ui.session" in cmdline(parent(p))
    ]
    assert len(inner) == 1, [(p, cmdline(p)) for p in descendants(outer.pid)]
    deadline = time.monotonic() + 60
    while not (tmp_path / "built-once").exists():  # the build command itself is running
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.02)
    os.kill(inner[0], signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert outer.returncode == 130, output
    assert "resume it with" in output
    assert Card.load(card).state == CardState.IN_WORK
    assert not descendants(outer.pid)

    listed = demo(tmp_path, "--resume")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "interrupted" in listed.stdout and "Deleting an item" in listed.stdout

    # The resumed run uses the settings recorded with it (the same build command, quick now).
    resumed = demo(tmp_path, "--resume", "all")
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, text
    assert "RESULT: done" in text
    assert Card.load(card).state == CardState.DONE

    log = next(runs.glob("*/run.jsonl"))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    types = Counter(e["type"] for e in events)
    assert (types["start"], types["interrupted"], types["resumed"], types["result"]) == (1, 1, 1, 1)
    rounds = [e["data"]["round"] for e in events if e["type"] == "round"]
    assert rounds == list(range(1, 25))  # every round once, in order, across both processes
    builds = [e for e in events if e["type"] == "tool" and e["data"]["name"] == "build_app"]
    assert len(builds) == 1  # the build in flight ran again: logged once, by the resumed run
    resumed_line = next(e for e in events if e["type"] == "resumed")
    # Rounds 1-10 (the 10th asked for the build) were replayed, not asked again.
    assert resumed_line["data"]["replayed"]["model"] == 10
    assert events.index(resumed_line) < events.index(builds[0])
    assert events[-1]["type"] == "result" and events[-1]["data"]["status"] == "done"

    again = demo(tmp_path, "--resume")
    assert "No interrupted runs" in again.stdout
