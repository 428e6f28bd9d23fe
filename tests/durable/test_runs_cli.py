"""``python -m loopkit.runs``: enqueue (deduplicated), list, show, cancel, bad input.

Real processes on a real SQLite database; no worker runs here, so the queued runs stay queued.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "examples" / "cards" / "delete-asks-for-confirmation.md"


def runs(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "200"}
    env.pop("LOOPKIT_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "loopkit.runs", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def listed(tmp_path: Path) -> list[dict]:
    out = runs(tmp_path, "list", "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.slow
def test_a_card_enqueued_twice_while_queued_is_one_run_and_cancel_frees_it(tmp_path: Path) -> None:
    card = tmp_path / CARD.name
    shutil.copy(CARD, card)
    first = runs(tmp_path, "enqueue", CARD.name)  # relative to the caller's folder
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.strip()
    assert len(run_id) == 32

    again = runs(tmp_path, "enqueue", str(card))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == run_id
    assert "already has a queued or running run" in again.stderr

    [record] = listed(tmp_path)
    assert record["run_id"] == run_id
    assert (record["card"], record["state"], record["role"]) == (str(card), "queued", "develop")
    assert record["model"] == "scripted" and record["worker"] is None

    shown = runs(tmp_path, "show", run_id, "--json")
    assert json.loads(shown.stdout) == record
    text = runs(tmp_path, "show", run_id).stdout
    assert f"run_id               {run_id}" in text and "state                queued" in text

    cancelled = runs(tmp_path, "cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert listed(tmp_path)[0]["state"] == "cancelled"
    assert Card.load(card).state == CardState.NEW  # it never started: the card is untouched

    # The card is free again: a new run.
    third = runs(tmp_path, "enqueue", str(card), "--model", "scripted")
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() != run_id
    assert [r["state"] for r in listed(tmp_path)] == ["queued", "cancelled"]
    assert [r["run_id"] for r in listed(tmp_path)][1] == run_id

    ended = runs(tmp_path, "cancel", run_id)
    assert (ended.returncode, ended.stderr) == (
        1,
        f"error: run {run_id} has ended (cancelled); nothing to cancel\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["enqueue", "missing.md"], "error: card file not found: "),
        (
            ["enqueue", "card.md", "--role", "tester"],
            "error: unknown role 'tester'; the roles are: develop",
        ),
        (["show", "0123"], "error: there is no card run '0123'"),
        (["cancel", "0123"], "error: there is no card run '0123'"),
        (["list", "--limit", "0"], "python -m loopkit.runs list: error: argument --limit: '0'"),
        (["list", "--state", "lost"], "python -m loopkit.runs list: error: argument --state"),
        (["frobnicate"], "python -m loopkit.runs: error: argument command: invalid choice"),
        # The password never reaches the message.
        (["--database", "mysql://u:pw@db/x", "list"], "error: database URL 'db/x': the scheme"),
        ([], "python -m loopkit.runs: error: the following arguments are required: command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    shutil.copy(CARD, tmp_path / "card.md")
    out = runs(tmp_path, *args)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert out.stderr.startswith(message), out.stderr
    assert out.stderr.count("\n") == 1
