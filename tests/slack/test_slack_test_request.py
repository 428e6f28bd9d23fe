"""A test request in a run's Slack thread tests that run's repository: the bot (a real process
against the fake Slack), the durable queue on SQLite, a real worker in its own headless desktop
running the card with the scripted model, the real app, UI server and tools."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit_board.slack.commands import follow_up_role
from tests.demo.helpers import copy_card
from tests.installed import import_or_unavailable
from tests.slack.conftest import ALLOWED, ROLE, ROOT, bot_env
from tests.slack.fake_slack import FakeSlack

import_or_unavailable("dbos", install="loopkit[durable]")

ROLES = ("develop", "document", "test")


def test_a_follow_up_request_is_a_role_alone_or_with_this() -> None:
    assert follow_up_role("test", ROLES) == "test"
    assert follow_up_role("<@U0BOT> Test this change.", ROLES) == "test"
    assert follow_up_role("document it", ROLES) == "document"
    assert follow_up_role("test the totals please", ROLES) is None  # a question
    assert follow_up_role("deploy", ROLES) is None


@pytest.mark.integration
@pytest.mark.ui
def test_test_in_a_runs_thread_tests_that_runs_repository(
    tmp_path: Path, slack: FakeSlack, start_bot
) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = copy_card(tmp_path / "cards", "delete-asks-for-confirmation")
    start_bot()
    worker = subprocess.Popen(
        [sys.executable, "-m", "loopkit.worker", "--name", "desk"],
        cwd=ROOT,
        env=bot_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        ts = slack.send_message(ALLOWED, f"{ROLE} {card.name}")
        slack.wait_post(ts, f"as `{ROLE}`")
        # Asked before the run is done, nothing starts; once done, "test" starts the tester in
        # the run's repository.
        slack.send_message(ALLOWED, "test", thread_ts=ts)
        early = slack.wait_post(ts, "I cannot start that")
        assert "ask again once it has ended" in early.args["text"], early.args["text"]
        slack.wait_post(ts, "RESULT: done", timeout=240)
        slack.send_message(ALLOWED, "test this change", thread_ts=ts)
        queued = slack.wait_post(ts, "as `test` in the repository of run")
        slack.wait_post(ts, "RESULT: done", timeout=240)
        slack.wait_for(
            lambda: sum("RESULT: done" in c.args["text"] for c in slack.posts(ts)) == 2,
            "the test run's result in the same thread",
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
    assert worker.returncode == 130, out
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list", "--json"],
        cwd=ROOT,
        env=bot_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    runs = {r["role"]: r for r in map(json.loads, listed)}
    develop, test = runs[ROLE], runs["test"]
    assert test["run_id"] in queued.args["text"] and develop["run_id"] in queued.args["text"]
    assert (test["state"], test["parent"], test["repo"]) == (
        "done",
        develop["run_id"],
        develop["repo"],
    )
    assert Card.load(card).state is CardState.DONE
    posts = [c.args["text"] for c in slack.posts(ts)]
    assert any("`record_step`" in p for p in posts)  # the tester's progress, in the thread


@pytest.mark.integration
@pytest.mark.ui
def test_test_in_a_failed_runs_thread_is_refused_with_what_to_do(
    tmp_path: Path, slack: FakeSlack, start_bot
) -> None:
    """A run that ended failed has no change to test (a tester that passed would make the card
    Done although its developer failed): the thread says so and what to do; nothing is queued."""
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = copy_card(tmp_path / "cards", "delete-asks-for-confirmation")
    fails = tmp_path / "fails.json"
    fails.write_text(json.dumps({"turns": [{"text": "RESULT: failed: the fix did not work"}]}))
    start_bot(LOOPKIT_TRANSCRIPT=str(fails))
    worker = subprocess.Popen(
        [sys.executable, "-m", "loopkit.worker", "--name", "desk", "--max-runs", "1"],
        cwd=ROOT,
        env=bot_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        ts = slack.send_message(ALLOWED, f"{ROLE} {card.name}")
        slack.wait_post(ts, "RESULT: failed", timeout=240)
    finally:
        out, _ = worker.communicate(timeout=120)  # it stops once the run has ended
    assert worker.returncode == 0, out
    slack.send_message(ALLOWED, "test this change", thread_ts=ts)
    refused = slack.wait_post(ts, "I cannot start that")
    text = " ".join(refused.args["text"].split())
    assert (
        "ended failed (the fix did not work): only a run that ended done has a change to test"
        in text
    )
    assert "start a follow-up develop run in its repository first" in text
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list", "--json"],
        cwd=ROOT,
        env=bot_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    assert [json.loads(line)["role"] for line in listed] == [ROLE]  # no test run was queued
    assert Card.load(card).state is CardState.FAILED
