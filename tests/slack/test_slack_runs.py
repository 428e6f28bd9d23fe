"""A card run started from Slack, end to end: the bot (a real process, socket mode against the
fake Slack), the durable queue on SQLite, a real worker in its own headless desktop running the
card with the strict scripted model, the real UI server and app.

Checked: the queue places posted (the second request waits behind the first: one run per
desktop), the progress in the run's thread (tool calls and the model's messages), the result line,
the HTML report and the GIF uploaded to the thread (files_upload_v2's three steps), every request
made with the bot's token to the right channel and thread; then questions in the thread, one
before and one after a bot restart, answered by a model (litellm's real HTTP path to a fake
OpenAI server) that receives the run's context and the earlier questions and answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.demo.run import bundled_transcripts
from tests.demo.helpers import copy_card
from tests.fakes.fake_llm_server import FakeLLMServer, Turn
from tests.installed import import_or_unavailable
from tests.slack.conftest import ALLOWED, ROLE, ROOT, bot_env, write_bot_config
from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui, pytest.mark.slow]

#: The delete card's develop run: one round per turn of its bundled transcript.
DELETE_ROUNDS = len(
    json.loads(bundled_transcripts()["delete-asks-for-confirmation"].read_text())["turns"]
)


#: The round of the delete card's build (asked about in a thread; the offline answer names it).
BUILD_ROUND = next(
    n
    for n, t in enumerate(
        json.loads(bundled_transcripts()["delete-asks-for-confirmation"].read_text())["turns"],
        start=1,
    )
    if "build_app" in [c["name"] for c in t.get("calls", [])]
)


def posted_count(tmp_path: Path) -> int:
    """How many log events the bot's thread store says it posted."""
    with contextlib.closing(sqlite3.connect(tmp_path / "runs" / "slack.sqlite")) as db:
        return int(db.execute("SELECT posted FROM loopkit_slack_threads").fetchone()[0])


def texts(slack: FakeSlack, thread_ts: str) -> list[str]:
    return [c.args["text"] for c in slack.posts(thread_ts)]


