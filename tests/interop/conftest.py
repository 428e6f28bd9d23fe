"""Shared pieces of the interop tests: servers in subprocesses on 127.0.0.1 and the official
clients from npm (tests/interop/clients, installed by scripts/setup.sh --tests)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.installed import unavailable

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"


class Server:
    """``python -m tests.interop.serve FACTORY FOLDER`` in a subprocess; :attr:`url` once up."""

    def __init__(self, factory: str, folder: Path) -> None:
        self.factory = factory
        self.folder = folder
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> str:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.interop.serve", self.factory, str(self.folder)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=(self.folder / "server.err").open("a"),
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.process.kill()
            raise AssertionError(
                f"the server did not start: {line!r}\n{(self.folder / 'server.err').read_text()}"
            )
        self.url = line
        return line

    def kill(self) -> None:
        """SIGKILL: nothing of the process gets to clean up (as a crash)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[type[Server]]:
    made: list[Server] = []

    class Tracked(Server):
        def __init__(self, factory: str, folder: Path = tmp_path) -> None:
            super().__init__(factory, folder)
            made.append(self)

    yield Tracked
    for server in made:
        server.stop()


@pytest.fixture(scope="session")
def node() -> str:
    program = shutil.which("node")
    if program is None:
        unavailable("node is not installed (the official AG-UI and MCP clients run on Node.js)")
    if not (CLIENTS / "node_modules" / "@ag-ui" / "client").is_dir():
        unavailable(
            f"the official clients are not installed in {CLIENTS} (scripts/setup.sh --tests "
            "runs npm ci there)"
        )
    return program
