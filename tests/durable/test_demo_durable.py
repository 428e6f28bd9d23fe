"""``python -m loopkit.demo --durable`` killed with SIGKILL mid-run, then ``--resume``.

Real processes throughout: the demo re-runs itself inside ``python -m loopkit_ui.session`` (Xvfb,
D-Bus, AT-SPI) with the UI server, the app and the tools; the test SIGKILLs the run's own process
(inside the desktop) while a tool call runs, lists the interrupted run and resumes it in a new
demo process. The scripted model is strict: every tool result the resumed run sends must match the
transcript, so a conversation rebuilt wrongly from the checkpoints fails the run.
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

from loopkit import Card, CardState
from loopkit.demo.desktop import RUN_PROCESS_NAME
from tests.demo.helpers import (
    ROOT,
    cmdline,
    copy_card,
    demo_env,
    descendants,
    run_demo,
    start_demo,
    wait_for_round,
)
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = [pytest.mark.integration, pytest.mark.ui, pytest.mark.slow]

CARD = "delete-asks-for-confirmation"


def card_rounds() -> list[int]:
    """The round numbers of a whole run of the card: one a turn of its bundled transcript."""
    from loopkit import Script
    from loopkit.demo.run import bundled_transcripts

    return list(range(1, len(Script.load(bundled_transcripts()[CARD]).turns) + 1))


def slow_build_config(tmp_path: Path, seconds: int = 30) -> Path:
    """The first build takes ``seconds`` (the kill lands inside that build_app call), later ones
    none."""
    config = tmp_path / "slow-build.toml"
    marker = tmp_path / "built-once"
    code = (
        f"import pathlib, time; p = pathlib.Path({str(marker)!r}); first = not p.exists(); "
        f"p.touch(); time.sleep({seconds} if first else 0)"
    )
    argv = [sys.executable, "-c", code]
    config.write_text(f"[tools]\nbuild_command = {json.dumps(argv)}\n", encoding="utf-8")
    return config


def parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def runs_the_card(pid: int, demo_pid: int) -> bool:
    """Whether ``pid`` (a ``python -m loopkit.demo`` process) is the run inside the desktop:
    the demo's forked child (named so; a fork about to exec a daemon has the demo's name), or
    the command the desktop session started."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        parent_name = Path(f"/proc/{parent(pid)}/comm").read_text().strip()
    except OSError:
        return False
    if name == RUN_PROCESS_NAME:
        # A fork of the run about to exec (git, the build) carries the run's name for a moment.
        return parent_name != RUN_PROCESS_NAME
    return "loopkit_ui.session" in cmdline(parent(pid))


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopkit.demo", *args],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_durable_demo_run_killed_inside_a_tool_call_is_resumed_to_done(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    slow = slow_build_config(tmp_path)
    outer = start_demo(tmp_path, card, "--durable", "--config", str(slow))
    wait_for_round(outer, runs, "build_app")
    # The run's own process: the demo inside the desktop (a fork about to exec shows the same
    # command line for a moment, so look at the ones that keep it).
    inner = [
        p
        for p in descendants(outer.pid)
        if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
        and runs_the_card(p, outer.pid)
    ]
    assert len(inner) == 1, [(p, cmdline(p)) for p in descendants(outer.pid)]
    deadline = time.monotonic() + 300  # a deadline for a loaded machine, not a timing claim
    while not (tmp_path / "built-once").exists():  # the build command itself is running
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.02)
    os.kill(inner[0], signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert outer.returncode == 130, output
    assert "resume it with" in output
    assert Card.load(card).state == CardState.IN_WORK
    assert not descendants(outer.pid)

    listed = demo(tmp_path, "--resume")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "interrupted" in listed.stdout and "Deleting an item" in listed.stdout

    # The resumed run uses the settings recorded with it (the same build command, quick now).
    resumed = demo(tmp_path, "--resume", "all")
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, text
    assert "RESULT: done" in text
    assert Card.load(card).state == CardState.DONE

    log = next(runs.glob("*/run.jsonl"))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    types = Counter(e["type"] for e in events)
    assert (types["start"], types["interrupted"], types["resumed"], types["result"]) == (1, 1, 1, 1)
    rounds = [e["data"]["round"] for e in events if e["type"] == "round"]
    assert rounds == card_rounds()  # every round once, in order, across both processes
    builds = [e for e in events if e["type"] == "tool" and e["data"]["name"] == "build_app"]
    assert len(builds) == 1  # the build in flight ran again: logged once, by the resumed run
    resumed_line = next(e for e in events if e["type"] == "resumed")
    # The rounds up to the one that asked for the build were replayed, not asked again.
    assert resumed_line["data"]["replayed"]["model"] == _build_round(CARD)
    assert events.index(resumed_line) < events.index(builds[0])
    assert events[-1]["type"] == "result" and events[-1]["data"]["status"] == "done"

    again = demo(tmp_path, "--resume")
    assert "No interrupted runs" in again.stdout


def test_a_durable_test_run_killed_mid_run_keeps_its_steps_in_the_report(tmp_path: Path) -> None:
    """The tester's record (steps, findings, regression verdicts) survives the kill: the
    resumed run replays the earlier record_step calls from their checkpoints without running
    them, and its report still lists every step."""
    card = copy_card(tmp_path, CARD)
    developed = run_demo(tmp_path, card)
    assert developed.returncode == 0, developed.output
    repo = developed.repo()
    for log in (tmp_path / "runs").glob("*/run.jsonl"):
        log.rename(log.with_name("develop.jsonl"))  # wait_for_round reads the test run's log
    outer = start_demo(tmp_path, card, "--role", "test", "--repo", str(repo), "--durable")
    wait_for_round(outer, tmp_path / "runs", "write_regression_script")
    inner = [
        p
        for p in descendants(outer.pid)
        if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
        and runs_the_card(p, outer.pid)
    ]
    assert len(inner) == 1, [(p, cmdline(p)) for p in descendants(outer.pid)]
    os.kill(inner[0], signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert outer.returncode == 130, output

    resumed = demo(tmp_path, "--resume", "all")
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, text
    assert "RESULT: passed" in text
    log = next((tmp_path / "runs").glob("*/run.jsonl"))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    steps = [e for e in events if e["type"] == "tool" and e["data"]["name"] == "record_step"]
    resumed_at = next(i for i, e in enumerate(events) if e["type"] == "resumed")
    assert steps and all(events.index(e) < resumed_at for e in steps)  # all before the kill
    reports = [e["data"] for e in events if e["type"] == "test_report"]
    assert [(r["verdict"], r["steps"]) for r in reports] == [("passed", len(steps))], reports
    html = Path(reports[0]["path"]).read_text("utf-8")
    assert "No leaves everything as is" in html


def test_a_durable_demo_run_killed_inside_a_model_request_is_resumed_to_done(
    tmp_path: Path,
) -> None:
    """Through litellm's real HTTP path to a fake OpenAI server on 127.0.0.1: the run is killed
    while the server holds request 11 open; the resumed run asks it again and never repeats a
    completed one (the server counts them). Request 11 is where the transcript's app is stopped
    (round 9 stopped it, round 11 starts it again): a transcript cannot react to the notice that
    the app is gone, a real model would (start_app again)."""
    import dataclasses

    from loopkit import FunctionResultContent, Script
    from loopkit.demo.run import bundled_transcripts
    from tests.demo.test_demo_litellm import fake_turns, tool_results
    from tests.fakes.fake_llm_server import FakeLLMServer

    key, k = "sk-test-0123456789abcdefghij", 11
    script = Script.load(bundled_transcripts()[CARD])
    turns = fake_turns(script)
    # Request k is answered only after 120 s (the kill lands first); its answer is served again,
    # at once, to the resumed run's request k.
    held = dataclasses.replace(turns[k - 1], delay=120)
    card = copy_card(tmp_path, CARD)
    runs = tmp_path / "runs"
    with FakeLLMServer("openai") as server:
        server.script([*turns[: k - 1], held, *turns[k - 1 :]])
        env = {"LOOPKIT_API_BASE": server.api_base, "OPENAI_API_KEY": key}
        outer = start_demo(tmp_path, card, "--durable", "--model", "openai/gpt-5", env=env)
        deadline = time.monotonic() + 300  # a deadline for a loaded machine, not a timing claim
        while len([r for r in server.requests if r.method == "POST"]) < k:
            assert outer.poll() is None, outer.communicate()[0]
            assert time.monotonic() < deadline, "the run never reached request 11"
            time.sleep(0.05)
        inner = [
            p
            for p in descendants(outer.pid)
            if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
            and runs_the_card(p, outer.pid)
        ]
        assert len(inner) == 1
        os.kill(inner[0], signal.SIGKILL)
        output, _ = outer.communicate(timeout=120)
        assert outer.returncode == 130, output

        resumed = subprocess.run(
            [sys.executable, "-m", "loopkit.demo", "--resume", "all"],
            cwd=ROOT,
            env={**demo_env(tmp_path), **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        requests = [r for r in server.requests if r.method == "POST"]
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, text
    assert Card.load(card).state == CardState.DONE
    # every request completed once; only request k (in flight at the kill) was sent twice.
    assert len(requests) == len(script.turns) + 1
    sizes = [len(r.body["messages"]) for r in requests]
    assert sizes[k - 1] == sizes[k] - 1  # the resumed request k also carries the notice
    assert sizes[: k - 1] == sorted(set(sizes[: k - 1]))
    assert sizes[k:] == sorted(set(sizes[k:]))
    notices = [
        i
        for i, r in enumerate(requests, start=1)
        if any(
            "interrupted and has been resumed" in str(m.get("content")) for m in r.body["messages"]
        )
    ]
    assert notices[0] == k + 1  # the resumed request k, and every request after it
    assert notices == list(range(k + 1, len(requests) + 1))
    # The resumed run's requests carry the same tool results the transcript expects.
    for n, turn in enumerate(script.turns[:-1], start=1):
        body = requests[n if n < k else n + 1].body
        got = tool_results(body, "openai")
        for i, call in enumerate(turn.calls, start=1):
            assert call.expect is not None
            result = FunctionResultContent(call_id="x", result=got[call.id or f"call_{n}_{i}"])
            assert call.expect.problems(result) == [], (n, call.name)
    log = next(runs.glob("*/run.jsonl"))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["data"]["round"] for e in events if e["type"] == "round"] == card_rounds()
    resumed_line = next(e for e in events if e["type"] == "resumed")
    assert resumed_line["data"]["replayed"]["model"] == k - 1
    assert key not in log.read_text() and key not in text


def _build_round(card: str) -> int:
    """The round (from 1) in which ``card``'s bundled transcript asks for the build."""
    from loopkit import Script
    from loopkit.demo.run import bundled_transcripts

    turns = Script.load(bundled_transcripts()[card]).turns
    return next(
        n for n, t in enumerate(turns, start=1) if any(c.name == "build_app" for c in t.calls)
    )


def test_a_durable_run_killed_before_its_first_checkpoint_says_there_is_nothing_to_resume(
    tmp_path: Path,
) -> None:
    """Killed while it still imports (before the run is in the database): the demo says nothing
    was recorded instead of pointing at ``--resume``, and ``--resume all`` says there is
    nothing to resume."""
    card = copy_card(tmp_path, CARD)
    outer = start_demo(tmp_path, card, "--durable")
    deadline = time.monotonic() + 60
    while True:
        inner = [
            p
            for p in descendants(outer.pid)
            if cmdline(p).startswith(f"{sys.executable} -m loopkit.demo ")
            and runs_the_card(p, outer.pid)
        ]
        if inner:
            break
        assert outer.poll() is None and time.monotonic() < deadline, "no run process appeared"
        time.sleep(0.005)
    os.kill(inner[0], signal.SIGKILL)
    output, _ = outer.communicate(timeout=120)
    assert "killed before its first checkpoint: nothing was recorded" in output, output
    assert "--resume" not in output.split("abnormally", 1)[-1], output
    assert Card.load(card).state == CardState.NEW
    again = demo(tmp_path, "--resume", "all")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing to resume" in again.stdout, again.stdout
