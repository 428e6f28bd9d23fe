"""A tool call that waits for a person's approval is a durable wait: the process running the
run is SIGKILLed while it waits, the answer is sent from another process meanwhile, and a new
process that takes the run over reads it and goes on (``approval_child.py``; real processes, a
real SQLite database). The run log says who answered, once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

CHILD = Path(__file__).with_name("approval_child.py")


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def log_lines(work: Path) -> list[dict[str, object]]:
    path = work / "run.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for_request(work: Path, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not any(line["type"] == "approval_requested" for line in log_lines(work)):
        if proc.poll() is not None:
            raise AssertionError(f"the child ended early: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the run never asked for the approval")
        time.sleep(0.05)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> object:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("decision", ["yes", "no"])
def test_an_approval_survives_the_process_being_killed_while_it_waits(
    tmp_path: Path, decision: str
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "work"
    work.mkdir()
    first = child("start", db, "run-a", str(work))
    wait_for_request(work, first)
    time.sleep(0.3)  # the wait (its deadline) is recorded before the log line is read
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert not (work / "tool.log").exists()  # nothing ran without the answer

    assert finish(child("answer", db, "run-a", "1", decision, "ann")) == "sent"
    # a second answer to the same approval changes nothing: the first counts
    other = "no" if decision == "yes" else "yes"
    assert finish(child("answer", db, "run-a", "1", other, "bob")) == "sent"

    output = finish(child("resume", db, "run-a", str(work)))
    lines = log_lines(work)
    kinds = [line["type"] for line in lines]
    assert kinds.count("approval_requested") == 1, kinds
    answers = [line["data"] for line in lines if line["type"] == "approval"]
    assert len(answers) == 1
    assert answers[0]["by"] == "ann" and answers[0]["approved"] is (decision == "yes")
    assert answers[0]["number"] == 1 and answers[0]["name"] == "deploy"
    # the resume is reported between the request and the answer
    assert kinds.index("approval_requested") < kinds.index("resumed") < kinds.index("approval")
    ran = (work / "tool.log").read_text().splitlines() if (work / "tool.log").exists() else []
    if decision == "yes":
        assert ran == ["staging"]
        assert "deployed to staging" in json.dumps(output)
    else:
        assert ran == []
        assert "was not approved" in json.dumps(output)


def test_an_approval_answered_while_the_run_waits_goes_on_at_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "work"
    work.mkdir()
    run = child("start", db, "run-b", str(work))
    wait_for_request(work, run)
    assert finish(child("answer", db, "run-b", "1", "yes", "slack:U123")) == "sent"
    output = finish(run)
    assert "deployed to staging" in json.dumps(output)
    answers = [line["data"] for line in log_lines(work) if line["type"] == "approval"]
    assert [a["by"] for a in answers] == ["slack:U123"]


def test_an_approval_outside_a_durable_run_is_refused_with_the_fix() -> None:
    import asyncio

    from loopkit import FunctionCallContent
    from loopkit.durable.approval import DurableApprover
    from loopkit.durable.errors import DurableError

    call = FunctionCallContent(call_id="c1", name="deploy", arguments={})
    with pytest.raises(DurableError, match="only as a durable run"):
        asyncio.run(DurableApprover()(call))
    with pytest.raises(ValueError, match="timeout_s"):
        DurableApprover(timeout_s=0)
