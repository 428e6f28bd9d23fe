"""Two workers, each with its own headless desktop, share one queue on a real PostgreSQL.

A private cluster (tests/sessions/postgres.py: a temp folder, a Unix socket, stopped after).
Six cards are queued; two ``python -m loopkit.worker`` processes take them, one at a time each:
all six end Done exactly once and both workers took work. Then a seventh run is queued with a
slow first build, its worker is SIGKILLed inside that build, and the other worker, still
running, requeues the run and ends it once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import CARD_NAMES, CARDS, ROOT, cmdline, descendants
from tests.installed import import_or_unavailable
from tests.sessions.postgres import private_cluster

import_or_unavailable("dbos", install="loopkit[durable]")
# Seven card runs on two desktops, on two shared cores: minutes, not seconds.
pytestmark = [pytest.mark.integration, pytest.mark.ui, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with private_cluster() as url:
        yield url


class Worker:
    """A worker process whose output is read as it comes (a thread drains the pipe)."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loopkit.worker", "--name", name],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def ended(self) -> list[str]:
        """Ids of the runs this worker reported as done."""
        return [line.split()[2].rstrip(":") for line in self.lines if line.endswith(": done")]

    def inner_pid(self) -> int:
        found = [
            p
            for p in descendants(self.proc.pid)
            if cmdline(p).startswith(f"{sys.executable} -m loopkit.worker ")
        ]
        assert len(found) == 1, [cmdline(p) for p in descendants(self.proc.pid)]
        return found[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        return status


def runs(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_until(condition: object, what: str, workers: list[Worker], within: float = 600) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        for w in workers:
            assert w.proc.poll() is None, f"worker {w.name} ended:\n" + "\n".join(w.lines)
        assert time.monotonic() < deadline, f"{what} within {within} s:\n" + "\n\n".join(
            "\n".join(w.lines) for w in workers
        )
        time.sleep(0.2)


def test_two_workers_share_six_cards_on_postgresql_and_a_killed_ones_run_ends_once(
    tmp_path: Path, database: str
) -> None:
    env = {
        **os.environ,
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": "always",
        "LOOPKIT_DATABASE_URL": database,
        "COLUMNS": "200",
    }
    env.pop("LOOPKIT_IN_HEADLESS_SESSION", None)
    cards = []
    for copy in ("a", "b"):
        (tmp_path / copy).mkdir()
        for name in CARD_NAMES:
            cards.append(tmp_path / copy / f"{name}.md")
            shutil.copy(CARDS / f"{name}.md", cards[-1])
    run_ids = runs(env, "enqueue", *map(str, cards)).split()
    assert len(set(run_ids)) == 6

    workers = [Worker("one", env), Worker("two", env)]
    try:
        wait_until(lambda: sum(len(w.ended()) for w in workers) >= 6, "six runs done", workers)
        ended = [run_id for w in workers for run_id in w.ended()]
        assert sorted(ended) == sorted(run_ids)  # each run ended once, by one worker
        assert all(w.ended() for w in workers)  # both took work
        records = [json.loads(line) for line in runs(env, "list", "--json").splitlines()]
        assert sorted(r["run_id"] for r in records) == sorted(run_ids)
        assert {r["state"] for r in records} == {"done"}
        by_worker = Counter(r["worker"].split(":")[0] for r in records)
        assert set(by_worker) == {"one", "two"}
        assert all(Card.load(c).state == CardState.DONE for c in cards)
        for r in records:
            log = Path(r["log_path"]).read_text(encoding="utf-8").splitlines()
            assert sum('"type":"result"' in line for line in log) == 1

        # A seventh run, its first build slow: kill its worker inside it.
        marker = tmp_path / "built-once"
        code = (
            f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
            "p.touch(); time.sleep(60 if first else 0)"
        )
        slow = tmp_path / "slow.toml"
        build = json.dumps([sys.executable, "-c", code])
        slow.write_text(f"[tools]\nbuild_command = {build}\n", encoding="utf-8")
        seventh = tmp_path / "c" / "delete-asks-for-confirmation.md"
        seventh.parent.mkdir()
        shutil.copy(CARDS / seventh.name, seventh)
        run_id = runs(env, "--config", str(slow), "enqueue", str(seventh)).strip()
        wait_until(marker.exists, "the seventh run's build started", workers)
        owner = json.loads(runs(env, "show", run_id, "--json"))["worker"].split(":")[0]
        doomed = next(w for w in workers if w.name == owner)
        survivor = next(w for w in workers if w is not doomed)
        os.kill(doomed.inner_pid(), signal.SIGKILL)
        assert doomed.proc.wait(timeout=60) != 0
        wait_until(lambda: run_id in survivor.ended(), "the seventh run done", [survivor])
        assert f"[{doomed.name}" not in "".join(survivor.lines)
        assert any(f"run {run_id}: its worker is gone" in line for line in survivor.lines)
        record = json.loads(runs(env, "show", run_id, "--json"))
        assert record["state"] == "done" and record["worker"].startswith(f"{survivor.name}:")
        assert Card.load(seventh).state == CardState.DONE
        log = Path(record["log_path"]).read_text(encoding="utf-8").splitlines()
        events = Counter(json.loads(line)["type"] for line in log)
        assert (events["interrupted"], events["resumed"], events["result"]) == (1, 1, 1)
        from loopkit import Script
        from loopkit.demo.run import bundled_transcripts

        turns = Script.load(bundled_transcripts()["delete-asks-for-confirmation"]).turns
        assert events["round"] == len(turns)
    finally:
        statuses = [w.stop() for w in workers]
    assert statuses[[w.name for w in workers].index(survivor.name)] == 130
