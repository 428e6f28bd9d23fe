"""The conformance suite's fixtures: the invoice app, and the UI MCP server over stdio with one
backend (parametrized: ``atspi`` on Linux under a headless desktop, ``uia`` on Windows).

Every test drives the real app through the real server process; nothing is faked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit_ui.session import HeadlessDesktop
from loopkit_ui.testing import UIServerClient, desktop_available

REPO = Path(__file__).resolve().parents[3]
EXAMPLES_DIR = REPO / "examples"

_ON_WINDOWS = sys.platform == "win32"
BACKENDS = [
    pytest.param(
        "atspi",
        marks=pytest.mark.skipif(
            _ON_WINDOWS or desktop_available() is not None,
            reason="atspi needs Linux with Xvfb/D-Bus/AT-SPI",
        ),
    ),
    pytest.param(
        "uia", marks=pytest.mark.skipif(not _ON_WINDOWS, reason="uia needs Windows UI Automation")
    ),
]


class Platform:
    """Where apps and servers run: a headless desktop on Linux, the session desktop on Windows."""

    def __init__(self, desktop: HeadlessDesktop | None) -> None:
        self.desktop = desktop

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        if self.desktop is not None:
            return self.desktop.child_env(extra)
        env = dict(os.environ)
        env.update(extra or {})
        return env

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
        if self.desktop is not None:
            return self.desktop.spawn(argv, env=env, cwd=str(cwd), stderr=subprocess.DEVNULL)
        return subprocess.Popen(argv, env=env, cwd=str(cwd), stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module", params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def platform(backend_name: str) -> Iterator[Platform]:
    if backend_name == "atspi":
        with HeadlessDesktop() as desktop:
            yield Platform(desktop)
    else:
        yield Platform(None)


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-output")


@pytest.fixture(scope="module")
def ui(backend_name: str, platform: Platform, output_dir: Path) -> Iterator[UIServerClient]:
    """The UI MCP server over stdio, attached lazily to whichever invoice app is running."""
    args = ["-m", "loopkit_ui.server", "--backend", backend_name, "--app-name", "invoice_app",
            "--output-dir", str(output_dir), "--attach-timeout", "10"]  # fmt: skip
    client = UIServerClient(args, env=platform.env())
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def app_log(tmp_path: Path) -> Path:
    return tmp_path / "invoice_app.log"


@pytest.fixture
def app(platform: Platform, ui: UIServerClient, app_log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A fresh invoice app for each test; the server re-attaches to it by name."""
    env = platform.env({"INVOICE_APP_LOG": str(app_log), "PYTHONPATH": str(EXAMPLES_DIR)})
    proc = platform.spawn([sys.executable, "-m", "invoice_app"], env=env, cwd=EXAMPLES_DIR)
    try:
        deadline = time.monotonic() + 30
        while True:
            answer = ui.call("ui_get_element", target="AddItemButton")
            if not answer.error:
                break
            assert proc.poll() is None, f"the invoice app exited with {proc.returncode}"
            assert time.monotonic() < deadline, f"the app never showed up: {answer.text}"
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
