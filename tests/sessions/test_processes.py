"""Stored sessions across processes: a restart, a SIGKILL mid-batch, writers racing from
several processes (every persistent store: the ``persistent_store`` fixture)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions import IncompleteStepError
from tests.sessions.conftest import Store, call, child_env, dump, result, say

CHILD = Path(__file__).with_name("session_child.py")


def start_child(program: dict[str, Any]) -> subprocess.Popen[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(program, file)
    child = subprocess.Popen(
        [sys.executable, str(CHILD), file.name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    weakref.finalize(child, os.unlink, file.name)
    return child


def run_child(program: dict[str, Any]) -> list[Any]:
    child = start_child(program)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return json.loads(out.splitlines()[-1])["results"]


def step(tag: str, size: int = 0) -> list[ChatMessage]:
    """One whole step: a user message, a call, its result, the answer (``size`` characters of
    filler in the result, to make a batch large)."""
    return [say("user", tag), call(tag), result(tag, text="x" * size), say("assistant", tag)]


async def test_a_session_outlives_the_process_that_wrote_it(persistent_store: Store) -> None:
    first = [*step("one"), call("open", name="build"), result("open")]
    results = run_child(
        {
            "open": persistent_store.open_source("s"),
            "ops": [
                ["add", dump(first)],
                ["set_metadata", {"card": "delete", "round": 3}],
                ["pop"],  # leaves the build call open, for the next process to answer
            ],
        }
    )
    assert results[2]["role"] == "tool"
    session = persistent_store.session("s")
    assert dump(await session.get_messages()) == dump(first[:-1])
    assert await session.get_metadata() == {"card": "delete", "round": 3}
    try:
        await session.add_messages([say("user", "next")])
        raise AssertionError("the open call did not survive the restart")
    except IncompleteStepError as error:
        assert "build (open)" in str(error)
    await session.add_messages([result("open", text="again"), say("assistant", "ok")])
    # ...and a third process reads what this one wrote.
    (history,) = run_child({"open": persistent_store.open_source("s"), "ops": [["get", 3]]})
    assert [m["role"] for m in history] == ["assistant", "tool", "assistant"]
    assert history[1]["contents"][0]["result"] == "again open"


async def test_a_process_killed_mid_batch_leaves_whole_batches(persistent_store: Store) -> None:
    batches = [step(f"b{i}") for i in range(3)]
    # The fourth batch is large (about 4 MB: SQLite spills it to the WAL before the commit).
    batches.append([m for i in range(1000) for m in step(f"big{i}", size=1000)])
    program = {
        "open": persistent_store.open_source("s"),
        "ops": [["add", dump(b)] for b in batches],
        "pause_in_commit_of": 3,
    }
    child = start_child(program)
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line.strip())
        if line.strip() == "paused":
            break
    assert lines == ['{"done": 0}', '{"done": 1}', '{"done": 2}', "paused"], (
        lines,
        child.stderr.read() if child.stderr else "",
    )
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    session = persistent_store.session("s")
    assert dump(await session.get_messages()) == dump([m for b in batches[:3] for m in b])
    await session.add_messages(step("after"))  # the store is usable and nothing is left open
    assert len(await session.get_messages()) == 16


async def test_writers_in_several_processes_keep_whole_batches(
    persistent_store: Store, tmp_path: Path
) -> None:
    writers, batches = 3, 40
    go = tmp_path / "go"
    children = [
        start_child(
            {
                "open": persistent_store.open_source("s"),
                "ops": [["add", dump(step(f"p{w}-{n}"))] for n in range(batches)],
                "go_file": str(go),
                # 40 batches spread over about 200 ms: writers a scheduler slice apart still
                # overlap (without it, one once wrote all 40 before the next one woke up)
                "gap_s": 0.005,
            }
        )
        for w in range(writers)
    ]
    for child in children:  # all connected before any writes
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr and child.stderr.read()
    go.touch()
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    history = await persistent_store.session("s").get_messages()
    assert len(history) == writers * batches * 4
    order: dict[str, list[int]] = {}
    sequence = []
    for start in range(0, len(history), 4):
        whole = history[start : start + 4]
        tag = whole[0].text
        assert dump(whole) == dump(step(tag)), start
        writer, n = tag.split("-")
        order.setdefault(writer, []).append(int(n))
        sequence.append(writer)
    assert order == {f"p{w}": list(range(batches)) for w in range(writers)}
    switches = sum(a != b for a, b in itertools.pairwise(sequence))
    assert switches > writers, f"the writers never overlapped: {sequence}"
