"""The bot against the fake Slack: who may use it, and what an unknown command gets.

The bot is a real process in socket mode; every request it makes is checked (method, token,
channel, thread, text)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.slack.conftest import ALLOWED, ROLE, ROOT, bot_env
from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack


def test_a_user_not_on_the_allowlist_is_refused_and_logged(slack: FakeSlack, start_bot) -> None:
    bot = start_bot()
    ts = slack.send_message("U0MALLORY", f"{ROLE} examples/cards/delete-asks-for-confirmation.md")
    post = slack.wait_post(ts, "not on this bot's list of allowed users")
    assert post.token == BOT_TOKEN
    assert post.args["channel"] == "C0CHAN" and post.args["thread_ts"] == ts
    assert bot.stop() == 130
    assert "refused a message from U0MALLORY in C0CHAN" in bot.output()
    # nothing else was done for it: no run, only the connection, the identity and the refusal
    methods = [c.method for c in slack.calls]
    assert set(methods) <= {"auth.test", "apps.connections.open", "chat.postMessage"}, methods
    assert [c.token for c in slack.calls if c.method == "apps.connections.open"] == [APP_TOKEN]
    assert len(slack.posts()) == 1
    assert BOT_TOKEN not in bot.output() and APP_TOKEN not in bot.output()


def test_an_unknown_command_is_answered_with_the_roles(
    slack: FakeSlack, start_bot, tmp_path: Path
) -> None:
    bot = start_bot()
    ts = slack.send_message(ALLOWED, "please fix the invoice app", channel="D0DIRECT")
    post = slack.wait_post(ts, "is not a role")
    assert "'please' is not a role" in post.args["text"]
    assert f"`{ROLE}`" in post.args["text"]
    assert post.args["channel"] == "D0DIRECT" and post.token == BOT_TOKEN
    # in a channel, talk that is not addressed to the bot gets nothing; a mention does
    quiet = slack.send_message(ALLOWED, "lunch at noon?")
    ts2 = slack.send_message(ALLOWED, f"<@U0BOT> {ROLE}")
    post2 = slack.wait_post(ts2, "needs a card")
    assert f"`{ROLE}`" in post2.args["text"] and post2.args["channel"] == "C0CHAN"
    ts3 = slack.send_message(ALLOWED, f"<@U0BOT> {ROLE} no-such-card.md")
    post3 = slack.wait_post(ts3, "I cannot run that card")
    assert "no-such-card.md" in post3.args["text"]
    # Slack asks for a reconnect now and then: the bot opens a new socket and goes on
    slack.refresh()
    opened = [c for c in slack.calls if c.method == "apps.connections.open"]
    assert len(opened) == 2 and all(c.token == APP_TOKEN for c in opened)
    # a card given as text is written as a card; the scripted model has no transcript for it,
    # so it is refused, naming why, and the card is not left behind
    ts4 = slack.send_message(
        ALLOWED, f"{ROLE} Totals in bold\nThe total label is bold.", channel="D0DIRECT"
    )
    post4 = slack.wait_post(ts4, "I cannot run that card")
    assert "transcript" in post4.args["text"] and "totals-in-bold" in post4.args["text"]
    assert not list((tmp_path / "cards").glob("*.md"))
    assert bot.stop() == 130
    assert not slack.posts(quiet)
    assert len(slack.posts()) == 4


def test_a_redelivered_command_starts_one_run(slack: FakeSlack, start_bot, tmp_path: Path) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = tmp_path / "cards" / "delete-asks-for-confirmation.md"
    card.write_bytes((ROOT / "examples/cards/delete-asks-for-confirmation.md").read_bytes())
    bot = start_bot()
    ts = slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DIRECT")
    first = slack.wait_post(ts, "queued, position 1")
    slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DIRECT", redeliver=ts)
    slack.wait_for(lambda: f"ignored message {ts} in D0DIRECT" in bot.output(), "the log line")
    assert bot.stop() == 130
    assert [c.args["text"] for c in slack.posts(ts)] == [first.args["text"]]


def test_a_run_whose_first_post_failed_is_still_followed(
    slack: FakeSlack, start_bot, tmp_path: Path
) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = tmp_path / "cards" / "delete-asks-for-confirmation.md"
    card.write_bytes((ROOT / "examples/cards/delete-asks-for-confirmation.md").read_bytes())
    bot = start_bot()
    slack.fail_next("chat.postMessage", 1)  # Slack fails the "queued" answer
    ts = slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DIRECT")
    slack.wait_for(lambda: "place failed" in bot.output(), "the failure in the log")
    run_id = re.search(r"run (\w+) of ", bot.output()).group(1)  # type: ignore[union-attr]
    cancelled = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "cancel", run_id],
        cwd=ROOT,
        env=bot_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cancelled.returncode == 0, cancelled.stderr
    post = slack.wait_post(ts, "cancelled")  # the thread still got the run's end
    assert post.args["channel"] == "D0DIRECT"
    assert bot.stop() == 130


def test_cancel_in_a_runs_thread_cancels_the_run(
    slack: FakeSlack, start_bot, tmp_path: Path
) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = tmp_path / "cards" / "delete-asks-for-confirmation.md"
    card.write_bytes((ROOT / "examples/cards/delete-asks-for-confirmation.md").read_bytes())
    bot = start_bot()
    ts = slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DIRECT")
    slack.wait_post(ts, "queued, position 1")  # no worker: it stays queued until cancelled
    run_id = re.search(r"run (\w+) of ", bot.output()).group(1)  # type: ignore[union-attr]
    # someone not on the allowlist cannot cancel it
    slack.send_message("U0MALLORY", "cancel", channel="D0DIRECT", thread_ts=ts)
    slack.wait_post(ts, "not on this bot's list of allowed users")
    slack.send_message(ALLOWED, "<@U0BOT> Cancel.", channel="D0DIRECT", thread_ts=ts)
    said = slack.wait_post(ts, "Cancelling run")
    assert f"`{run_id}`" in said.args["text"] and "it was queued" in said.args["text"]
    slack.wait_post(ts, ":no_entry: cancelled")  # the follower posts the run's end
    shown = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "show", run_id],
        cwd=ROOT,
        env=bot_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "cancelled" in shown.stdout, shown.stdout + shown.stderr
    # once ended, a second cancel says why it cannot
    slack.send_message(ALLOWED, "cancel", channel="D0DIRECT", thread_ts=ts)
    slack.wait_post(ts, "I cannot cancel it")
    assert bot.stop() == 130
    assert f"run {run_id} cancelled by {ALLOWED} (was queued)" in bot.output()


def test_a_card_outside_the_cards_folder_is_refused_and_no_server_path_is_posted(
    slack: FakeSlack, start_bot, tmp_path: Path
) -> None:
    outside = tmp_path / "delete-asks-for-confirmation.md"
    outside.write_bytes((ROOT / "examples/cards/delete-asks-for-confirmation.md").read_bytes())
    before = outside.read_bytes()
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "broken.md").write_text("---\ntitle: [not closed\n---\nbody\n")
    bot = start_bot()
    given = [str(outside), "../delete-asks-for-confirmation.md", "delete-asks-for-confirmation.md",
             str(ROOT / "examples/cards/delete-asks-for-confirmation.md"), "broken.md"]  # fmt: skip
    for card in given:
        ts = slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DIRECT")
        post = slack.wait_post(ts, "I cannot run that card")
        text = post.args["text"]
        assert str(tmp_path) not in text and str(ROOT) not in text, text
    assert "broken.md" in text  # still named, by its file name
    assert bot.stop() == 130
    assert outside.read_bytes() == before
    assert not re.search(r"run \w+ of ", bot.output())  # nothing was queued
    assert sorted(p.name for p in (tmp_path / "cards").iterdir()) == ["broken.md"]
