"""A durable test run's row in the findings database ends with the run's real verdict (its
RESULT line), as an in-process run's does: also after a kill and ``--resume``, and when the run
is cancelled (``python -m loopkit.runs cancel``). Real processes throughout: the demo in its own
headless desktop, the app, the UI server, the tools, the scripted model (strict), SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit.demo.run import bundled_transcripts
from loopkit_ui.scripts import ResultStore
from tests.demo.helpers import ROOT, cmdline, copy_card, demo_env, descendants, start_demo
from tests.durable.test_demo_durable import demo, runs_the_card, slow_build_config
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"
CHANGED_ITS_MIND = "the tester changed its mind after its report"


def agent_rows(tmp_path: Path) -> list[tuple[str, str | None]]:
    """The agent test runs' rows (status, error) of the runs folder's findings database."""
    rows = ResultStore(tmp_path / "runs" / "results.sqlite").runs()
    return [(r["status"], r["error"]) for r in rows if r["script"].startswith("agent test run")]


def wait_for_the_build(outer: subprocess.Popen[str], tmp_path: Path) -> None:
    """Until the slow build (slow_build_config) runs inside the test run."""
    deadline = time.monotonic() + 120
    while not (tmp_path / "built-once").exists():
        assert outer.poll() is None, outer.communicate()[0]
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.05)


def the_runs_process(outer: subprocess.Popen[str]) -> int:
    """The demo's own process inside its headless desktop (the one the run runs in)."""
    inner = [
        p
        for p in descendants(outer.pid)
        if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
        and runs_the_card(p, outer.pid)
    ]
    assert len(inner) == 1, [(p, cmdline(p)) for p in descendants(outer.pid)]
    return inner[0]


def test_a_killed_and_resumed_durable_test_run_ends_its_row_with_its_result(
    tmp_path: Path,
) -> None:
    """The tester writes a passing report, then ends ``RESULT: failed``: the row says failed
    with that reason (not the report's provisional ``passed``), one row across both processes."""
    turns = json.loads(bundled_transcripts("test")[CARD].read_text("utf-8"))["turns"]
    assert turns[-1]["text"].rstrip().endswith("RESULT: passed")
    turns[-1]["text"] = turns[-1]["text"].rstrip().removesuffix("RESULT: passed")
    turns[-1]["text"] += f"RESULT: failed: {CHANGED_ITS_MIND}"
    transcript = tmp_path / "test.json"
    transcript.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    card = copy_card(tmp_path, CARD)
    developed = demo(tmp_path, str(card))
    assert developed.returncode == 0, developed.stdout + developed.stderr
    repo = next((tmp_path / "runs").glob("*/repo"))
    outer = start_demo(
        tmp_path, card, "--role", "test", "--repo", str(repo), "--durable",
        "--transcript", str(transcript), "--config", str(slow_build_config(tmp_path)),
    )  # fmt: skip
    wait_for_the_build(outer, tmp_path)
    assert agent_rows(tmp_path) == [("running", None)]  # a row from the start
    os.kill(the_runs_process(outer), signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert outer.returncode == 130, output
    assert agent_rows(tmp_path) == [("running", None)]  # killed: nobody could say more

    resumed = demo(tmp_path, "--resume", "all")
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 1, text
    assert f"RESULT: failed: {CHANGED_ITS_MIND}" in " ".join(text.split())
    assert Card.load(card).state is CardState.FAILED
    # The report was written (passed) in the resumed run; the row says what the run ended with.
    assert agent_rows(tmp_path) == [("failed", CHANGED_ITS_MIND)]
    report = next((tmp_path / "runs").glob("*-test/test-report/report.html"))
    assert report.is_file()


def test_a_cancelled_durable_test_run_ends_its_row_cancelled(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    outer = start_demo(
        tmp_path, card, "--role", "test", "--durable",
        # Long enough for two commands on a loaded machine; the cancel ends it within 0.5 s.
        "--config", str(slow_build_config(tmp_path, seconds=300)),
    )  # fmt: skip
    wait_for_the_build(outer, tmp_path)
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list", "--json", "--state", "running"],
        cwd=ROOT, env=demo_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    (run,) = [json.loads(line) for line in listed.stdout.splitlines()]
    cancelled = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "cancel", run["run_id"]],
        cwd=ROOT, env=demo_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    output, _ = outer.communicate(timeout=180)
    assert outer.returncode == 1, output
    assert "was cancelled; card Failed" in output
    assert Card.load(card).state is CardState.FAILED
    assert agent_rows(tmp_path) == [("cancelled", "the run was cancelled")]
