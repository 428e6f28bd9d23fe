"""Fixtures of the memory tests: a real git repository in a temp folder and its memory."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit_tools.memory import MemoryTools


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "config", "user.name", "test")
    (repo / "app.py").write_text("print('app')\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "app")
    return repo


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def memory(repo: Path, cache: Path) -> Iterator[MemoryTools]:
    with MemoryTools(repo, cache_dir=cache) as tools:
        yield tools
