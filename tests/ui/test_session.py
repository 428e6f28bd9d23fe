"""The headless desktop: it starts, children see it, and nothing survives its teardown, its
owner's SIGKILL, or a signal during start-up."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
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


# -- faults: the owner killed, signals during start-up --------------------------------------------

SESSION = [sys.executable, "-m", "loopkit_ui.session"]


def _children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = set().union(*(_children(p) for p in frontier)) - found
        found |= frontier
    return found


def _carrying(text: str) -> set[int]:
    """Processes whose environment contains ``text`` (a path unique to one test)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "environ").read_bytes():
                    found.add(int(entry.name))
    return {pid for pid in found if _alive(pid)}


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _survivors(pids: set[int], within: float = 20.0) -> list[int]:
    """The pids still alive after ``within`` seconds (a generous deadline, not a timing claim);
    they are killed then, so a failing test leaves nothing behind either."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    left = sorted(p for p in pids if _alive(p))
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


_OWNER = textwrap.dedent(
    """
    import json, subprocess, sys, time
    from loopkit_ui.headless_desktop import HeadlessDesktop
    desktop = HeadlessDesktop().start()
    # Wake the AT-SPI registry too (activated on the accessibility bus on first use).
    subprocess.run(["dbus-send", "--bus=" + desktop.a11y_bus_address, "--print-reply",
                    "--reply-timeout=5000", "--dest=org.a11y.atspi.Registry",
                    "/org/a11y/atspi/registry", "org.freedesktop.DBus.Peer.Ping"],
                   capture_output=True, check=False)
    print(json.dumps(sorted(desktop.pids())), flush=True)
    time.sleep(600)
    """
)


def test_desktop_dies_with_its_owner_killed_by_sigkill() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, owner.communicate(timeout=30)
        pids = set(json.loads(line))
        names = {_name(p).rsplit("/", 1)[-1] for p in pids}
        # Xvfb, the session bus, the launcher, the accessibility bus and the registry
        assert {"Xvfb", "dbus-daemon", "at-spi-bus-launcher", "at-spi2-registryd"} <= names
    finally:
        owner.kill()
        owner.wait(30)
    assert _survivors(pids) == []


def _wait_for_child(session: subprocess.Popen[bytes], name: str, within: float = 60) -> set[int]:
    """Poll until a descendant whose program is ``name`` runs; returns every descendant seen."""
    seen: set[int] = set()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        now = _descendants(session.pid)
        seen |= now
        if any(_name(p).endswith(name) for p in now):
            return seen
        assert session.poll() is None, f"the session ended before {name} started"
        time.sleep(0.002)
    raise AssertionError(f"{name} did not start within {within} s")


def test_cli_killed_by_sigkill_takes_desktop_and_command_along() -> None:
    session = subprocess.Popen([*SESSION, "--", "sleep", "1000"], stderr=subprocess.PIPE)
    try:
        pids = _wait_for_child(session, "sleep")
        time.sleep(0.3)  # the launcher's own children come up after it
        pids |= _descendants(session.pid)
        names = {_name(p).rsplit("/", 1)[-1] for p in pids}
        assert {"Xvfb", "dbus-daemon", "at-spi-bus-launcher", "sleep"} <= names
    finally:
        session.kill()
        session.wait(30)
    assert _survivors(pids) == []


# Moments during start-up, each the appearance of a process: the guard (start() has begun), then
# each daemon in the order they start. Each daemon is reached through a wrapper on PATH that waits
# a moment before it execs the real program, so the signal surely lands while the desktop is still
# starting (`true` would otherwise be running already when the last moment is seen).
_MOMENTS = ["desktop_guard.py", "Xvfb", "dbus-daemon", "at-spi-bus-launcher", "dbus-send"]


def _slow_daemons(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "slow-bin"
    bin_dir.mkdir()
    for name in ("Xvfb", "dbus-daemon", "dbus-send"):
        real = shutil.which(name)
        assert real is not None
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nsleep 0.3\nexec {real} "$@"\n')
        wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("moment", _MOMENTS)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_startup_cleans_up_quietly(
    moment: str, signum: int, tmp_path: Path
) -> None:
    session = subprocess.Popen(
        [*SESSION, "--", "true"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_slow_daemons(tmp_path),
    )
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and session.poll() is None:
        now = _descendants(session.pid)
        seen |= now
        # match the whole command line: the guard runs as `python -I -S .../desktop_guard.py`
        if any(moment in _cmdline(p) for p in now):
            session.send_signal(signum)
            break
    _, err = session.communicate(timeout=60)
    assert "Traceback" not in err
    assert session.returncode == 130, err
    assert err.strip() == ""
    # every process of this desktop inherited the wrappers' PATH: none may be left
    assert _survivors(seen | _carrying(str(tmp_path / "slow-bin"))) == []


def test_command_killed_by_a_signal_gives_128_plus_n() -> None:
    done = subprocess.run(
        [*SESSION, "--", "sh", "-c", "kill -KILL $$"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_reach_the_command(signum: int, tmp_path: Path) -> None:
    got = tmp_path / "got"
    # The command reports the signal it received, then exits 3.
    script = f"trap 'echo $1 > {got}; exit 3' {signum.name[3:]}; echo ready; sleep 100 & wait"
    session = subprocess.Popen(
        [*SESSION, "--", "sh", "-c", script, "sh", signum.name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert session.stdout is not None
    assert session.stdout.readline().strip() == "ready"
    seen = _descendants(session.pid)
    session.send_signal(signum)
    _, err = session.communicate(timeout=60)
    assert session.returncode == 3, err
    assert got.read_text().strip() == signum.name
    assert _survivors(seen) == []


# -- bad input: one clear line, exit 2, no desktop started -----------------------------------------


def _fake_xvfb(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH finds a fake Xvfb first; it leaves a marker if it is ever run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "xvfb-was-started"
    fake = bin_dir / "Xvfb"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, marker


def _bad_inputs(tmp_path: Path) -> dict[str, list[str]]:
    not_executable = tmp_path / "script.sh"
    not_executable.write_text("echo hi\n")
    return {
        "missing command": ["--", "/no/such/command"],
        "missing on PATH": ["--", "no-such-command-anywhere"],
        "a directory": ["--", str(tmp_path)],
        "not executable": ["--", str(not_executable)],
        "screen not a geometry": ["--screen", "big", "--", "true"],
        "screen depth": ["--screen", "640x480x7", "--", "true"],
        "screen too large": ["--screen", "100000x100000x24", "--", "true"],
        "unknown option": ["--no-such-option", "--", "true"],
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing command",
        "missing on PATH",
        "a directory",
        "not executable",
        "screen not a geometry",
        "screen depth",
        "screen too large",
        "unknown option",
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(case: str, tmp_path: Path) -> None:
    env, marker = _fake_xvfb(tmp_path)
    args = _bad_inputs(tmp_path)[case]
    done = subprocess.run([*SESSION, *args], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "error:" in lines[0], done.stderr
    assert not marker.exists(), "a desktop was started for bad input"
