"""Fingerprints, crash recognition, the findings database, syslog parsing, walks: no desktop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit_ui.scripts import (
    Finding,
    ResultStore,
    RunResult,
    SyslogFileSource,
    crash_signs,
    fingerprint,
    generate_walk,
    load_script,
    write_walk,
)
from loopkit_ui.scripts.findings import first_stack_line, normalise_stack_line, normalise_title

from .conftest import REPO, SCRIPTS

OPS = SCRIPTS / "walk_operations.json"

PY_CRASH = """An unexpected error occurred.

InvoiceFormatError: /tmp/run-1/files/broken.json is not valid JSON

Traceback (most recent call last):
  File "/home/a/examples/invoice_app/main_window.py", line 236, in open_file
  File "/home/a/examples/invoice_app/storage.py", line 48, in load_invoice"""


def test_fingerprint_ignores_folders_paths_and_case() -> None:
    a = fingerprint(
        "crash_dialog", "Invoice Editor", 'File "/a/b/main_window.py", line 236, in open_file'
    )
    b = fingerprint(
        "crash_dialog", "invoice  editor", 'File "C:\\x\\main_window.py", line 236, in open_file'
    )
    assert a == b and len(a) == 16
    assert (
        fingerprint(
            "crash_dialog", "Invoice Editor", 'File "/a/main_window.py", line 237, in open_file'
        )
        != a
    )
    assert (
        fingerprint(
            "app_log_error", "Invoice Editor", 'File "/a/b/main_window.py", line 236, in open_file'
        )
        != a
    )
    assert normalise_title("File not found: /tmp/run-77/x.json (0x7ffe12) after 1234 ms") == (
        "file not found: <path> (<hex>) after <n> ms"
    )
    assert normalise_stack_line(
        "   at App.Invoice.Open(String path) in C:\\src\\Invoice.cs:line 42"
    ) == ("Invoice.cs:42 in App.Invoice.Open(String path)")
    assert (
        normalise_stack_line("\tat com.acme.Main.run(Main.java:12)")
        == "Main.java:12 in com.acme.Main.run"
    )


def test_crash_recognised_by_content_not_title() -> None:
    signs = crash_signs([PY_CRASH], ["Continue", "Quit"])
    assert signs.is_crash and signs.exception_type == "InvoiceFormatError"
    assert normalise_stack_line(signs.stack_line) == "main_window.py:236 in open_file"
    assert signs.reasons() == [
        "exception type InvoiceFormatError",
        "stack line 'main_window.py:236 in open_file'",
        "buttons 'Continue'/'Quit'",
    ]
    # Buttons alone are enough; a plain question dialog is not a crash.
    assert crash_signs(["Something went wrong."], ["&Continue", "Quit"]).is_crash
    assert not crash_signs(["Delete the selected row?"], ["OK", "Cancel"]).is_crash
    assert not crash_signs(["Save changes?"], ["Continue"]).is_crash


def test_first_stack_line_of_chained_exceptions_is_the_unhandled_ones() -> None:
    log = [
        "Unhandled InvoiceFormatError: x",
        "Traceback (most recent call last):",
        '  File "/x/storage.py", line 46, in load_invoice',
        "json.decoder.JSONDecodeError: Expecting value",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/main_window.py", line 236, in open_file',
        '  File "/x/storage.py", line 48, in load_invoice',
    ]
    assert first_stack_line(log) == 'File "/x/main_window.py", line 236, in open_file'
    assert first_stack_line(["no trace here"]) is None


def _run(run_id: str, *findings: Finding) -> RunResult:
    return RunResult(
        run_id=run_id, script="s.json", name=run_id, started="2026-01-01T00:00:00+00:00",
        finished="2026-01-01T00:00:01+00:00", run_dir="/tmp/x", findings=list(findings),
    )  # fmt: skip


def _crash(title: str = "Invoice Editor", step: str = "steps[1]") -> Finding:
    return Finding(
        kind="crash_dialog", oracle="window_event", title=title, summary="crash",
        stack_line='File "/a/main_window.py", line 236, in open_file', step=step,
    )  # fmt: skip


def test_store_counts_runs_per_fingerprint(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "db.sqlite")
    # The same crash twice in one run counts once for that run.
    store.record(_run("r1", _crash(), _crash(step="steps[4]")))
    store.record(_run("r2", _crash(title="INVOICE EDITOR")))
    store.record(
        _run("r3", Finding(kind="error_label", oracle="error_label", title="x", summary="x"))
    )
    rows = store.findings()
    assert [(r["kind"], r["count"], r["runs"]) for r in rows] == [
        ("crash_dialog", 2, ["r1", "r2"]),
        ("error_label", 1, ["r3"]),
    ]
    assert rows[0]["stack_line"] == "main_window.py:236 in open_file"
    assert [r["run_id"] for r in store.runs()] == ["r1", "r2", "r3"]
    # Recording the same run again does not count twice.
    store.record(_run("r2", _crash()))
    assert store.findings()[0]["count"] == 2


def test_syslog_file_source_follows_one_program(tmp_path: Path) -> None:
    log = tmp_path / "syslog"
    log.write_text("Nov 30 04:00:00 vm invoice_app[10]: ERROR old entry\n")
    source = SyslogFileSource(log)
    source.start("invoice_app", [42])
    assert source.read_new() == []
    with log.open("a") as handle:
        handle.write("Nov 30 04:00:01 vm other[11]: ERROR not ours\n")
        handle.write(
            'Nov 30 04:00:02 vm invoice_app[42]: ERROR boom#012  File "a.py", line 3, in f\n'
        )
        handle.write("2026-11-30T04:00:03.5+00:00 vm python3[42]: by pid\n")
        handle.write("Nov 30 04:00:04 vm invoice_app[42]: half a li")
    entries = source.read_new()
    assert [(e.ident, e.pid, e.message) for e in entries] == [
        ("invoice_app", 42, 'ERROR boom\n  File "a.py", line 3, in f'),
        ("python3", 42, "by pid"),
    ]
    with log.open("a") as handle:
        handle.write("ne\n")
    assert [e.message for e in source.read_new()] == ["half a line"]


# -- random walks --------------------------------------------------------------------------


def test_walk_seed_7_writes_identical_scripts(tmp_path: Path) -> None:
    first = write_walk(OPS, 7, 40, tmp_path / "a" / "walk.json").read_bytes()
    second = write_walk(OPS, 7, 40, tmp_path / "b" / "walk.json").read_bytes()
    assert first == second
    other = write_walk(OPS, 8, 40, tmp_path / "c" / "walk.json").read_bytes()
    assert other != first
    script = json.loads(first)
    logs = [s["message"] for s in script["steps"] if s["type"] == "log"]
    assert len(logs) == 40 and logs[0].startswith("operation 1/40: ")
    names = {m.split(": ")[1] for m in logs}
    assert names <= {
        "add_then_delete",
        "discount_then_clear",
        "quantity_then_restore",
        "file_path_then_clear",
    }
    assert len(names) >= 3
    loaded = load_script(tmp_path / "a" / "walk.json")  # an ordinary, valid script
    assert loaded.app is not None and loaded.variables["walk_seed"] == 7


def test_walk_in_process_equals_cli_output(tmp_path: Path) -> None:
    out = tmp_path / "walk.json"
    done = subprocess.run(
        [sys.executable, "-m", "loopkit_ui.scripts", "walk", "--ops", str(OPS), "--seed", "7",
         "--steps", "12", "-o", str(out)],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == generate_walk(OPS, 7, 12, output=out)


def test_walk_rejects_a_file_without_operations(tmp_path: Path) -> None:
    path = tmp_path / "ops.json"
    path.write_text(json.dumps({"steps": []}))
    with pytest.raises(ValueError, match="needs a non-empty 'operations' list"):
        generate_walk(path, 1, 5)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        generate_walk(OPS, 1, 0)


def test_cli_validate_reports_each_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"steps": [{"type": "clik", "target": "X"}]}))
    done = subprocess.run(
        [sys.executable, "-m", "loopkit_ui.scripts", "validate", str(bad), str(OPS)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"INVALID {bad}" in done.stdout and f"ok      {OPS}" in done.stdout
    assert "steps[0]: unknown step type 'clik'" in done.stdout
