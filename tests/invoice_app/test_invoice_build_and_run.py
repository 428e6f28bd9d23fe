"""The app as a process: ``python -m invoice_app.build`` on copies of the package, and
``python -m invoice_app`` started offscreen and ended with SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "invoice_app"


def copy_app(tmp_path: Path) -> Path:
    target = tmp_path / "invoice_app"
    shutil.copytree(APP_DIR, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def run_build(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "invoice_app.build"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_build_of_clean_copy_succeeds(tmp_path: Path) -> None:
    copy_app(tmp_path)
    result = run_build(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "build succeeded"


def test_build_reports_syntax_error_with_file_and_line(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    model = app / "model.py"
    lines = model.read_text().splitlines()
    lines.insert(9, "def broken(:")  # becomes line 10
    model.write_text("\n".join(lines) + "\n")
    result = run_build(tmp_path)
    assert result.returncode == 1
    out = result.stdout.splitlines()
    # model.py is imported by other modules too; the error is reported once.
    assert out[-1] == "build failed: 1 errors", result.stdout
    assert out[0].startswith(f"{model}:10: error: "), out[0]


def test_build_reports_import_time_error(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    storage = app / "storage.py"
    storage.write_text(storage.read_text() + "\nDEFAULT = undefined_name\n")
    line = len(storage.read_text().splitlines())
    result = run_build(tmp_path)
    assert result.returncode == 1
    assert f"{storage}:{line}: error: NameError: name 'undefined_name' is not defined" in (
        result.stdout
    )
    assert result.stdout.splitlines()[-1].startswith("build failed: ")


def start_app(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / "app.log"
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        INVOICE_APP_LOG=str(log),
        PYTHONPATH=str(APP_DIR.parent),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "invoice_app", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, log


def wait_for_log(proc: subprocess.Popen[str], log: Path, needle: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if needle in text:
            return text
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    output = proc.communicate()[0]
    raise AssertionError(f"{needle!r} not in log {log}; app output:\n{output}")


def stop_with_sigterm(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def test_app_starts_and_quits_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc, log = start_app(tmp_path)
    wait_for_log(proc, log, " INFO Started")
    assert stop_with_sigterm(proc) == 0
    text = log.read_text()
    assert "Received signal 15" in text
    assert " ERROR " not in text


def test_malformed_file_at_start_logs_error_and_sigterm_closes_the_dialog(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    proc, log = start_app(tmp_path, "--file", str(bad))
    text = wait_for_log(proc, log, " ERROR Unhandled InvoiceFormatError")
    assert f"{bad} is not valid JSON" in text
    # The crash dialog is open now (modal); SIGTERM must still end the app.
    assert stop_with_sigterm(proc) == 0


def test_missing_file_at_start_is_a_handled_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    proc, log = start_app(tmp_path, "--file", str(missing))
    text = wait_for_log(proc, log, "File not found")
    assert f"WARNING File not found: {missing}" in text
    assert stop_with_sigterm(proc) == 0
    assert " ERROR " not in log.read_text()