def test_a_run_from_slack_posts_progress_result_and_files_and_its_thread_chats(
    tmp_path: Path, slack: FakeSlack, start_bot
) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    first = copy_card(tmp_path / "cards", "delete-asks-for-confirmation")
    second = copy_card(tmp_path / "cards", "total-ignores-the-discount")
    llm = FakeLLMServer.openai()
    with llm:
        llm.enqueue(
            Turn.reply("At round 3 it started the app."),
            Turn.reply("Then it listed the windows."),
            Turn.reply("First answer."),
            Turn.reply("Second answer."),
        )
        runner = tmp_path / "runner.toml"  # the runs stay scripted; the chat's endpoint
        runner.write_text(f'api_base = "{llm.api_base}"\n', encoding="utf-8")
        config = write_bot_config(
            tmp_path, slack, chat_model="openai/fake-chat", runner_config=str(runner)
        )
        chat_env = {"OPENAI_API_KEY": "sk-fake-key-for-the-test-0000"}
        bot = start_bot(config, **chat_env)

        ts1 = slack.send_message(ALLOWED, f"{ROLE} {first}")
        queued1 = slack.wait_post(ts1, "queued, position 1")
        assert "*Deleting an item should ask first*" in queued1.args["text"]
        ts2 = slack.send_message(ALLOWED, f"<@U0BOT> {ROLE.capitalize()} {second}")
        slack.wait_post(ts2, "queued, position 2 (1 run before it)")

        worker = subprocess.Popen(
            [sys.executable, "-m", "loopkit.worker", "--name", "desk"],
            cwd=ROOT,
            env=bot_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            result = slack.wait_post(ts1, "RESULT: done", timeout=240)
            # the second request moved up once the first was taken, and ran after it
            moved = slack.wait_post(ts2, "Now queued, position 1")
            result2 = slack.wait_post(ts2, "RESULT: done", timeout=240)
        finally:
            worker.send_signal(signal.SIGTERM)
            out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 130, out
        assert f"{DELETE_ROUNDS} rounds" in result.args["text"] and "commit" in result.args["text"]
        assert slack.calls.index(moved) < slack.calls.index(result)
        slack.wait_for(
            lambda: sum(c.method == "files.completeUploadExternal" for c in slack.calls) == 4,
            "two uploads in each thread",
        )

        thread1 = texts(slack, ts1)
        progress = "\n".join(thread1[1:-1])
        assert "`start_app`" in progress and "The app is running" in progress
        assert "`git_commit`" in progress
        assert "Now the live app." in progress  # the model's message of round 3
        assert thread1[-1] == result.args["text"]  # the result line comes last
        assert texts(slack, ts2)[-1] == result2.args["text"]
        for call in slack.calls:
            want = APP_TOKEN if call.method == "apps.connections.open" else BOT_TOKEN
            assert call.token == want and call.ok, call
            if call.method == "chat.postMessage":
                assert call.args["channel"] == "C0CHAN" and call.args["thread_ts"] in (ts1, ts2)
        uploaded: dict[str, list[str]] = {ts1: [], ts2: []}
        for call in slack.calls:
            if call.method != "files.completeUploadExternal":
                continue
            assert call.args["channel_id"] == "C0CHAN"
            (entry,) = json.loads(call.args["files"])
            uploaded[call.args["thread_ts"]].append(entry["title"].split()[0])
            data = slack.uploads[entry["id"]]
            assert data.startswith(b"GIF8") or data.startswith(b"<!doctype html>")
        assert {k: sorted(v) for k, v in uploaded.items()} == {
            ts1: ["board-report.html", "run.gif"],
            ts2: ["board-report.html", "run.gif"],
        }
        reports = [d for d in slack.uploads.values() if d.startswith(b"<!doctype")]
        assert any(b"ConfirmDeleteDialog" in r for r in reports)
        assert all(b"ui_screenshot" in r and b"RESULT: done" in r for r in reports)

        # a question in the thread: the model gets the run's context
        slack.send_message(ALLOWED, "What happened at round 3?", thread_ts=ts1)
        slack.wait_post(ts1, "At round 3 it started the app.")
        asked = llm.requests[0].body["messages"]
        context = json.dumps(asked)  # the run's own conversation, from its log
        assert "Deleting an item should ask first" in context
        assert "start_app" in context and "The app is running" in context
        assert asked[-1] == {"role": "user", "content": "What happened at round 3?"}

        assert bot.stop() == 130
        bot = start_bot(config, **chat_env)  # a new process: nothing in memory
        slack.send_message(ALLOWED, "And after that?", thread_ts=ts1)
        slack.wait_post(ts1, "Then it listed the windows.")
        again = llm.requests[1].body["messages"]
        assert again[-3:] == [
            {"role": "user", "content": "What happened at round 3?"},
            {"role": "assistant", "content": "At round 3 it started the app."},
            {"role": "user", "content": "And after that?"},
        ]
        assert again[:-2] == asked  # the run's context and the first question, from SQLite
        # two questions at once in one thread: asked one after the other, the second with the
        # first's answer (never two runs on one session at the same time)
        slack.send_message(ALLOWED, "Which files changed?", thread_ts=ts1)
        slack.send_message(ALLOWED, "Was it committed?", thread_ts=ts1)
        slack.wait_post(ts1, "Second answer.")
        third, fourth = (r.body["messages"] for r in llm.requests[2:4])
        assert third[-1]["content"] in ("Which files changed?", "Was it committed?")
        assert fourth[:-2] == third
        assert fourth[-2] == {"role": "assistant", "content": "First answer."}
        assert {third[-1]["content"], fourth[-1]["content"]} == {
            "Which files changed?",
            "Was it committed?",
        }
        assert len(llm.requests) == 4
        assert bot.stop() == 130
        for output in (bot.output(), out):
            assert BOT_TOKEN not in output and APP_TOKEN not in output
            assert chat_env["OPENAI_API_KEY"] not in output
        assert os.environ.get("SLACK_BOT_TOKEN") != BOT_TOKEN


def test_a_bot_killed_mid_run_takes_up_its_thread_where_it_stopped(
    tmp_path: Path, slack: FakeSlack, start_bot
) -> None:
    (tmp_path / "cards").mkdir()  # the bot's cards_dir: a card is named inside it
    card = copy_card(tmp_path / "cards", "delete-asks-for-confirmation")
    marker = tmp_path / "building"
    code = (
        f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
        "p.touch(); time.sleep(4 if first else 0)"
    )
    runner = tmp_path / "runner.toml"  # the build takes 4 s: the bot is killed inside it
    runner.write_text(
        f"[tools]\nbuild_command = {json.dumps([sys.executable, '-c', code])}\n",
        encoding="utf-8",
    )
    config = write_bot_config(tmp_path, slack, runner_config=str(runner))
    bot = start_bot(config)
    ts = slack.send_message(ALLOWED, f"{ROLE} {card}")
    slack.wait_post(ts, "queued, position 1")
    bot.process.kill()  # killed while the run waits: a new bot posts its place again
    bot.process.wait(30)
    bot = start_bot(config)
    slack.wait_post(ts, "Now queued, position 1")
    worker = subprocess.Popen(
        [sys.executable, "-m", "loopkit.worker", "--name", "desk", "--config", str(runner)],
        cwd=ROOT,
        env=bot_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        slack.wait_for(marker.exists, "the run's build", timeout=240)
        slack.wait_post(ts, "`stop_app`")  # what came before the build is in the thread
        # ... and counted as posted (a kill between a post and its count repeats that post)
        log = next((tmp_path / "runs").glob("*/run.jsonl"))
        slack.wait_for(
            lambda: posted_count(tmp_path) == len(log.read_text().splitlines()),
            "the posted events' count saved",
        )
        bot.process.kill()  # SIGKILL: no goodbye, nothing flushed
        bot.process.wait(30)
        before = len(slack.posts(ts))
        slack.fail_next("chat.postMessage", 2)  # and Slack has trouble: the bot tries again
        bot = start_bot(config)  # a new process takes the thread up from SQLite
        result = slack.wait_post(ts, "RESULT: done", timeout=240)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
    assert worker.returncode == 130, out
    slack.wait_for(
        lambda: sum(c.method == "files.completeUploadExternal" for c in slack.calls) == 2,
        "the report and the GIF",
    )
    posts = texts(slack, ts)
    assert len(posts) > before + 1  # progress after the restart, then the result
    assert posts[-1] == result.args["text"] and f"{DELETE_ROUNDS} rounds" in posts[-1]
    # every tool call of the run is in the thread exactly once: nothing lost, nothing twice
    log = next((tmp_path / "runs").glob("*/run.jsonl"))
    tools = [json.loads(line) for line in log.read_text().splitlines()]
    called = [e["data"]["name"] for e in tools if e["type"] == "tool"]
    posted = [
        line.split("`")[1]
        for post in posts
        for line in post.splitlines()
        if line.startswith("• `") or line.startswith(":x: `")
    ]
    assert posted == called
    assert sum("RESULT" in p for p in posts) == 1
    failed = [c for c in slack.calls if c.method == "chat.postMessage" and not c.ok]
    assert len(failed) == 2 and "trying again" in bot.output()
    # no chat model configured and scripted runs: the board's offline answerer reads the log
    slack.send_message(ALLOWED, f"What happened at step {BUILD_ROUND}?", thread_ts=ts)
    answer = slack.wait_post(ts, "offline answer from the run log")
    assert "build_app" in answer.args["text"]
