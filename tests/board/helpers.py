"""Starting ``python -m loopkit_board`` (and a worker) for real, and logging in over HTTP."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from loopkit_board.auth import hash_secret

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "examples" / "cards"
CARD = "delete-asks-for-confirmation"
PASSWORD = "correct horse battery staple"
TOKEN = "board-test-token-7f3a"
_HASHES: dict[str, str] = {}


def hashed(secret: str) -> str:
    """argon2 is slow on purpose: hash each test secret once per session."""
    if secret not in _HASHES:
        _HASHES[secret] = hash_secret(secret)
    return _HASHES[secret]


def write_accounts(folder: Path) -> Path:
    path = folder / "accounts.toml"
    path.write_text(
        f'[accounts]\nann = "{hashed(PASSWORD)}"\n\n[tokens]\nci = "{hashed(TOKEN)}"\n',
        encoding="utf-8",
    )
    return path


def board_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"), "LOOPKIT_HEADLESS": "always"}
    for name in ("LOOPKIT_IN_HEADLESS_SESSION", "LOOPKIT_DATABASE_URL", "LOOPKIT_BOARD_ACCOUNTS"):
        env.pop(name, None)
    return env


def copy_card(cards: Path, name: str = CARD) -> Path:
    cards.mkdir(parents=True, exist_ok=True)
    target = cards / f"{name}.md"
    shutil.copy(CARDS / f"{name}.md", target)
    return target


@dataclass
class Board:
    process: subprocess.Popen[str]
    url: str

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def login(self, client: httpx.Client, password: str = PASSWORD) -> httpx.Response:
        page = client.get("/login")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token, page.text
        return client.post(
            "/login", data={"name": "ann", "password": password, "csrf": token.group(1)}
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def start_board(tmp_path: Path, *args: str, cwd: Path = ROOT) -> Board:
    """The board on a free loopback port, its cards in tmp_path/cards, working in ``cwd``."""
    (tmp_path / "cards").mkdir(exist_ok=True)
    accounts = tmp_path / "accounts.toml"
    if not accounts.exists():
        write_accounts(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "loopkit_board", "--cards", str(tmp_path / "cards"),
         "--accounts", str(accounts), "--port", "0", *args],
        cwd=cwd,
        env=board_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"board on (http://\S+?)/ ", line)
    if not found:
        process.kill()
        rest = process.stdout.read()
        raise AssertionError(f"the board did not start: {line}{rest}")
    url = found.group(1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the lifespan (DBOS start) runs before requests
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/login", timeout=5).status_code == 200:
                break
        time.sleep(0.1)
    return Board(process, url)


@contextlib.contextmanager
def running_board(tmp_path: Path, *args: str, cwd: Path = ROOT) -> Iterator[Board]:
    board = start_board(tmp_path, *args, cwd=cwd)
    try:
        yield board
    finally:
        board.stop()


def start_worker(tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loopkit.worker", "--name", "board-test"],
        cwd=ROOT,
        env=board_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stop_worker(worker: subprocess.Popen[str]) -> str:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(5)
    assert worker.stdout is not None
    return worker.stdout.read()
