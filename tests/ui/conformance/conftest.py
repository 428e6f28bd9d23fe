"""The conformance suite's fixtures: the invoice app and the small fixture app, and the UI MCP
server over stdio with one backend: the one ``LOOPKIT_UI_BACKEND`` names, else the platform's
(``atspi`` on Linux under a headless desktop, ``uia`` on Windows).

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
from _pytest.mark.structures import ParameterSet

from loopkit_ui.backends import BACKEND_ENV, default_backend_name
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient, desktop_available

REPO = Path(__file__).resolve().parents[3]
EXAMPLES_DIR = REPO / "examples"

_ON_WINDOWS = sys.platform == "win32"
MINI_APP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_app.py"


def _backend_param(name: str) -> ParameterSet:
    """The chosen backend always runs (and fails where it cannot); the other one is skipped.
    Only a Linux machine without Xvfb skips the AT-SPI run, and not when
    LOOPKIT_REQUIRE_DESKTOP says the desktop must be there."""
    chosen = default_backend_name()  # LOOPKIT_UI_BACKEND, else the platform's
    if name != chosen:
        reason = f"this run checks the {chosen!r} backend ({BACKEND_ENV}, else the platform's)"
        return pytest.param(name, marks=pytest.mark.skip(reason=reason))
    missing = desktop_available() if name == "atspi" else None
    if missing and not os.environ.get("LOOPKIT_REQUIRE_DESKTOP"):
        return pytest.param(name, marks=pytest.mark.skip(reason=missing))
    return pytest.param(name)


BACKENDS = [_backend_param("atspi"), _backend_param("uia")]


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
        wait_until_attached(ui, proc, "AddItemButton", "the invoice app")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def wait_until_attached(
    ui: UIServerClient, proc: subprocess.Popen[bytes], target: str, what: str
) -> None:
    """Poll until the server finds ``target`` in the freshly started app (or it died)."""
    deadline = time.monotonic() + 30
    while True:
        answer = ui.call("ui_get_element", target=target)
        if not answer.error:
            return
        assert proc.poll() is None, f"{what} exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"{what} never showed up: {answer.text}"


@pytest.fixture(scope="module")
def mini_ui(backend_name: str, platform: Platform, output_dir: Path) -> Iterator[UIServerClient]:
    """The UI MCP server over stdio, attached lazily to whichever mini app is running."""
    args = ["-m", "loopkit_ui.server", "--backend", backend_name, "--app-name", "mini_app",
            "--output-dir", str(output_dir), "--attach-timeout", "10"]  # fmt: skip
    client = UIServerClient(args, env=platform.env())
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def mini_app(platform: Platform, mini_ui: UIServerClient) -> Iterator[subprocess.Popen[bytes]]:
    """A fresh mini app (tests/ui/fixtures/mini_app.py) for each test."""
    proc = platform.spawn([sys.executable, str(MINI_APP)], env=platform.env(), cwd=MINI_APP.parent)
    try:
        wait_until_attached(mini_ui, proc, "BlinkButton", "the mini app")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
