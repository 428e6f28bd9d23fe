"""Every way a demo run can fail ends with the card Failed and the reason in the log and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import Card, CardState

from .helpers import ROOT, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

BROKEN_MODEL = ROOT / "examples" / "invoice_app" / "model.py"


def transcript(tmp_path: Path, turns: list[dict]) -> Path:
    path = tmp_path / "transcript.json"
    path.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    return path


def assert_failed(run, reason_part: str) -> None:
    assert run.returncode == 1, run.output
    assert Card.load(run.card).state is CardState.FAILED
    last = run.events()[-1]
    assert last["type"] == "result" and last["data"]["status"] == "failed"
    assert reason_part in last["data"]["reason"], last["data"]["reason"]
    assert "RESULT: failed" in run.output and reason_part in " ".join(run.output.split())


def test_a_build_that_fails(tmp_path: Path) -> None:
    assert BROKEN_MODEL.read_text().count("def total(self)") == 1
    turns = [
        {
            "calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "invoice_app/model.py",
                        "old": "def total(self)",
                        "new": "def total(self) oops",
                    },
                    "expect": {"contains": "Edited invoice_app/model.py"},
                }
            ]
        },
        {
            "calls": [
                {
                    "name": "build_app",
                    "arguments": {},
                    "expect": {"contains": ["Build failed", "invoice_app/model.py"]},
                }
            ]
        },
        {"text": "The build fails and I cannot fix it.\nRESULT: failed: the build fails"},
    ]
    card = copy_card(tmp_path, "total-ignores-the-discount")
    run = run_demo(tmp_path, card, "--transcript", str(transcript(tmp_path, turns)))
    assert_failed(run, "the build fails")
    tool_events = [e for e in run.events() if e["type"] == "tool"]
    assert "invoice_app/model.py" in tool_events[1]["data"]["result"]
    # nothing was committed: the scratch repository has only its initial commit
    assert run.git("rev-list", "--count", "HEAD").strip() == "1"


def test_a_missing_result_line(tmp_path: Path) -> None:
    turns = [{"text": "I looked at it and everything seems fine."}]
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    run = run_demo(tmp_path, card, "--transcript", str(transcript(tmp_path, turns)))
    assert_failed(run, "did not end with a RESULT line")


def test_the_ui_server_not_starting(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    run = run_demo(
        tmp_path,
        card,
        env={"LOOPKIT_UI_SERVER__COMMAND": '["/nonexistent/ui-server"]'},
    )
    assert_failed(run, "/nonexistent/ui-server")


def test_a_card_that_does_not_parse(tmp_path: Path) -> None:
    card = tmp_path / "bad.md"
    card.write_text("---\nstate: New\ncategory: Bug\n---\nNo title here.\n", encoding="utf-8")
    run = run_demo(tmp_path, card)
    assert run.returncode == 2, run.output
    assert "state: Failed" in card.read_text()
    assert "title: Field required" in " ".join(run.output.split())
    last = run.events()[-1]
    assert last["data"]["status"] == "failed" and "title: Field required" in last["data"]["reason"]


def test_a_config_that_is_not_valid(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('model = "x"\nmax_rounds = "many"\n')
    run = run_demo(
        tmp_path, copy_card(tmp_path, "delete-asks-for-confirmation"), "--config", str(config)
    )
    assert run.returncode == 2
    assert "max_rounds: Input should be a valid integer" in run.output


def test_a_tools_table_that_is_not_valid(tmp_path: Path) -> None:
    config = tmp_path / "tools.toml"
    config.write_text("[tools]\nbuild_timeout_s = -1\n")
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    run = run_demo(tmp_path, card, "--config", str(config))
    assert run.returncode == 2, run.output
    assert "[tools]: build_timeout_s: Input should be greater than 0" in " ".join(
        run.output.split()
    )
    assert Card.load(card).state is CardState.NEW  # the run never started


def test_an_interrupted_run_marks_the_card_failed_and_ends_its_log(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    card = copy_card(tmp_path, "validate-quantity-and-price")
    runs = tmp_path / "runs"
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(runs), "LOOPKIT_HEADLESS": "always"}
    env.pop("LOOPKIT_IN_HEADLESS_SESSION", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopkit.demo", str(card)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300  # a deadline for a loaded machine, not a timing claim
    while time.monotonic() < deadline:  # interrupt once the app is running
        logs = list(runs.glob("*/run.jsonl"))
        if logs and '"name":"start_app"' in logs[0].read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert Card.load(card).state is CardState.FAILED
    log = next(runs.glob("*/run.jsonl"))
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["type"] == "result" and last["data"]["reason"] == "the run was interrupted"
    assert "RESULT: failed: the run was interrupted" in " ".join(output.split())
    # the app the run started is gone
    assert subprocess.run(["pgrep", "-f", f"{runs}.*invoice_app"], check=False).returncode == 1
