"""Helpers for the loopkit_tools tests: a real workspace with real attack material around it."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopkit_tools import LocalTools, ToolsConfig

MAX_FILE_BYTES = 1000


@dataclass
class Workspace:
    """A scratch repository (``repo``) and a folder outside it (``outside``) full of secrets."""

    base: Path
    repo: Path
    outside: Path
    marker: str
    sockets: list[socket.socket] = field(default_factory=list)

    def config(self, **overrides: object) -> ToolsConfig:
        values: dict[str, object] = {
            "root": self.repo,
            "read_folders": ["invoice_app", "docs"],
            "write_folders": ["invoice_app"],
            "max_file_bytes": MAX_FILE_BYTES,
            "app_ready": None,
        }
        values.update(overrides)
        return ToolsConfig.model_validate(values)


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout (raises on failure)."""
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    marker = f"TOPSECRET-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(marker + " outside\n")
    (outside / "hardlinked.txt").write_text(marker + " hard link target\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".git" / "description").write_text(marker + " in .git\n")
    (repo / "secret.txt").write_text(marker + " at the root\n")
    (repo / "private").mkdir()
    (repo / "private" / "key.txt").write_text(marker + " private\n")
    docs = repo / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\nUse two decimals.\n")
    os.symlink(outside, docs / "link_up")
    app = repo / "invoice_app"
    (app / "sub").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "main.py").write_text("def total(a, b):\n    return a + b\n")
    (app / "sub" / "x.py").write_text("X = 1\n")
    (app / "huge.txt").write_text("abcdefghij" * 500)  # 5,000 bytes > MAX_FILE_BYTES
    (app / "blob.bin").write_bytes(bytes(range(256)) * 4)
    os.symlink(outside, app / "link_out")
    os.symlink(outside / "secret.txt", app / "link_file")
    os.symlink("../secret.txt", app / "link_root_secret")
    os.symlink("../.git/description", app / "link_git")
    os.symlink("..", app / "link_dotdot")
    os.symlink("/dev/null", app / "devnull")
    os.symlink("loop", app / "loop")
    os.link(outside / "hardlinked.txt", app / "hardlink")
    os.mkfifo(app / "fifo")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(app / "sock"))
    if os.geteuid() == 0:  # a real character device inside the workspace needs root
        os.mknod(app / "chardev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    ws = Workspace(tmp_path, repo, outside, marker, [sock])
    yield ws
    sock.close()


@pytest.fixture
def tools(workspace: Workspace) -> LocalTools:
    return LocalTools(workspace.config())


def tool_by_name(local: LocalTools, name: str):  # type: ignore[no-untyped-def]
    """The Tool called ``name`` from ``local.tools``."""
    return next(t for t in local.tools if t.name == name)


PY = sys.executable
