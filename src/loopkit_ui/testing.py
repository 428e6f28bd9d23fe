"""Pytest helpers for UI tests: a headless desktop fixture and an app launcher.

Use as a plugin (``pytest_plugins = ["loopkit_ui.testing"]``) or import the fixtures. The
desktop never touches ``os.environ``: pass :attr:`HeadlessDesktop.env` (or ``child_env()``) to
the processes that should live on it, and ``bus_address``/``display`` to an in-process backend.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence

import pytest

from loopkit_ui.session import DesktopError, HeadlessDesktop

__all__ = ["desktop_available", "headless_desktop", "running_app"]


def desktop_available() -> str | None:
    """None when a headless desktop can start here, else the reason it cannot."""
    if not sys.platform.startswith("linux"):
        return "the headless desktop needs Linux"
    for program in ("Xvfb", "dbus-daemon", "dbus-send"):
        if shutil.which(program) is None:
            return f"{program} is not installed (apt: xvfb dbus at-spi2-core)"
    return None


@pytest.fixture(scope="session")
def headless_desktop() -> Iterator[HeadlessDesktop]:
    """One private desktop (Xvfb + D-Bus + AT-SPI) for the test session; skipped off Linux."""
    reason = desktop_available()
    if reason:
        pytest.skip(reason)
    try:
        desktop = HeadlessDesktop().start()
    except DesktopError as error:
        pytest.skip(f"headless desktop unavailable: {error}")
    try:
        yield desktop
    finally:
        desktop.stop()


@contextlib.contextmanager
def running_app(
    desktop: HeadlessDesktop,
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 5.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start an app on the desktop and stop it (SIGTERM, then SIGKILL) afterwards."""
    proc = desktop.spawn(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if proc.stderr is not None:
            proc.stderr.close()
