"""``python -m loopkit_ui.wait_app``: start_app's readiness check ends when the app shows a
window, not after a fixed delay; no app in time is exit 1 with the reason, bad input exit 2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from loopkit_ui.session import HeadlessDesktop
from loopkit_ui.testing import running_app

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
