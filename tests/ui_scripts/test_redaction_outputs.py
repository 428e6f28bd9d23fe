"""No secret reaches the script runner's HTML report or its SQLite database: secrets of every
shape planted in every text of a run (step messages, findings from the app log, notes, errors),
and, with the desktop, a real run whose app logs a crash naming a token."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import ResultStore, RunnerConfig, RunResult, ScriptRunner
from loopkit_ui.scripts.findings import Finding
from loopkit_ui.scripts.redact import redacted_result
from loopkit_ui.scripts.report import write_report
from loopkit_ui.scripts.results import StepResult
from tests.secret_corpus import (
    LATE,
    all_secrets,
    leaks,
    plant_environment,
    planted_text,
)

from .conftest import LIBRARY


def _database_text(path: Path) -> str:
    """Every value of every table, and the file's raw bytes as text."""
    parts = [path.read_bytes().decode("utf-8", errors="ignore")]
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f"SELECT * FROM {table}"):
                parts.extend(str(value) for value in row)
    return "\n".join(parts)


def _run_full_of_secrets(tmp_path: Path) -> RunResult:
    text = planted_text()
    log_finding = Finding(
        kind="app_log_error",
        oracle="app_log",
        title=f"InvoiceFormatError {text}",
        summary=f"ERROR invoice_app: {text}",
        detail=f"Traceback (most recent call last):\n  {text}",
        stack_line=f'File "/x/{text}.py", line 3, in f',
        step="steps[0]",
    )
    return RunResult(
        run_id="r1",
        script=f"/scripts/{text}.json",
        name=f"run {text}",
        started="2026-12-01T10:00:00+00:00",
        run_dir=str(tmp_path),
        status="failed",
        steps=[
            StepResult(
                index=1,
                path="steps[0]",
                phase="steps",
                type="action",
                label=f"type {text}",
                status="failed",
                message=f"expected 'Opened' but got {text}",
                action={"typed": text, "nested": [{"value": text}]},
                findings=[log_finding.fingerprint],
            )
        ],
        findings=[log_finding],
        notes=[f"log step: {text}"],
        error=f"the app exited: {text}",
    )


def test_report_and_database_hold_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_environment(monkeypatch)
    store = ResultStore(tmp_path / "runs.sqlite")  # made before the late key is exported
    result = _run_full_of_secrets(tmp_path)
    monkeypatch.setenv(*LATE)
    report = write_report(result, tmp_path / "report.html")
    store.record(result)
    report_leaks = leaks(report.read_text(encoding="utf-8"))
    db_leaks = leaks(_database_text(store.path))
    stored = store.run("r1")
    print(
        f"HTML report: secrets tried {len(all_secrets())}, leaked {len(report_leaks)}; "
        f"findings database: tried {len(all_secrets())}, leaked {len(db_leaks)}"
    )
    assert report_leaks == [] and db_leaks == []
    # the stored run is consistent: its step points at its (redacted) finding
    assert stored.steps[0].findings == [stored.findings[0].fingerprint]
    rows = store.findings()
    assert [row["fingerprint"] for row in rows] == [stored.findings[0].fingerprint]
    assert "[redacted]" in rows[0]["summary"]
    # and the caller's result is left as it was
    assert LATE[1] in result.error


def test_a_run_without_secrets_is_unchanged(tmp_path: Path) -> None:
    result = _run_full_of_secrets(tmp_path)
    clean = result.model_copy(deep=True)
    clean.findings[0].title = "InvoiceFormatError"
    clean.steps[0].findings = [clean.findings[0].fingerprint]
    clean.findings[0].summary = clean.findings[0].detail = "nothing secret"
    clean.steps[0].label = clean.steps[0].message = clean.name = clean.script = "plain"
    clean.steps[0].action = {"typed": "plain"}
    clean.notes, clean.error = ["plain"], None
    clean.findings[0].stack_line = 'File "/x/y.py", line 3, in f'
    assert redacted_result(clean) == clean


@pytest.mark.ui
@pytest.mark.integration
def test_a_real_run_whose_app_logs_a_token(
    headless_desktop: HeadlessDesktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invoice app logs the unhandled InvoiceFormatError with the file's path: a path that
    holds a GitHub token and the value of a secret environment variable."""
    env_token = "env-token-in-a-path-4711"
    monkeypatch.setenv("RUNNER_SERVICE_TOKEN", env_token)
    github_token = "ghp_" + "R3dactMe" * 4 + "x1y2"
    name = f"broken-{github_token}-{env_token}.json"
    script = tmp_path / "leak.json"
    script.write_text(
        json.dumps(
            {
                "name": "open a broken file whose name holds secrets",
                "imports": [str(LIBRARY)],
                "steps": [
                    {"type": "write_file", "path": name, "content": "{broken"},
                    {"type": "run", "block": "open_file", "with": {"path": f"${{tmp}}/{name}"}},
                ],
                "teardown": [{"type": "run", "block": "dismiss_crash_dialog"}],
            }
        )
    )
    config = RunnerConfig(out_dir=tmp_path / "out", env=headless_desktop.env, gif=False)
    result = ScriptRunner(config, system_log=None).run(script)
    # the app really logged it (its own log file holds both), and it became a finding
    app_log = (Path(result.run_dir) / "invoice_app.log").read_text(encoding="utf-8")
    assert github_token in app_log and env_token in app_log, app_log[-2000:]
    assert any(f.kind == "app_log_error" for f in result.findings)
    secrets = [github_token, env_token]
    # what the runner returns (and the CLI prints) and result.json are redacted too
    assert leaks(json.dumps(result.model_dump(mode="json")), secrets) == []
    assert leaks((Path(result.run_dir) / "result.json").read_text(encoding="utf-8"), secrets) == []
    report_leaks = leaks(Path(result.report or "").read_text(encoding="utf-8"), secrets)
    db_leaks = leaks(_database_text(config.database), secrets)
    print(f"real run: report leaked {len(report_leaks)}, database leaked {len(db_leaks)} of 2")
    assert report_leaks == [] and db_leaks == []
