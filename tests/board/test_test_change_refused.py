""" "Test this change" (and a follow-up run in the test role) only after a run that ended done:
a tester that passed would make the card Done although its developer failed. Refused with what
to do instead; a follow-up develop run in the failed run's repository is the way on. The card
page starts "develop, then test" (the pipeline) with one checkbox beside the role.

A real board process over HTTP, the real durable runs database (SQLite); the failed run is a
real durable demo run (its own headless desktop, the scripted model); no worker, so what the
board queues stays queued.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.board.helpers import CARD, ROOT, TOKEN, board_env, copy_card, running_board
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui]

BEARER = {"authorization": f"Bearer {TOKEN}"}
WHY = "the fix did not work"


def failed_run(tmp_path: Path, card: Path) -> str:
    """A develop run of ``card`` that ends ``RESULT: failed`` (durable, so the board lists it)."""
    transcript = tmp_path / "fails.json"
    transcript.write_text(json.dumps({"turns": [{"text": f"RESULT: failed: {WHY}"}]}), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--durable",
         "--transcript", str(transcript)],
        cwd=ROOT, env=board_env(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    found = re.search(r"Durable run ([0-9a-f]{32})", done.stdout)
    assert found, done.stdout
    return found.group(1)


def repository(html: str) -> str:
    """The repository a run page names."""
    found = re.search(r'id="run-repo">repository <code>([^<]+)</code>', html)
    assert found, html
    return found.group(1)


def test_a_failed_run_has_no_change_to_test(tmp_path: Path) -> None:
    card = copy_card(tmp_path / "cards")
    run_id = failed_run(tmp_path, card)
    assert Card.load(card).state is CardState.FAILED
    refused = (
        f"run not started: run {run_id} ended failed ({WHY}): only a run that ended done has a "
        "change to test; start a follow-up develop run in its repository first (it continues "
        "there), then test that run's change"
    )
    with running_board(tmp_path) as board, board.client() as client:
        page = client.get(f"/runs/{run_id}", headers=BEARER)
        assert page.status_code == 200 and 'id="test-change"' not in page.text
        test = client.post(f"/runs/{run_id}/test", headers=BEARER)
        assert (test.status_code, test.text) == (400, refused)
        as_test = client.post(f"/runs/{run_id}/follow-up", data={"role": "test"}, headers=BEARER)
        assert (as_test.status_code, as_test.text) == (400, refused)
        assert Card.load(card).state is CardState.FAILED  # nothing ran, nothing changed
        # The way on: a follow-up develop run, in the failed run's repository.
        again = client.post(f"/runs/{run_id}/follow-up", data={"role": "develop"}, headers=BEARER)
        assert again.status_code == 303, again.text
        follow = again.headers["location"].split("?")[0].rsplit("/", 1)[1]
        shown = client.get(f"/runs/{follow}", headers=BEARER).text
        assert f'href="/runs/{run_id}"' in shown  # it follows the failed run, in its repository
        assert repository(shown) == repository(page.text) and Path(repository(shown)).is_dir()


def test_the_card_page_starts_develop_then_test(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    with running_board(tmp_path) as board, board.client() as client:
        page = client.get(f"/cards/{CARD}.md", headers=BEARER).text
        assert '<input type="checkbox" name="then" value="test">' in page
        same = client.post(
            f"/cards/{CARD}.md/run", data={"role": "test", "then": "test"}, headers=BEARER
        )
        assert same.status_code == 400
        assert "then 'test': expected another role than the run's ('test')" in same.text
        started = client.post(
            f"/cards/{CARD}.md/run", data={"role": "develop", "then": "test"}, headers=BEARER
        )
        assert started.status_code == 303, started.text
        run_id = started.headers["location"].split("?")[0].rsplit("/", 1)[1]
    # The queued run is the first of a pipeline: develop, then test.
    shown = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "show", run_id, "--json"],
        cwd=ROOT, env=board_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["pipeline"] == {
        "develop": "develop", "then": "test", "round": 1, "round_trips": 2,
    }  # fmt: skip
