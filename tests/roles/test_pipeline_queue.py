"""The develop → test pipeline on the durable queue: ``python -m loopkit.runs enqueue CARD.md
--then test`` queues the develop run; when it ends done it queues the test run in its
repository (its parent); the card is Done only when the test passes. A real worker (its own
headless desktop, the real app, UI server and tools), the bundled transcripts, SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import ROOT, copy_card
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"), "LOOPKIT_HEADLESS": "always"}
    for name in ("LOOPKIT_IN_HEADLESS_SESSION", "LOOPKIT_DATABASE_URL"):
        env.pop(name, None)
    return env


def runs(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopkit.runs", *args],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_queued_pipeline_tests_the_develop_runs_repository(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    queued = runs(tmp_path, "enqueue", str(card), "--then", "test")
    assert queued.returncode == 0, queued.stderr
    develop_id = queued.stdout.strip()
    worker = subprocess.run(
        [sys.executable, "-m", "loopkit.worker", "--name", "pipeline", "--max-runs", "2"],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert worker.returncode == 0, worker.stdout + worker.stderr
    listed = [json.loads(line) for line in runs(tmp_path, "list", "--json").stdout.splitlines()]
    by_id = {r["run_id"]: r for r in listed}
    develop = by_id[develop_id]
    assert develop["role"] == "develop" and develop["state"] == "done", develop
    test = by_id[develop["next_run"]]
    # The test run follows the develop run, in its repository, and passed: the card is Done.
    assert (test["role"], test["state"], test["parent"]) == ("test", "done", develop_id)
    assert test["repo"] == develop["repo"] and Path(develop["repo"]).is_dir()
    assert Card.load(card).state is CardState.DONE
    log = [json.loads(line) for line in Path(develop["log_path"]).read_text().splitlines()]
    assert log[-1]["data"]["card_state"] == "In Test" and log[-1]["data"]["verified_by_replay"]
    subjects = subprocess.run(
        ["git", "log", "--format=%s"], cwd=develop["repo"], capture_output=True, text=True
    ).stdout.splitlines()
    assert subjects[:2] == [
        "card: Deleting an item should ask first (test)",
        "card: Deleting an item should ask first",
    ]


def test_then_needs_a_known_role_and_round_trips_need_then(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    unknown = runs(tmp_path, "enqueue", str(card), "--then", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr == "error: unknown role 'nope'; the roles are: develop, document, test\n"
    alone = runs(tmp_path, "enqueue", str(card), "--round-trips", "3")
    assert alone.returncode == 2 and "--round-trips goes with --then ROLE" in alone.stderr
    assert not (tmp_path / "runs").exists()
