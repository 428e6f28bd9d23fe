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

Printed: each way's wall time, the run time per case (``queue`` / 3) and each eval's overhead
per case beside it, as a share of the run time (the goal: at most 5 % for ``eval``), with the
load. Checked: every case passed. No timing is asserted (the machine is shared).

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


def plain_queue(folder: Path) -> float:
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
    return seconds


def evaluated(folder: Path, graders: list[str]) -> tuple[float, dict[str, object]]:
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
    return seconds, result


@pytest.mark.timeout(2400)  # nine pipelines with their desktops: minutes on a busy machine
def test_eval_overhead_per_case(tmp_path: Path) -> None:
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    queue = plain_queue(tmp_path / "queue")
    machinery, result = evaluated(tmp_path / "eval", ["criteria", "tester", "build", "limits"])
    with_checks, checked = evaluated(
        tmp_path / "checks", ["criteria", "checks", "tester", "build", "limits"]
    )
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    run_time = queue / CASES
    grading = [c["grading_seconds"] for c in result["cases"]]
    checks = [c["grading_seconds"] for c in checked["cases"]]
    lines = [
        f"eval overhead, {CASES} cases (total card, develop → test, scripted), one worker; load "
        f"{' '.join(load_before)} → {' '.join(load_after)}",
        f"  plain queue      {queue:6.1f} s   run time per case {run_time:5.1f} s",
    ]
    for name, seconds in (("eval", machinery), ("eval + checks", with_checks)):
        extra = (seconds - queue) / CASES
        lines.append(
            f"  {name:15}  {seconds:6.1f} s   overhead per case {extra:+5.2f} s = "
            f"{extra / run_time:+6.1%} of the run time"
        )
    lines.append(
        f"  grading per case: {sum(grading) / CASES:.2f} s without the checks, "
        f"{sum(checks) / CASES:.2f} s with them (a fresh app each)"
    )
    print("\n" + "\n".join(lines))
