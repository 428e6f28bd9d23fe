"""The demo starts its UI server before it checks its settings (its imports run meanwhile): the
run uses that process, no second server is spawned, and bad input ends it with nothing left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import (
    carrying,
    cmdline,
    copy_card,
    run_demo,
    start_demo,
    survivors,
    wait_for_round,
)

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_the_run_uses_the_ui_server_started_first(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    demo = start_demo(tmp_path, card)
    seen = wait_for_round(demo, tmp_path / "runs", "ui_click")
    servers = {pid: cmdline(pid) for pid in seen if "loopkit_ui.server" in cmdline(pid)}
    parents = {pid: _parent(pid) for pid in servers}
    output, _ = demo.communicate(timeout=300)
    assert demo.returncode == 0, output
    assert len(servers) == 1, servers  # no second server was spawned
    ((pid, command),) = servers.items()
    assert "loopkit.mcp.waiting_server" in command
    # Started by the demo itself, before the desktop and the forked run.
    assert parents[pid] == demo.pid
    assert survivors(carrying(str(tmp_path)), within=30) == []


def test_bad_input_ends_the_waiting_ui_server(tmp_path: Path) -> None:
    done = run_demo(tmp_path, tmp_path / "no-such-card.md", timeout=120)
    assert done.returncode == 2, done.output
    assert "no-such-card.md" in done.output
    # Ended and reaped before the command returned: nothing of this test's is running.
    assert [p for p in carrying(str(tmp_path)) if p != os.getpid()] == []
