"""``python -m loopkit_ui.wait_app``: start_app's readiness check ends when the app shows a
window, not after a fixed delay; no app in time is exit 1 with the reason, bad input exit 2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import running_app
from loopkit_ui.wait_app import wait_for_window, window_shown

from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]

WAIT = [PYTHON, "-m", "loopkit_ui.wait_app"]


def test_it_ends_when_the_app_shows_its_window(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    env = headless_desktop.child_env()
    waiting = subprocess.Popen([*WAIT, "--app-name", "invoice_app", "--timeout", "30"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(0.5)
    assert waiting.poll() is None  # no app yet: still waiting
    app_env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=app_env) as app:
        out, err = waiting.communicate(timeout=40)
        assert waiting.returncode == 0, err
        assert out.startswith("ready: ") and f"(pid {app.pid}) shows 'Invoice Editor'" in out
        assert app.poll() is None


def test_no_app_in_time_is_exit_1_with_the_reason(headless_desktop: HeadlessDesktop) -> None:
    done = subprocess.run([*WAIT, "--app-name", "no_such_app", "--timeout", "0.5"],
                          env=headless_desktop.child_env(), capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "not ready: application 'no_such_app' is not running" in done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--app-name", "x", "--timeout", "-1"], "--timeout"),
        (["--timeout", "3"], "--app-name"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], expected: str) -> None:
    done = subprocess.run([*WAIT, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr


# -- start_app's in-process check (app_ready kind "window") ----------------------------------


def _tools(tmp_path: Path, app_command: list[str], app_name: str, timeout_s: float):  # type: ignore[no-untyped-def]
    from loopkit_tools import LocalTools, ReadyCheck, ToolsConfig

    (tmp_path / "invoice_app").mkdir(exist_ok=True)
    return LocalTools(
        ToolsConfig(
            root=tmp_path,
            read_folders=["invoice_app"],
            write_folders=["invoice_app"],
            app_command=app_command,
            app_env={
                "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
                "PYTHONPATH": str(EXAMPLES_DIR),
                "INVOICE_APP_LOG": str(tmp_path / "app.log"),
            },
            app_ready=ReadyCheck(kind="window", app_name=app_name, timeout_s=timeout_s),
            app_output_file=tmp_path / "app-output.log",
            stop_grace_s=2.0,
        ),
        window_check=window_shown,  # the UI side's check, passed in as the demo's assembly does
    )


def _on_desktop(desktop: HeadlessDesktop, monkeypatch: pytest.MonkeyPatch) -> None:
    # The check runs in this process: it reaches the desktop's bus through our environment.
    for name, value in desktop.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)


async def test_start_app_waits_in_process_for_the_window(
    headless_desktop: HeadlessDesktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_desktop(headless_desktop, monkeypatch)
    async with _tools(tmp_path, [PYTHON, "-m", "invoice_app"], "invoice_app", 30) as tools:
        answer = await tools.start_app()
        assert answer.startswith("The app is running (pid ")
        assert answer.endswith("; ready (readiness check passed).")  # as with a probe command
        pid = int(answer.split("pid ")[1].split(")")[0])
        assert "shows 'Invoice Editor'" in wait_for_window("invoice_app", 5)  # it really does
        assert f"(pid {pid})" in wait_for_window("invoice_app", 5)
        assert "stopped" in await tools.stop_app()


async def test_no_window_in_time_names_the_app_and_the_timeout(
    headless_desktop: HeadlessDesktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopkit.abstractions import ToolError
    from loopkit_tools import pid_alive

    _on_desktop(headless_desktop, monkeypatch)
    # A process that runs but never shows a window (nor registers on the bus).
    sleeper = [PYTHON, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"]
    async with _tools(tmp_path, sleeper, "no_such_app", 1.5) as tools:
        with pytest.raises(ToolError) as raised:
            await tools.start_app()
        assert str(raised.value).startswith(
            "The app showed no window on the accessibility bus within 1.5 s (looked for "
            "'no_such_app') and was stopped."
        )
        assert "is not running" in await tools.stop_app()
    assert not pid_alive(int((tmp_path / "app-output.log").read_text().split()[0]))
