"""What an eval adds per case beyond the runs themselves (queueing, following, grading, the
report), side by side with the same pipelines on the plain queue.

Three ways, each with one local worker (its headless desktop started in each) and the same
three cases (the total card through develop → test, scripted, every tool call real):

- ``queue``: ``python -m loopkit.runs enqueue --then test`` of three copies of the card and
  ``python -m loopkit.worker --max-runs 6``: the runs themselves, on the queue an eval uses;
- ``eval``: ``python -m loopkit.evals`` with the graders that read what the runs left (criteria,
  tester, build, limits), the results, the report and JUnit XML;
- ``eval + checks``: the same with the ``checks`` grader too, which runs the card's own check
  script on a fresh app of each case's commit (an independent test run per case, not overhead
  of the eval's machinery: reported apart).

Each way's wall time is split into the runs themselves (each run from its preparation checkpoint
to its end checkpoint, as the database has them; one worker, so they do not overlap) and the rest:
for ``queue`` the worker's start (its desktop) and the queue's dequeue gaps; for an eval also its
own start, following, grading and report. Subtracting each way's own run time keeps the load's
swings (the runs are most of the time) out of the comparison. Printed: the run time per case
and each way's rest per case beside it; the eval's overhead is its rest minus the queue's, as a
share of the run time (the goal: at most 5 %), with the load. Checked: every case passed. No
timing is asserted (the machine is shared).

    .venv/bin/python -m pytest bench/test_evals_overhead.py -s -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "examples" / "cards" / "total-ignores-the-discount.md"
CASES = 3


def _env(folder: Path) -> dict[str, str]:
    env = {**os.environ, "LOOPKIT_HEADLESS": "always", "BENCH_MARK": str(folder)}
    env.pop("DISPLAY", None)
    env.pop("LOOPKIT_DATABASE_URL", None)
    return env


def run_seconds(database: str) -> float:
    """The runs' own seconds, added up: each from its preparation to its end checkpoint."""
    import asyncio

    from loopkit.cards.durable import CARD_RUN_WORKFLOW, FINISH_STEP, PREPARE_STEP
    from loopkit.durable.runtime import DurableRuntime

    async def total() -> float:
        seconds = 0.0
        async with DurableRuntime(database, log_level="CRITICAL") as runtime:
            for run in await runtime.list_runs(workflow=CARD_RUN_WORKFLOW):
                steps = {s.name: s for s in await runtime.steps(run.run_id)}
                start = steps[PREPARE_STEP].started_at
                end = steps[FINISH_STEP].completed_at
                assert start is not None and end is not None
                seconds += (end - start).total_seconds()
        return seconds

    return asyncio.run(total())


def plain_queue(folder: Path) -> tuple[float, float]:
    database = f"sqlite:///{folder / 'runs' / 'loopkit.sqlite'}"
    cards = []
    for n in range(1, CASES + 1):
        copy = folder / "cards" / str(n) / CARD.name
        copy.parent.mkdir(parents=True)
        shutil.copyfile(CARD, copy)
        cards.append(str(copy))
    (folder / "runs").mkdir()
    env = {**_env(folder), "LOOPKIT_RUNS_DIR": str(folder / "runs")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "--database", database, "enqueue", *cards,
         "--then", "test", "--round-trips", "1"],
        check=True, env=env, cwd=folder, capture_output=True, text=True,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "loopkit.worker", "--database", database, "--max-runs",
         str(2 * CASES)],
        check=True, env=env, cwd=folder, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "--database", database, "list", "--json"],
        check=True, env=env, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    states = [json.loads(line)["state"] for line in listed]
    assert states == ["done"] * (2 * CASES), states
    return seconds, run_seconds(database)


def evaluated(folder: Path, graders: list[str]) -> tuple[float, float, dict[str, Any]]:
    folder.mkdir(parents=True)
    suite = folder / "suite.toml"
    suite.write_text(
        f'cards = ["{CARD}"]\nrepeat = {CASES}\nround_trips = 1\ngraders = {json.dumps(graders)}\n'
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.evals", str(suite), "--workers", "1", "--out",
         str(folder / "out")],
        env=_env(folder), cwd=folder, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((folder / "out" / "eval.json").read_text())
    assert all(c["passed"] for c in result["cases"])
    return seconds, run_seconds(result["database"]), result


@pytest.mark.timeout(2400)  # nine pipelines with their desktops: minutes on a busy machine
def test_eval_overhead_per_case(tmp_path: Path) -> None:
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    queue, queue_runs = plain_queue(tmp_path / "queue")
    machinery, machinery_runs, result = evaluated(
        tmp_path / "eval", ["criteria", "tester", "build", "limits"]
    )
    with_checks, checks_runs, checked = evaluated(
        tmp_path / "checks", ["criteria", "checks", "tester", "build", "limits"]
    )
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    run_time = queue_runs / CASES
    queue_rest = (queue - queue_runs) / CASES
    grading = [c["grading_seconds"] for c in result["cases"]]
    checks = [c["grading_seconds"] for c in checked["cases"]]
    lines = [
        f"eval overhead, {CASES} cases (total card, develop → test, scripted), one worker; load "
        f"{' '.join(load_before)} → {' '.join(load_after)}",
        f"  {'way':15}  {'wall':>7}  {'runs':>7}  per case: {'runs':>6}  {'rest':>6}  "
        f"{'rest beyond the queue':>22}",
    ]
    for name, wall, runs in (
        ("plain queue", queue, queue_runs),
        ("eval", machinery, machinery_runs),
        ("eval + checks", with_checks, checks_runs),
    ):
        rest = (wall - runs) / CASES
        beyond = rest - queue_rest
        share = beyond / run_time
        lines.append(
            f"  {name:15}  {wall:6.1f}s  {runs:6.1f}s  per case: {runs / CASES:5.1f}s  "
            f"{rest:5.2f}s  {beyond:+6.2f}s = {share:+6.1%} of the run time"
        )
    lines.append(
        f"  grading per case: {sum(grading) / CASES:.2f} s without the checks, "
        f"{sum(checks) / CASES:.2f} s with them (a fresh app each)"
    )
    print("\n" + "\n".join(lines))
