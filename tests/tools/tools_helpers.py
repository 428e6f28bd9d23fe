"""Helpers for the loopkit_tools tests: a real workspace with real attack material around it."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopkit.abstractions import ToolError
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
    # Through the folder's descriptor: a socket path is limited to 107 bytes, and pytest's
    # temporary folders under a long checkout (or nox's envdir) are longer than that.
    folder = os.open(app, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.bind(f"/proc/self/fd/{folder}/sock")
    finally:
        os.close(folder)
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


class NaiveGuard:
    """A guard as it must NOT be written, to prove the escape detectors detect something.

    With ``check=False`` it only joins the path to the root. With ``check=True`` it checks the
    path with ``realpath`` against the allowed folders, waits ``window_s`` (widening the window a
    racer needs), and then opens the path by name: the check-then-open race the real guard avoids
    by resolving and opening through folder file descriptors.
    """

    def __init__(
        self,
        root: Path,
        read_folders: list[str],
        write_folders: list[str],
        *,
        check: bool = True,
        window_s: float = 0.0,
        max_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.read_folders = read_folders
        self.write_folders = write_folders
        self.check = check
        self.window_s = window_s
        self.max_bytes = max_bytes

    def _path(self, path: object, folders: list[str]) -> str:
        if not isinstance(path, str):
            raise ToolError("not a string")
        full = os.path.join(self.root, path)
        if self.check:
            real = os.path.realpath(full)
            tops = [str(self.root / f) for f in folders]
            if not any(real == t or real.startswith(t + os.sep) for t in tops):
                raise ToolError(f"{path!r} is outside the allowed folders")
            time.sleep(self.window_s)
        return full

    def read_text(self, path: str) -> str:
        fd = os.open(self._path(path, self.read_folders), os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            return f.read(self.max_bytes).decode("utf-8", errors="replace")

    def write_text(self, path: str, content: str) -> int:
        full = self._path(path, self.write_folders)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            return f.write(content)

    def list_files(self, folder: str = "") -> list[str]:
        full = self._path(folder, self.read_folders)
        found = []
        for dirpath, _dirs, files in os.walk(full):
            found += [os.path.relpath(os.path.join(dirpath, n), self.root) for n in files]
        return sorted(found)

    def listing(self, folder: str = "") -> Any:
        from loopkit_tools.fd_walk import Listing

        return Listing(files=self.list_files(folder))
