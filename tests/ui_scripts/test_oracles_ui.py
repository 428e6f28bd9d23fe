"""Each oracle against a real app under Xvfb: the event hook vs polling, a process that ends,
a process that stops answering; the CLI's exit status; a generated walk that runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import OracleSuite, ResultStore, load_script, write_walk
from loopkit_ui.scripts.app import AppProcess
from loopkit_ui.scripts.findings import fingerprint
from loopkit_ui.scripts.model import AppConfig, OracleConfig

from .conftest import FLASH_APP, LIBRARY, PYTHON, REPO, SCRIPTS, RunnerFactory

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def _flash_script(tmp_path: Path, steps: list[dict[str, object]]) -> Path:
    path = tmp_path / "flash.json"
    path.write_text(
        json.dumps(
            {"app": {"command": ["${python}", str(FLASH_APP)], "call_timeout": 2}, "steps": steps}
        )
    )
    return path


FLASH_STEPS: list[dict[str, object]] = [
    {"type": "action", "action": "click", "target": "FlashButton"},
    # The dialog opens one second after the click and closes 150 ms later: during this step.
    {"type": "sleep", "seconds": 2},
    {"type": "assert", "target": "CountLabel", "equals": "Flashes: 1"},
]


def test_event_hook_sees_a_window_that_already_closed(
    tmp_path: Path, make_runner: RunnerFactory
) -> None:
    script = _flash_script(tmp_path, FLASH_STEPS)
    with_hook = make_runner(tmp_path / "hook").run(script)
    assert with_hook.passed  # a warning, not an error
    windows = [f for f in with_hook.findings if f.kind == "new_window"]
    assert [(f.oracle, f.title, f.step, f.severity) for f in windows] == [
        ("window_event", "Notice", "steps[1]", "warning")
    ]
    assert "closed again before it could be read" in windows[0].summary
    # Polling alone misses it: the window came and went between two checks.
    polling = make_runner(tmp_path / "poll", event_hook=False).run(script)
    assert polling.passed and polling.steps[2].message == "text = 'Flashes: 1'"
    assert [f for f in polling.findings if f.kind == "new_window"] == []


def test_polling_finds_the_crash_dialog_without_the_hook(
    tmp_path: Path, make_runner: RunnerFactory
) -> None:
    result = make_runner(event_hook=False).run(SCRIPTS / "crashes" / "open_malformed_json.json")
    crash = [f for f in result.findings if f.kind == "crash_dialog"]
    assert [f.oracle for f in crash] == ["window_poll"]
    # Same fingerprint as when the event hook sees it (kind, not oracle, is hashed).
    assert crash[0].fingerprint == fingerprint(
        "crash_dialog", "Invoice Editor", crash[0].stack_line
    )
    assert crash[0].stack_line and "main_window.py" in crash[0].stack_line
    assert result.status == "failed"


def test_process_ended_is_reported_after_the_step_that_ended_it(
    tmp_path: Path, make_runner: RunnerFactory
) -> None:
    steps = [
        {"type": "action", "action": "click", "target": "ExitButton", "name": "exit (expected)",
         "expect_findings": ["process_ended"]},
        {"type": "assert", "target": "CountLabel", "equals": "Flashes: 0"},
    ]  # fmt: skip
    result = make_runner().run(_flash_script(tmp_path, steps))
    ended = [f for f in result.findings if f.kind == "process_ended"]
    assert [(f.title, f.step, f.expected) for f in ended] == [("exit status 3", "steps[0]", True)]
    assert result.steps[0].status == "passed"
    assert result.steps[1].status == "failed"
    assert result.steps[1].message == "the application is not running"
    assert result.app_exit == 3 and result.status == "failed"


def test_not_responding_when_the_app_is_stopped(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    config = AppConfig(command=[PYTHON, str(FLASH_APP)], call_timeout=1.0)
    app = AppProcess(config, headless_desktop.child_env(), tmp_path / "out.log")
    suite = OracleSuite(OracleConfig(), ident="flash_app")
    try:
        app.start()
        suite.attach(app)
        assert suite.check("steps[0]") == []
        assert app.pid is not None
        os.kill(app.pid, signal.SIGSTOP)  # the UI thread can no longer answer
        try:
            hung = suite.check("steps[1]")
            again = suite.check("steps[2]")
        finally:
            os.kill(app.pid, signal.SIGCONT)
        assert [(f.kind, f.step) for f in hung] == [("not_responding", "steps[1]")]
        assert "did not answer within 1.0 s" in hung[0].summary
        assert again == []  # reported once per hang
        assert suite.check("steps[3]") == []  # answering again
    finally:
        # The fixture app has no SIGTERM handler: it ends by the signal (it was running again).
        assert app.close() == -signal.SIGTERM
        suite.close()


def _cli(desktop: HeadlessDesktop, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopkit_ui.scripts", *args],
        env=desktop.child_env(),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_cli_exit_status_tells_pass_fail_and_invalid(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    passing = _cli(headless_desktop, "run", "--no-system-log", "--screenshots", "none", "--out",
                   str(out), str(SCRIPTS / "regression" / "missing_file.json"))  # fmt: skip
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert passing.stdout.startswith("PASSED  missing file is a handled error")
    failing = _cli(headless_desktop, "run", "--no-system-log", "--screenshots", "none", "--out",
                   str(out), str(SCRIPTS / "crashes" / "open_wrong_shape.json"))  # fmt: skip
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "FAILED  open valid JSON of the wrong shape" in failing.stdout
    assert "oracle: crash dialog 'Invoice Editor': InvoiceFormatError" in failing.stdout
    assert [r["status"] for r in ResultStore(out / "results.sqlite").runs()] == ["passed", "failed"]
    # An unknown step type stops everything at load: no app, no run folder, no row.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"imports": [str(LIBRARY)], "steps": [
        {"type": "action", "action": "click", "target": "AddItemButton"},
        {"type": "klick", "target": "SaveButton"}]}))  # fmt: skip
    invalid = _cli(headless_desktop, "run", "--out", str(tmp_path / "never"), str(bad))
    assert invalid.returncode == 2
    assert "steps[1]: unknown step type 'klick'" in invalid.stderr
    assert not (tmp_path / "never").exists()


def test_generated_walk_runs_and_passes(tmp_path: Path, make_runner: RunnerFactory) -> None:
    walk = write_walk(SCRIPTS / "walk_operations.json", 7, 8, tmp_path / "walk7.json")
    assert load_script(walk).name == "random walk seed 7 (8 operations)"
    result = make_runner(screenshots="failures").run(walk)
    assert result.passed, [(s.path, s.message) for s in result.steps if s.status != "passed"]
    logs = [s.message for s in result.steps if s.type == "log"]
    assert len(logs) == 8 and logs[0].startswith("operation 1/8: ")
    assert result.findings == []
