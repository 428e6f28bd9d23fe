"""The application the UI server launches (``--launch``) gets no key from the server's
environment, and still everything it needs to show up on the desktop."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient

from .conftest import EXAMPLES_DIR

pytestmark = [pytest.mark.ui, pytest.mark.integration]

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Ui7" * 30,
    "OPENAI_API_KEY": "sk-proj-" + "Ui5" * 16,
    "MY_SERVICE_TOKEN": "service-token-ui-99",
    "GITHUB_PAT": "github_pat_" + "Ui3" * 25,
}


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}


def test_launched_application_gets_no_key(headless_desktop: HeadlessDesktop) -> None:
    marker = secrets.token_hex(8)  # unique: another copy of the suite runs this same test
    # the examples for the app, and whatever src/ the tests run from for the server
    python_path = os.pathsep.join(filter(None, [str(EXAMPLES_DIR), os.environ.get("PYTHONPATH")]))
    env = headless_desktop.child_env(
        {"PYTHONPATH": python_path, "LOOPKIT_UI_LAUNCH_MARKER": marker, **KEYS}
    )
    args = ["-m", "loopkit_ui.server", "--launch", f"{sys.executable} -m invoice_app",
            "--launch-cwd", str(EXAMPLES_DIR), "--attach-timeout", "20"]  # fmt: skip
    with UIServerClient(args, env=env) as ui:
        # it shows up on the desktop: the display and the accessibility bus reached it
        assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 250.00"
        apps = [
            pid
            for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if _safe_environ(pid).get("LOOPKIT_UI_LAUNCH_MARKER") == marker
            and Path(f"/proc/{pid}/cmdline").read_bytes().endswith(b"-m\0invoice_app\0")
        ]
        assert len(apps) == 1
        app_env = _environ(apps[0])
    leaked = sorted(set(app_env) & set(KEYS))
    print(f"UI server --launch: secret variables tried {len(KEYS)}, leaked {len(leaked)}")
    assert leaked == []
    assert app_env["DISPLAY"] == env["DISPLAY"]
    assert app_env["PYTHONPATH"] == python_path


def _safe_environ(pid: int) -> dict[str, str]:
    try:
        return _environ(pid)
    except OSError:
        return {}
