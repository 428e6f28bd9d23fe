"""The script runner against the real invoice app under Xvfb (AT-SPI), with a real rsyslogd.

One module-scoped batch runs the regression suite and the two crash scripts through one runner
and one database; the tests read what it produced.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import ResultStore, RunnerConfig, RunResult, ScriptRunner, SyslogFileSource

from .conftest import SCRIPTS, Syslog

pytestmark = [pytest.mark.ui, pytest.mark.integration]

REGRESSION = sorted((SCRIPTS / "regression").glob("*.json"))
CRASHES = sorted((SCRIPTS / "crashes").glob("*.json"))


@dataclass
class Batch:
    runner: ScriptRunner
    suite: list[RunResult]
    crashes: list[RunResult]
    db: Path


@pytest.fixture(scope="module")
def batch(
    headless_desktop: HeadlessDesktop, rsyslog: Syslog, tmp_path_factory: pytest.TempPathFactory
) -> Batch:
    out = tmp_path_factory.mktemp("invoice-runs")
    config = RunnerConfig(
        out_dir=out,
        env=headless_desktop.env,
        app_env={"INVOICE_APP_SYSLOG": str(rsyslog.socket)},
    )
    runner = ScriptRunner(config, system_log=SyslogFileSource(rsyslog.file))
    suite = runner.run_many(REGRESSION)
    crashes = runner.run_many(CRASHES)
    return Batch(runner, suite, crashes, config.database)


def _explain(result: RunResult) -> str:
    lines = [f"{result.name}: {result.status} {result.error or ''}"]
    lines += [f"  {s.path} {s.status}: {s.message}" for s in result.steps if s.status != "passed"]
    lines += [f"  finding {f.kind}: {f.summary}" for f in result.findings]
    return "\n".join(lines)


def test_regression_suite_passes(batch: Batch) -> None:
    assert len(batch.suite) == 4
    for result in batch.suite:
        assert result.passed, _explain(result)
        assert result.count("failed") == 0 and result.count("skipped") == 0
        assert result.app_exit == 0  # closed gracefully at the end
    # Every step type of the suite ran somewhere (the suite exercises the format).
    types = {step.type for result in batch.suite for step in result.steps}
    assert types >= {
        "action", "assert", "wait_for", "store", "set", "if", "for_each", "repeat", "run",
        "screenshot", "log", "write_file", "restart_app", "sleep",
    }  # fmt: skip


def test_round_trip_read_back_after_restart(batch: Batch) -> None:
    result = next(r for r in batch.suite if r.name == "save and reopen round trip")
    labels = [s.label for s in result.steps]
    restart = labels.index("restart the app (fresh defaults)")
    read_back = [s for s in result.steps[restart:] if s.type == "assert"]
    assert [s.message for s in read_back if "Design work" in s.message] == ["text = 'Design work'"]
    restart_step = result.steps[restart]
    assert "closed (exit status 0), started pid" in restart_step.message
    saved = Path(result.run_dir) / "files" / "round_trip.json"
    data = json.loads(saved.read_text())
    assert data["discount_percent"] == 15.0
    assert data["items"][0]["description"] == "Design work" and data["items"][1]["quantity"] == 4


def test_expected_error_label_is_recorded_but_passes(batch: Batch) -> None:
    result = next(r for r in batch.suite if r.name == "missing file is a handled error")
    labels = [f for f in result.findings if f.kind == "error_label"]
    assert len(labels) == 1 and labels[0].expected
    assert "File not found" in labels[0].summary and labels[0].step == "steps[1]"
    assert result.passed


def test_planted_crash_from_two_scripts_is_one_finding(batch: Batch) -> None:
    first, second = batch.crashes
    for result in (first, second):
        assert result.status == "failed", _explain(result)
        kinds = {f.kind for f in result.findings}
        assert {"crash_dialog", "app_log_error", "system_log_entry"} <= kinds, _explain(result)
    crash_fps = {
        f.fingerprint for r in batch.crashes for f in r.findings if f.kind == "crash_dialog"
    }
    assert len(crash_fps) == 1
    rows = {row["fingerprint"]: row for row in ResultStore(batch.db).findings()}
    crash = rows[crash_fps.pop()]
    assert crash["count"] == 2
    assert set(crash["runs"]) == {first.run_id, second.run_id}
    assert crash["stack_line"].startswith("main_window.py:") and crash["stack_line"].endswith(
        "in open_file"
    )
    assert crash["title"] == "invoice editor"
    # The app log and the system log name the same crash site: one finding each, count 2.
    for kind in ("app_log_error", "system_log_entry"):
        same = [row for row in rows.values() if row["kind"] == kind]
        assert len(same) == 1 and same[0]["count"] == 2, same
        assert same[0]["title"] == "invoiceformaterror"
    # The regression runs added no crash finding.
    suite_ids = {r.run_id for r in batch.suite}
    assert not suite_ids & set(crash["runs"])


def test_crash_dialog_recognised_by_content(batch: Batch) -> None:
    finding = next(f for f in batch.crashes[0].findings if f.kind == "crash_dialog")
    assert finding.oracle == "window_event"  # the hook saw it first; polling did not repeat it
    assert "exception type InvoiceFormatError" in finding.detail
    assert "buttons 'Continue'/'Quit'" in finding.detail
    assert finding.step == "steps[1]/open_file[1]"  # the click on Open inside the block


def test_teardown_runs_after_failure_and_app_is_closed(batch: Batch) -> None:
    for result in batch.crashes:
        failed = [s for s in result.steps if s.status == "failed" and s.type == "action"]
        assert failed and "oracle: crash dialog" in failed[0].message
        skipped = [s for s in result.steps if s.status == "skipped"]
        assert skipped, "the steps after the crash are skipped"
        teardown = [s for s in result.steps if s.phase == "teardown"]
        clicks = [s for s in teardown if s.type == "action"]
        assert clicks and all(s.status == "passed" for s in teardown), _explain(result)
        assert "CrashContinueButton" in clicks[0].label
        assert result.app_exit == 0  # the dialog was answered, then the app closed cleanly
        assert len(result.app_pids) == 1
        assert not _alive(result.app_pids[0]), "the app process is gone after the run"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_report_gif_and_database_hold_the_run(batch: Batch) -> None:
    result = batch.crashes[1]
    report = Path(result.report or "")
    html = report.read_text()
    for step in result.steps:
        assert step.path in html
    assert "crash_dialog" in html and "main_window.py:" in html
    assert html.count('class="failed"') == result.count("failed")
    assert result.screenshots and all(
        (Path(result.run_dir) / s).is_file() for s in result.screenshots
    )
    for step in result.steps:
        if step.screenshot:
            assert f'src="{step.screenshot}"' in html
    with Image.open(result.gif or "") as gif:
        # One frame per screenshot (pillow merges identical neighbours, adding their times).
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
        assert sum(durations) == 800 * len(result.screenshots)
        assert 1 < gif.n_frames <= len(result.screenshots)
        gif.seek(0)
        first = gif.convert("RGB").tobytes()
        gif.seek(gif.n_frames - 1)
        last = gif.convert("RGB").tobytes()
    assert first != last  # the crash dialog is on the last frames, not the first
    with sqlite3.connect(batch.db) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM runs WHERE run_id = ?", (result.run_id,)).fetchone()
        total_runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert total_runs == len(batch.suite) + len(batch.crashes)
    assert row["status"] == "failed" and row["script"] == result.script
    assert row["steps_total"] == len(result.steps)
    assert (row["steps_passed"], row["steps_failed"], row["steps_skipped"]) == (
        result.count("passed"),
        result.count("failed"),
        result.count("skipped"),
    )
    assert row["findings"] == len(result.unique_findings()) >= 3
    assert row["report"] == str(report) and row["gif"] == result.gif
    stored = ResultStore(batch.db).run(result.run_id)
    assert [s.path for s in stored.steps] == [s.path for s in result.steps]
