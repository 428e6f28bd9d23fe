"""SIGKILL a durable agent loop inside a model request or a tool call; a new process resumes it.

Real processes and a real SQLite database: ``loop_child.py`` runs a 6-round loop as a durable
workflow and hangs at the chosen request or call; the test kills it with SIGKILL there, starts a
second process that takes the run over, and counts what the model and the tool really executed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

CHILD = Path(__file__).with_name("loop_child.py")
ROUNDS = 6


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the child ended early: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the child never reached {path.name}")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.parametrize("hang", ["model:1", "model:4", "tool:1", "tool:5", "model:7"])
def test_a_run_killed_inside_a_step_resumes_without_repeating_completed_steps(
    tmp_path: Path, hang: str
) -> None:
    db = str(tmp_path / "runs.sqlite")
    first = child("start", db, "run-1", str(tmp_path), str(ROUNDS), "--hang", hang)
    wait_for(tmp_path / "hanging", first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL

    second = child("resume", db, "run-1", str(tmp_path))
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {
        "output": "all rounds worked\nRESULT: done",
        "rounds": ROUNDS + 1,
    }

    kind, number = hang.split(":")
    requests = [json.loads(line) for line in lines(tmp_path / "model.log")]
    made = Counter(r["request"] for r in requests)
    called = Counter(int(n) for n in lines(tmp_path / "tool.log"))
    # Every completed request and call ran once; only the one in flight at the kill ran twice.
    assert made == {n: 2 if (kind, n) == ("model", int(number)) else 1 for n in range(1, 8)}
    assert called == {n: 2 if (kind, n) == ("tool", int(number)) else 1 for n in range(1, 7)}
    # The model is told once, at the first request made after the resume, and from then on.
    resumed_at = int(number) if kind == "model" else int(number) + 1
    after = 8 - resumed_at  # requests the resumed process made
    assert [r["request"] for r in requests[-after:]] == list(range(resumed_at, 8))
    assert [r["notices"] for r in requests[-after:]] == [1] * after
    assert [r["notices"] for r in requests[:-after]] == [0] * (len(requests) - after)

    # The run log: each round and tool call once, the interruption and the resume recorded.
    events = [json.loads(line) for line in lines(tmp_path / "run.jsonl")]
    types = Counter(e["type"] for e in events)
    assert types["interrupted"] == 1 and types["resumed"] == 1
    assert sorted(e["data"]["round"] for e in events if e["type"] == "round") == list(range(1, 8))
    assert types["tool"] == ROUNDS
    resumed = next(e for e in events if e["type"] == "resumed")
    replayed = resumed["data"]["replayed"]
    assert replayed.get("model", 0) == resumed_at - 1


@pytest.mark.parametrize("hang", ["prepared:1", "model:1", "finish:1"])
def test_every_resumed_log_has_one_start_and_one_result(tmp_path: Path, hang: str) -> None:
    """Killed after the preparation's checkpoint and before the loop wrote ``start`` (the
    resumed run writes it), inside the first request (``start`` was written: not again), or
    after the ``result`` line and before its checkpoint (nothing more is written)."""
    db = str(tmp_path / "runs.sqlite")
    first = child("start", db, "run-1", str(tmp_path), str(ROUNDS), "--hang", hang)
    wait_for(tmp_path / "hanging", first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    before = [json.loads(line)["type"] for line in lines(tmp_path / "run.jsonl")]
    assert before.count("start") == (0 if hang == "prepared:1" else 1)
    assert before.count("result") == (1 if hang == "finish:1" else 0)

    second = child("resume", db, "run-1", str(tmp_path))
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["rounds"] == ROUNDS + 1
    events = [json.loads(line) for line in lines(tmp_path / "run.jsonl")]
    types = [e["type"] for e in events]
    assert (types.count("start"), types.count("result")) == (1, 1), types
    assert types[-1] == "result"
    assert sorted(e["data"]["round"] for e in events if e["type"] == "round") == list(range(1, 8))
    if hang == "finish:1":
        assert "resumed" not in types  # it had ended: nothing after its result
    else:
        assert types.index("start") < types.index("resumed") < types.index("result")
        assert types.count("resumed") == 1


CARD_TEXT = "---\ntitle: A card\nstate: New\n---\nDo the work.\n"


@pytest.mark.parametrize("when", ["closing", "finished"])
def test_a_cancel_after_the_final_answer_is_honoured_or_refused_whole(
    tmp_path: Path, when: str
) -> None:
    """``closing``: the cancel lands after the model's final answer, before the end's checkpoint:
    honoured (card Failed, ``cancelled`` and ``result`` lines, the run cancelled). ``finished``:
    after that checkpoint: refused (card Done, one ``result`` line, the run done, and a second
    cancel says it has ended)."""
    from loopkit import Card, CardState

    (tmp_path / "card.md").write_text(CARD_TEXT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(CHILD.with_name("cancel_child.py")), str(tmp_path / "runs.sqlite"),
         str(tmp_path), when],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    events = [json.loads(line) for line in lines(tmp_path / "run.jsonl")]
    types = [e["type"] for e in events]
    assert (types.count("start"), types.count("result"), types[-1]) == (1, 1, "result"), types
    card = Card.load(tmp_path / "card.md")
    if when == "closing":
        assert "Cancelled" in outcome["ended"], outcome  # DBOS tells the caller so
        assert outcome["state"] == "cancelled"
        assert types[-2:] == ["cancelled", "result"]
        assert events[-1]["data"]["status"] == "cancelled"
        assert "after the model's final answer: 'RESULT: done'" in events[-1]["data"]["reason"]
        assert card.state == CardState.FAILED
    else:
        # The workflow returned, but its outcome could not be written over the cancel (DBOS
        # tells its caller it was cancelled): the records read its end's checkpoint.
        assert outcome["state"] == "done", outcome
        assert "cancelled" not in types and events[-1]["data"]["status"] == "done"
        assert card.state == CardState.DONE
    assert "has ended" in outcome["again"], outcome


def test_a_run_killed_after_its_end_was_recorded_has_nothing_to_resume(tmp_path: Path) -> None:
    """Killed between its end's checkpoint and the workflow's own end: the run reads as done
    (not interrupted), and the demo's account of the kill says there is nothing to resume."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from loopkit.cards import RunnerConfig
    from loopkit.cards.durable import list_card_runs
    from loopkit.demo.durable_runs import after_a_killed_run, runtime_for

    (tmp_path / "card.md").write_text(CARD_TEXT, encoding="utf-8")
    db = tmp_path / "runs.sqlite"
    since = datetime.now(UTC) - timedelta(seconds=1)
    proc = subprocess.Popen(
        [sys.executable, str(CHILD.with_name("cancel_child.py")), str(db), str(tmp_path), "killed"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(tmp_path / "hanging", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    config = RunnerConfig(database_url=f"sqlite:///{db}", runs_dir=tmp_path / "runs")

    async def read() -> tuple[list[str], tuple[str, int]]:
        async with runtime_for(config) as runtime:
            interrupted = [r.run_id for r in await list_card_runs(runtime, state="interrupted")]
        told = await after_a_killed_run(config, str(tmp_path / "card.md"), since)
        return interrupted, told

    interrupted, (told, status) = asyncio.run(read())
    assert interrupted == []
    assert "had finished (done) before its process was killed: nothing to resume" in told, told
    assert status == 0


FAILING = """
import asyncio, json, sys
from loopkit.durable import DurableRuntime, durable_workflow
from loopkit.errors import BudgetExceededError, ProviderError

@durable_workflow("tests.failing")
async def failing(kind: str) -> None:
    if kind == "provider":
        raise ProviderError("overloaded", retryable=True, status_code=529, provider="anthropic")
    raise BudgetExceededError("budget spent", used=400_100, budget=400_000)

async def main() -> None:
    from dbos import DBOS, SetWorkflowID
    async with DurableRuntime(sys.argv[1], log_level="CRITICAL") as runtime:
        with SetWorkflowID(sys.argv[2]):
            try:
                await failing(sys.argv[2])
            except Exception:
                pass
        record = await runtime.get_run(sys.argv[2])
        handle = await DBOS.retrieve_workflow_async(sys.argv[2])
        try:
            await handle.get_result()
        except Exception as e:
            print(json.dumps({"error": record.error, "type": type(e).__name__, "fields": vars(e)}))

asyncio.run(main())
"""


@pytest.mark.parametrize("kind", ["provider", "budget"])
def test_a_failed_durable_runs_error_reads_back_with_its_fields(tmp_path: Path, kind: str) -> None:
    """DBOS stores a failed workflow's error pickled; reading the run back unpickles it."""
    db = str(tmp_path / "runs.sqlite")
    done = subprocess.run(
        [sys.executable, "-c", FAILING, db, kind], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    if kind == "provider":
        assert got["type"] == "ProviderError" and got["error"].startswith("ProviderError: ")
        assert got["fields"] == {
            "retryable": True, "status_code": 529, "retry_after": None, "provider": "anthropic"
        }  # fmt: skip
    else:
        assert got["type"] == "BudgetExceededError"
        assert got["fields"] == {"used": 400_100, "budget": 400_000}
