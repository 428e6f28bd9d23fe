"""``python -m loopkit.worker`` takes queued card runs; a worker killed mid-run is replaced.

Real processes: each worker re-runs itself inside its own headless desktop (Xvfb, D-Bus, AT-SPI)
and runs the card with the real UI server, app and tools; the scripted model is strict, so a
conversation rebuilt wrongly from the checkpoints fails the run. SQLite, one host.
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
from tests.demo.helpers import ROOT, cmdline, copy_card, descendants
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui, pytest.mark.slow]

CARD = "delete-asks-for-confirmation"


def card_rounds() -> list[int]:
    """The round numbers of a whole run of the card: one a turn of its bundled transcript."""
    from loopkit import Script
    from loopkit.demo.run import bundled_transcripts

    return list(range(1, len(Script.load(bundled_transcripts()[CARD]).turns) + 1))


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": "always",
        "COLUMNS": "200",
    }
    for name in ("LOOPKIT_IN_HEADLESS_SESSION", "LOOPKIT_DATABASE_URL"):
        env.pop(name, None)
    return env


def runs(tmp_path: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", *args],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def worker(tmp_path: Path, name: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loopkit.worker", "--name", name, *args],
        cwd=ROOT,
        env=env_for(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def slow_first_build(tmp_path: Path) -> Path:
    """A config whose first build takes 60 s (the kill lands inside it), later ones none."""
    config = tmp_path / "slow-build.toml"
    marker = tmp_path / "built-once"
    code = (
        f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
        "p.touch(); time.sleep(60 if first else 0)"
    )
    argv = [sys.executable, "-c", code]
    config.write_text(f"[tools]\nbuild_command = {json.dumps(argv)}\n", encoding="utf-8")
    return config


def inner_worker(outer: subprocess.Popen[str]) -> int:
    """The worker process inside its desktop (the one running the runs)."""
    found = [
        p
        for p in descendants(outer.pid)
        if cmdline(p).startswith(f"{sys.executable} -m loopkit.worker ")
    ]
    assert len(found) == 1, [cmdline(p) for p in descendants(outer.pid)]
    return found[0]


def test_a_worker_killed_mid_run_is_replaced_and_the_run_ends_once(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    run_id = runs(
        tmp_path, "--config", str(slow_first_build(tmp_path)), "enqueue", str(card)
    ).strip()
    first = worker(tmp_path, "first")
    deadline = time.monotonic() + 300  # a deadline for a loaded machine, not a timing claim
    while not (tmp_path / "built-once").exists():  # the first build is running
        assert first.poll() is None, first.communicate()[0]
        assert time.monotonic() < deadline, "the first worker never reached the build"
        time.sleep(0.05)
    record = json.loads(runs(tmp_path, "show", run_id, "--json"))
    assert record["state"] == "running" and record["worker"].startswith("first:")
    assert Card.load(card).state == CardState.IN_WORK
    os.kill(inner_worker(first), signal.SIGKILL)
    first_out, _ = first.communicate(timeout=60)
    assert first.returncode != 0
    assert f"run {run_id}: started" in first_out

    record = json.loads(runs(tmp_path, "show", run_id, "--json"))
    assert record["state"] == "interrupted", record

    second = worker(tmp_path, "second", "--max-runs", "1")
    second_out, _ = second.communicate(timeout=240)
    assert second.returncode == 0, second_out
    assert f"run {run_id}: its worker is gone; back on the queue" in second_out
    assert f"run {run_id}: done" in second_out

    record = json.loads(runs(tmp_path, "show", run_id, "--json"))
    assert record["state"] == "done" and record["worker"].startswith("second:")
    assert record["rounds"] == len(card_rounds()) and record["commit"]
    assert Card.load(card).state == CardState.DONE
    events = [json.loads(line) for line in Path(record["log_path"]).read_text().splitlines()]
    types = Counter(e["type"] for e in events)
    assert (types["start"], types["interrupted"], types["resumed"], types["result"]) == (1, 1, 1, 1)
    assert [e["data"]["round"] for e in events if e["type"] == "round"] == card_rounds()
    repo = Path(record["log_path"]).parent / "repo"
    count = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
    )
    assert count.stdout.strip() == "2"  # the app's copy and the card's one commit


def wait_for_build(tmp_path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300  # for a loaded machine, not a timing claim
    while not (tmp_path / "built-once").exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "the worker never reached the build"
        time.sleep(0.05)


def test_cancel_stops_a_running_run_at_once_and_marks_its_card_failed(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    run_id = runs(
        tmp_path, "--config", str(slow_first_build(tmp_path)), "enqueue", str(card)
    ).strip()
    w = worker(tmp_path, "w")
    wait_for_build(tmp_path, w)
    build = [p for p in descendants(w.pid) if "built-once" in cmdline(p)]
    assert build  # the 60-second build is running
    assert runs(tmp_path, "cancel", run_id) == f"cancelled run {run_id} (running before)\n"
    record = json.loads(runs(tmp_path, "show", run_id, "--json"))
    assert record["state"] == "cancelled"
    deadline = time.monotonic() + 30  # the worker notices within a poll, not after the build
    while any(p in descendants(w.pid) for p in build) or Card.load(card).state != CardState.FAILED:
        assert time.monotonic() < deadline, "the build still runs after the cancel"
        time.sleep(0.1)
    # The run wrote its cancel whole: the card Failed, `cancelled` then `result`.
    assert Card.load(card).state == CardState.FAILED
    events = [json.loads(line) for line in Path(record["log_path"]).read_text().splitlines()]
    assert [e["type"] for e in events][-2:] == ["cancelled", "result"]
    assert events[-1]["data"]["status"] == "cancelled"
    w.send_signal(signal.SIGTERM)
    out, _ = w.communicate(timeout=60)
    assert w.returncode == 130, out
    assert f"run {run_id}: cancelled" in out


def test_a_stopped_worker_interrupts_its_run_and_the_next_worker_finishes_it(
    tmp_path: Path,
) -> None:
    card = copy_card(tmp_path, CARD)
    run_id = runs(
        tmp_path, "--config", str(slow_first_build(tmp_path)), "enqueue", str(card)
    ).strip()
    first = worker(tmp_path, "first")
    wait_for_build(tmp_path, first)
    first.send_signal(signal.SIGTERM)
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 130, out
    assert "the run in progress stays pending for the next worker" in out
    assert Card.load(card).state == CardState.IN_WORK

    second = worker(tmp_path, "second", "--max-runs", "1")
    out, _ = second.communicate(timeout=240)
    assert second.returncode == 0, out
    assert f"run {run_id}: done" in out
    record = json.loads(runs(tmp_path, "show", run_id, "--json"))
    events = [json.loads(line) for line in Path(record["log_path"]).read_text().splitlines()]
    types = Counter(e["type"] for e in events)
    # The stopped worker wrote `interrupted` itself; the resume does not write it again.
    assert (types["interrupted"], types["resumed"], types["result"]) == (1, 1, 1)
    assert [e["data"]["round"] for e in events if e["type"] == "round"] == card_rounds()
    assert Card.load(card).state == CardState.DONE


def test_max_runs_takes_no_further_run_from_the_queue(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ids = [runs(tmp_path, "enqueue", str(copy_card(tmp_path / d, CARD))).strip() for d in "ab"]
    w = worker(tmp_path, "w", "--max-runs", "1")
    out, _ = w.communicate(timeout=240)
    assert w.returncode == 0, out
    # The second run was waiting all along; as the first one started, this worker stopped taking
    # queued runs, so it is still on the queue for the next worker (not taken, nor run here).
    assert out.count(": started") == 1, out
    states = {i: json.loads(runs(tmp_path, "show", i, "--json"))["state"] for i in ids}
    assert sorted(states.values()) == ["done", "queued"], states
