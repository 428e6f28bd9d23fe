"""The app the server started with ``--launch``: when it dies, or cannot start (a Python
without PySide6), every tool answers how it ended and what it printed last, not the
accessibility hint; ``ui_restart_app`` starts it again. The real server over stdio, the real
invoice app on the headless desktop."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient
from tests.installed import unavailable

from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]

# Debian's own interpreter: the same Python version, but without the project's venv (no PySide6).
SYSTEM_PYTHON = "/usr/bin/python3"


def _server(launch: str, out: Path) -> list[str]:
    return ["-m", "loopkit_ui.server", "--launch", launch, "--launch-cwd", str(EXAMPLES_DIR),
            "--attach-timeout", "20", "--output-dir", str(out)]  # fmt: skip


def _env(desktop: HeadlessDesktop, tmp_path: Path) -> dict[str, str]:
    # The server keeps this worktree's PYTHONPATH; the app finds invoice_app in its cwd.
    return desktop.child_env({"INVOICE_APP_LOG": str(tmp_path / "app.log")})


def test_a_dead_app_is_reported_and_restarted(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with UIServerClient(
        _server(f"{PYTHON} -m invoice_app", out), env=_env(headless_desktop, tmp_path)
    ) as ui:
        assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
        ui.call("ui_click", target="AddItemButton")
        logs = sorted(out.glob("app-output-*.log"))
        assert len(logs) == 1 and stat.S_IMODE(logs[0].stat().st_mode) == 0o600
        pid = _launched_pid(logs[0])
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid)

        for tool, args in (("ui_get_text", {"target": "TotalLabel"}), ("ui_list_windows", {}),
                           ("ui_click", {"target": "AddItemButton"}), ("ui_tree", {}),
                           ("ui_assert_exists", {"target": "TotalLabel"})):  # fmt: skip
            dead = ui.call(tool, **args)
            assert dead.error, (tool, dead)
            assert "killed by signal 9 (SIGKILL)" in dead.text, (tool, dead)
            assert "ui_restart_app" in dead.text and "QT_LINUX_ACCESSIBILITY" not in dead.text
        # The whole screen needs no app: the desktop as the app died. An element's or a
        # window's crop needs the app, and says how it ended.
        desktop = ui.call("ui_screenshot")
        assert not desktop.error and Path(desktop["path"]).stat().st_size > 0, desktop
        cropped = ui.call("ui_screenshot", window="Invoice Editor")
        assert cropped.error and "killed by signal 9 (SIGKILL)" in cropped.text, cropped
        # What else shows on the desktop (a crash reporter would) is listed without the app.
        left = ui.call("ui_list_windows", all_apps=True)
        assert not left.error and all(w["app"] for w in left["windows"]), left

        restarted = ui.call("ui_restart_app")
        assert not restarted.error, restarted
        assert restarted["previous_exit"] == "killed by signal 9 (SIGKILL)"
        assert restarted["pid"] != pid and Path(restarted["output_log"]).parent == out
        # A new process: the row added before is gone, the app answers again.
        assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
        assert ui.call("ui_get_cell", table="ItemsTable", row=2, column=0).error

        # Restarting a running app ends it first.
        again = ui.call("ui_restart_app")
        # (the invoice app ends cleanly on SIGTERM)
        assert again["previous_exit"] in ("exit status 0", "killed by signal 15 (SIGTERM)")
        assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
        assert len(list(out.glob("app-output-*.log"))) == 3  # one file per start


def test_a_python_without_pyside6_is_reported_with_its_output(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    if not Path(SYSTEM_PYTHON).exists():
        unavailable(f"{SYSTEM_PYTHON} is not installed (the Debian package python3)")
    out = tmp_path / "out"
    launch = f"{SYSTEM_PYTHON} -m invoice_app"
    with UIServerClient(_server(launch, out), env=_env(headless_desktop, tmp_path)) as ui:
        answer = ui.call("ui_get_text", target="TotalLabel")
        deadline = time.monotonic() + 10
        while "has ended" not in answer.text and time.monotonic() < deadline:
            time.sleep(0.2)  # the import error may not have ended it by the first call
            answer = ui.call("ui_get_text", target="TotalLabel")
        assert answer.error
        assert "exit status 1" in answer.text, answer
        assert "No module named 'PySide6'" in answer.text, answer
        assert "ui_restart_app" in answer.text


def test_launchable_apps_only(headless_desktop: HeadlessDesktop, tmp_path: Path) -> None:
    """ui_launch_app starts what the server's --launchable names, and nothing else; the app
    becomes current (the server had none of its own here) and ends with the server."""
    args = ["-m", "loopkit_ui.server", "--app-name", "nothing_here", "--attach-timeout", "20",
            "--launchable", f"invoice={PYTHON} -m invoice_app", "--launch-cwd", str(EXAMPLES_DIR),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    with UIServerClient(args, env=_env(headless_desktop, tmp_path)) as ui:
        refused = ui.call("ui_launch_app", app="bash")
        assert refused.error and "no launchable app 'bash'" in refused.text
        assert "may launch: invoice" in refused.text
        launched = ui.call("ui_launch_app", app="invoice")
        assert not launched.error and launched["current"] == "invoice", launched
        assert launched["launchable"] == ["invoice"]
        assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
        logs = sorted((tmp_path / "out").glob("app-output-*.log"))
        pid = _launched_pid(logs[0])
    _wait_gone(pid)
    assert not Path(f"/proc/{pid}").exists() or ") Z " in Path(f"/proc/{pid}/stat").read_text()


def test_restart_needs_a_launched_app(headless_desktop: HeadlessDesktop, tmp_path: Path) -> None:
    args = ["-m", "loopkit_ui.server", "--app-name", "nothing_here", "--attach-timeout", "0",
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    with UIServerClient(args, env=headless_desktop.child_env()) as ui:
        refused = ui.call("ui_restart_app")
        assert refused.error and "--launch" in refused.text


def _launched_pid(log: Path) -> int:
    """The pid of the process writing ``log`` (the launched app)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                if os.readlink(f"/proc/{entry}/fd/{fd}") == str(log):
                    cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                    if cmdline.endswith(b"-m\0invoice_app\0"):
                        return int(entry)
        except OSError:
            continue
    raise AssertionError(f"no process writes {log}")


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}").exists() else ""
        if ") Z " in status:
            return  # a zombie until the server reaps it: dead all the same
        time.sleep(0.05)
