"""The headless desktop's daemons and guard get the allowlisted environment: never the provider
key nor ``LOOPKIT_DATABASE_URL`` (its password), read from ``/proc/<pid>/environ`` of the real
processes; the command started on the desktop still gets the whole environment (a demo or a
worker inside needs both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import desktop_available

pytestmark = [
    pytest.mark.ui,
    pytest.mark.integration,
    pytest.mark.skipif(desktop_available() is not None, reason=str(desktop_available())),
]

KEY = "sk-ant-api03-" + "Dm4" * 30
DATABASE = "postgresql://loopkit:daemon-db-pass-81x@db.example/loopkit"


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def test_the_daemons_get_no_key_and_no_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("LOOPKIT_DATABASE_URL", DATABASE)
    desktop = HeadlessDesktop().start()
    try:
        command = desktop.spawn(["sleep", "30"])
        daemons = desktop.pids() - {command.pid}
        guard = desktop._guard
        assert guard is not None
        seen = {pid: _environ(pid) for pid in {*daemons, guard.pid}}
        seen = {pid: env for pid, env in seen.items() if env}  # a short-lived helper may be gone
        assert len(seen) >= 3, seen.keys()  # Xvfb, dbus-daemon, the AT-SPI launcher, the guard
        for pid, env in seen.items():
            assert "ANTHROPIC_API_KEY" not in env and "LOOPKIT_DATABASE_URL" not in env, pid
            assert KEY not in str(env) and "daemon-db-pass" not in str(env), pid
            assert "PATH" in env, pid
        started = _environ(command.pid)
        assert started["ANTHROPIC_API_KEY"] == KEY and started["LOOPKIT_DATABASE_URL"] == DATABASE
        command.kill()
        command.wait(5)
    finally:
        desktop.stop()
