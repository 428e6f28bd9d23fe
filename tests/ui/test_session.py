"""The headless desktop: it starts, children see it, and nothing survives its teardown."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopkit_ui.session import HeadlessDesktop
from loopkit_ui.testing import desktop_available

pytestmark = [
    pytest.mark.ui,
    pytest.mark.integration,
    pytest.mark.skipif(desktop_available() is not None, reason=str(desktop_available())),
]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def test_desktop_env_and_teardown_leave_nothing_behind() -> None:
    desktop = HeadlessDesktop().start()
    try:
        env = desktop.env
        assert env["DISPLAY"].startswith(":")
        assert env["DBUS_SESSION_BUS_ADDRESS"].startswith("unix:")
        assert env["AT_SPI_BUS_ADDRESS"].startswith("unix:")
        assert env["QT_LINUX_ACCESSIBILITY_ALWAYS_ON"] == "1"
        assert env["NO_AT_BRIDGE"] == "0"
        # A child on the desktop can reach both buses and the X server.
        probe = desktop.spawn(
            [
                "sh",
                "-c",
                "dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus "
                "org.a11y.Bus.GetAddress >/dev/null && echo ok-$DISPLAY",
            ],
            stdout=subprocess.PIPE,
        )
        out, _ = probe.communicate(timeout=10)
        assert out.decode().strip() == f"ok-{env['DISPLAY']}"
        # A stray child in the desktop's group (started and forgotten) must die at teardown.
        stray = desktop.spawn(["sleep", "300"])
        pids = desktop.pids()
        assert stray.pid in pids
        assert len(pids) >= 4  # Xvfb, dbus-daemon, at-spi-bus-launcher, its bus, sleep
        assert os.getpid() not in pids
    finally:
        desktop.stop()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert [p for p in pids if _alive(p)] == []
    with pytest.raises(Exception, match="not running"):
        _ = desktop.env


def test_two_desktops_get_different_displays() -> None:
    with HeadlessDesktop() as one, HeadlessDesktop() as two:
        assert one.display != two.display
        assert one.env["AT_SPI_BUS_ADDRESS"] != two.env["AT_SPI_BUS_ADDRESS"]


def test_cli_runs_command_passes_status_and_cleans_up(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    # The command leaves a background process behind; the session must end it.
    script = f"sleep 300 & echo $! > {pid_file}; echo display=$DISPLAY; exit 7"
    result = subprocess.run(
        [sys.executable, "-m", "loopkit_ui.session", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 7, result.stderr
    assert result.stdout.startswith("display=:")
    background = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(background):
        time.sleep(0.05)
    assert not _alive(background)


def test_cli_without_command_is_a_clear_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "loopkit_ui.session"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "missing COMMAND" in result.stderr
