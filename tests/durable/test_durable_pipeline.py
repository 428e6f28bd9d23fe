"""``python -m loopkit.demo CARD.md --then test --durable`` killed inside its develop run, then
``--resume``: the resumed develop run queues the test run on the resuming process's own queue,
which runs it there; the card ends Done. Real processes throughout (the demo in its own headless
desktop, the app, the UI server, the tools), the scripted model (strict), SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import ROOT, copy_card, demo_env, start_demo
from tests.durable.test_demo_durable import demo, slow_build_config
from tests.durable.test_durable_test_rows import agent_rows, the_runs_process, wait_for_the_build
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"


def test_a_durable_pipeline_killed_in_its_develop_run_goes_on_when_resumed(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    outer = start_demo(
        tmp_path, card, "--then", "test", "--durable",
        "--config", str(slow_build_config(tmp_path)),
    )  # fmt: skip
    wait_for_the_build(outer, tmp_path)
    os.kill(the_runs_process(outer), signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert outer.returncode == 130, output
    assert Card.load(card).state is CardState.IN_WORK

    resumed = demo(tmp_path, "--resume", "all")
    text = " ".join((resumed.stdout + resumed.stderr).split())
    assert resumed.returncode == 0, text
    assert "RESULT: done" in text and "RESULT: passed" in text
    assert "Pipeline: develop → test passed in round 1; the card is Done." in text
    assert Card.load(card).state is CardState.DONE
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list", "--json"],
        cwd=ROOT, env=demo_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    runs = {r["role"]: r for r in map(json.loads, listed.stdout.splitlines())}
    develop, test = runs["develop"], runs["test"]
    assert (develop["state"], develop["next_run"]) == ("done", test["run_id"])
    assert (test["state"], test["parent"], test["repo"]) == (
        "done",
        develop["run_id"],
        develop["repo"],
    )
    assert test["pipeline"] == {"develop": "develop", "then": "test", "round": 1, "round_trips": 2}
    assert agent_rows(tmp_path) == [("passed", None)]
