"""Workers ride out a lost PostgreSQL: a real private cluster (tests/sessions/postgres.py) that the
tests stop and start again while ``python -m loopkit.worker`` processes run.

- A worker started while the database is down waits for it, takes runs once it is up, says each
  change of state in one line, and still stops on SIGTERM (130) in the middle of an outage.
- A 15-second outage in the middle of a card run (inside its build, on the worker's own headless
  desktop): the run pauses and goes on in the same process, its log has no interruption and one
  ``start`` and one ``result``; the run queued behind it is taken once the database is back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import CARDS
from tests.durable.test_workers_postgres import Worker, runs, wait_until
from tests.installed import import_or_unavailable
from tests.sessions.postgres import Cluster, private_cluster_control

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CARD = "delete-asks-for-confirmation"
UNREACHABLE = "the runs database is unreachable ("
BACK = "the runs database is reachable again"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with private_cluster_control() as found:
        yield found


def env_for(tmp_path: Path, cluster: Cluster, headless: str) -> dict[str, str]:
    env = {
        **os.environ,
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": headless,
        "LOOPKIT_DATABASE_URL": cluster.url,
        "COLUMNS": "200",
    }
    env.pop("LOOPKIT_IN_HEADLESS_SESSION", None)
    return env


def lines_with(worker: Worker, text: str) -> list[str]:
    return [line for line in worker.lines if text in line]


def test_a_worker_waits_for_its_database_and_stops_on_sigterm_during_an_outage(
    tmp_path: Path, cluster: Cluster
) -> None:
    cluster.stop()
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list"],
        env=env_for(tmp_path, cluster, "never"), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 1, listed.stdout + listed.stderr
    assert listed.stderr.count("\n") == 1 and "cannot be reached" in listed.stderr, listed.stderr
    assert "Traceback" not in listed.stdout + listed.stderr
    worker = Worker("patient", env_for(tmp_path, cluster, "never"))
    try:
        wait_until(lambda: lines_with(worker, UNREACHABLE), "the outage reported", [worker], 120)
        time.sleep(3)  # several tries meanwhile, still one line
        assert len(lines_with(worker, UNREACHABLE)) == 1, worker.lines
        cluster.start()
        wait_until(lambda: lines_with(worker, "taking card runs"), "the intake", [worker], 120)
        assert len(lines_with(worker, BACK)) == 1, worker.lines
        assert not any("Traceback" in line for line in worker.lines), worker.lines

        cluster.stop()  # an outage while it polls
        wait_until(lambda: len(lines_with(worker, UNREACHABLE)) == 2, "second", [worker], 120)
        worker.proc.send_signal(signal.SIGTERM)
        status = worker.proc.wait(timeout=60)
    finally:
        worker.stop()
    assert status == 130, worker.lines
    assert "stopped while the runs database is unreachable" in worker.lines[-1], worker.lines
    assert not any("Traceback" in line for line in worker.lines), worker.lines


@pytest.mark.ui
def test_a_run_pauses_through_a_database_outage_and_the_worker_takes_work_after_it(
    tmp_path: Path, cluster: Cluster
) -> None:
    env = env_for(tmp_path, cluster, "always")
    marker = tmp_path / "built-once"
    code = (
        f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
        "p.touch(); time.sleep(3 if first else 0)"
    )
    slow = tmp_path / "slow.toml"
    slow.write_text(
        f"[tools]\nbuild_command = {json.dumps([sys.executable, '-c', code])}\n", encoding="utf-8"
    )
    first, second = tmp_path / "a" / f"{CARD}.md", tmp_path / "b" / f"{CARD}.md"
    for card in (first, second):
        card.parent.mkdir()
        shutil.copy(CARDS / f"{CARD}.md", card)
    first_id = runs(env, "--config", str(slow), "enqueue", str(first)).strip()
    second_id = runs(env, "enqueue", str(second)).strip()

    worker = Worker("steady", env)
    try:
        wait_until(marker.exists, "the first run's build started", [worker])
        cluster.stop()
        time.sleep(15)  # the build ends meanwhile: its checkpoint waits for the database
        assert worker.proc.poll() is None, worker.lines
        cluster.start()
        wait_until(lambda: second_id in worker.ended(), "the queued run done", [worker])
        status_before_stop = worker.proc.poll()
    finally:
        worker.stop()
    assert status_before_stop is None
    assert worker.ended() == [first_id, second_id], worker.lines
    assert len(lines_with(worker, UNREACHABLE)) == 1, worker.lines
    assert len(lines_with(worker, BACK)) == 1, worker.lines
    assert not any("Traceback" in line for line in worker.lines), worker.lines
    # The first run went on in the same worker: no interruption, no resume, one start and result.
    record = json.loads(runs(env, "show", first_id, "--json"))
    assert record["state"] == "done" and record["worker"].startswith("steady:"), record
    events = [json.loads(line) for line in Path(record["log_path"]).read_text().splitlines()]
    types = Counter(e["type"] for e in events)
    assert (types["start"], types["result"]) == (1, 1), types
    assert (types["interrupted"], types["resumed"]) == (0, 0), types
    assert [e["type"] for e in events][-1] == "result"
    assert Card.load(first).state == Card.load(second).state == CardState.DONE


def test_the_board_answers_503_through_an_outage_and_pages_again_after(
    tmp_path: Path, cluster: Cluster
) -> None:
    from tests.board.helpers import running_board

    with running_board(tmp_path, "--database", cluster.url) as board:
        with board.client() as client:
            board.login(client)
            assert client.get("/runs").status_code == 200
            cluster.stop()
            for _ in range(3):  # every page that needs the database says so, the board lives
                down = client.get("/runs")
                assert down.status_code == 503, down.text
                assert "runs database cannot be reached" in down.text
                assert down.headers["retry-after"] == "5"
            assert client.get("/login").status_code == 200
            cluster.start()
            deadline = time.monotonic() + 60
            while (status := client.get("/runs").status_code) != 200:
                assert status == 503 and time.monotonic() < deadline, status
                time.sleep(0.5)
            assert client.get("/").status_code == 200
        time.sleep(6)  # the board's watch tries every 5 s at most: it has seen the return
        board.stop()
        assert board.process.stdout is not None
        output = board.process.stdout.read()
    assert output.count("the runs database is unreachable (") == 1, output
    assert output.count("the runs database is reachable again") == 1, output
    assert "Traceback" not in output, output


def test_a_board_started_before_its_database_answers_503_until_it_is_there(
    tmp_path: Path, cluster: Cluster
) -> None:
    from tests.board.helpers import running_board

    cluster.stop()
    with running_board(tmp_path, "--database", cluster.url) as board:
        with board.client() as client:
            board.login(client)
            assert client.get("/runs").status_code == 503
            cluster.start()
            deadline = time.monotonic() + 60
            while (status := client.get("/runs").status_code) != 200:
                assert status == 503 and time.monotonic() < deadline, status
                time.sleep(0.5)
        board.stop()
        assert board.process.stdout is not None
        output = board.process.stdout.read()
    assert output.count("the runs database is unreachable (") == 1, output
    assert output.count("the runs database is reachable again") == 1, output
    assert "Traceback" not in output, output


def test_the_slack_bot_rides_out_an_outage_and_queues_again_after(
    tmp_path: Path, cluster: Cluster
) -> None:
    from tests.board.helpers import copy_card
    from tests.slack.conftest import ALLOWED, ROLE, BotProcess, bot_env, write_bot_config
    from tests.slack.fake_slack import FakeSlack

    first = copy_card(tmp_path / "cards", CARD)
    second = copy_card(tmp_path / "cards", "total-ignores-the-discount")
    runner = tmp_path / "runner.toml"
    runner.write_text(f"database_url = {json.dumps(cluster.url)}\n", encoding="utf-8")
    with FakeSlack() as slack:
        config = write_bot_config(tmp_path, slack, runner_config=str(runner))
        bot = BotProcess(tmp_path, slack, config, bot_env(tmp_path))
        try:
            ts = slack.send_message(ALLOWED, f"{ROLE} {first}")
            slack.wait_post(ts, "queued, position 1")
            cluster.stop()
            ts = slack.send_message(ALLOWED, f"{ROLE} {second}")
            told = slack.wait_post(ts, "cannot be reached")
            assert "Traceback" not in told.args["text"]
            time.sleep(3)  # the first run's thread is followed meanwhile
            assert bot.process.poll() is None, bot.output()
            cluster.start()
            ts = slack.send_message(ALLOWED, f"{ROLE} {second}")
            slack.wait_post(ts, "queued, position 2")
            time.sleep(6)  # the service's watch tries every 5 s at most
        finally:
            status = bot.stop()
    output = bot.output()
    assert status == 130, output
    assert output.count("the runs database is unreachable (") == 1, output
    assert output.count("the runs database is reachable again") == 1, output
    assert "Traceback" not in output, output


def test_a_runtime_creates_its_postgresql_database_when_missing(cluster: Cluster) -> None:
    """As DBOS does for the engines it makes (loopkit gives it its own)."""
    import asyncio

    from loopkit.durable import DurableRuntime

    url = cluster.url.replace("/loopkit_test?", "/loopkit_fresh?")

    async def use() -> list[object]:
        async with DurableRuntime(url, log_level="CRITICAL") as runtime:
            await runtime.check_database()
            return list(await runtime.list_runs())

    assert asyncio.run(use()) == []
