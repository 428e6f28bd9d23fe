"""SIGKILL a durable agent loop inside a model request or a tool call; a new process resumes it.

Real processes and a real SQLite database: ``loop_child.py`` runs a 6-round loop as a durable
workflow and hangs at the chosen request or call; the test kills it with SIGKILL there, starts a
second process that takes the run over, and counts what the model and the tool really executed.
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

from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

CHILD = Path(__file__).with_name("loop_child.py")
ROUNDS = 6


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the child ended early: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the child never reached {path.name}")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.parametrize("hang", ["model:1", "model:4", "tool:1", "tool:5", "model:7"])
def test_a_run_killed_inside_a_step_resumes_without_repeating_completed_steps(
    tmp_path: Path, hang: str
) -> None:
    db = str(tmp_path / "runs.sqlite")
    first = child("start", db, "run-1", str(tmp_path), str(ROUNDS), "--hang", hang)
    wait_for(tmp_path / "hanging", first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL

    second = child("resume", db, "run-1", str(tmp_path))
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {
        "output": "all rounds worked\nRESULT: done",
        "rounds": ROUNDS + 1,
    }

    kind, number = hang.split(":")
    requests = [json.loads(line) for line in lines(tmp_path / "model.log")]
    made = Counter(r["request"] for r in requests)
    called = Counter(int(n) for n in lines(tmp_path / "tool.log"))
    # Every completed request and call ran once; only the one in flight at the kill ran twice.
    assert made == {n: 2 if (kind, n) == ("model", int(number)) else 1 for n in range(1, 8)}
    assert called == {n: 2 if (kind, n) == ("tool", int(number)) else 1 for n in range(1, 7)}
    # The model is told once, at the first request made after the resume, and from then on.
    resumed_at = int(number) if kind == "model" else int(number) + 1
    after = 8 - resumed_at  # requests the resumed process made
    assert [r["request"] for r in requests[-after:]] == list(range(resumed_at, 8))
    assert [r["notices"] for r in requests[-after:]] == [1] * after
    assert [r["notices"] for r in requests[:-after]] == [0] * (len(requests) - after)

    # The run log: each round and tool call once, the interruption and the resume recorded.
    events = [json.loads(line) for line in lines(tmp_path / "run.jsonl")]
    types = Counter(e["type"] for e in events)
    assert types["interrupted"] == 1 and types["resumed"] == 1
    assert sorted(e["data"]["round"] for e in events if e["type"] == "round") == list(range(1, 8))
    assert types["tool"] == ROUNDS
    resumed = next(e for e in events if e["type"] == "resumed")
    replayed = resumed["data"]["replayed"]
    assert replayed.get("model", 0) == resumed_at - 1
