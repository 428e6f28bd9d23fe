"""A note, its topic line and the router's count change together or not at all."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopkit.abstractions import ToolError
from loopkit_tools.memory import MemoryTools, Note, Notebook
from tests.memory.test_notes import _consistent


def _snapshot(repo: Path) -> dict[str, bytes]:
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted((repo / "notes").rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("fail_at", [1, 2], ids=["before-topic", "before-router"])
def test_a_failure_between_the_writes_leaves_router_and_topic_consistent(
    memory: MemoryTools, repo: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    memory.write_note("verdict", "saving", "Autosave", verdict="Works.")
    memory.write_note("verdict", "saving", "Manual save", verdict="Works.")
    before = _snapshot(repo)
    # The renames are note, topic, router. A rename failing on a healthy disk cannot be caused
    # on demand (the tests run as root, so permissions do not stop it): os.replace fails on its
    # n-th call here; the files, folders and descriptors are the real ones.
    real_replace = os.replace
    calls = 0

    def failing_replace(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == fail_at + 1:
            raise OSError(5, "Input/output error")
        real_replace(*args, **kwargs)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(ToolError, match="input/output error"):
        memory.write_note("verdict", "saving", "Save as", verdict="Works.")
    monkeypatch.setattr(os, "replace", real_replace)

    assert _snapshot(repo) == before  # the renamed files were put back, no temp file is left
    _consistent(repo)
    assert "Save as" not in memory.search_notes("save as")
    memory.write_note("verdict", "saving", "Save as", verdict="Works.")
    assert "(3 notes)" in memory.read_router()
    _consistent(repo)


def test_a_refused_file_of_the_change_writes_none(repo: Path, tmp_path: Path) -> None:
    # The router fits the limit, the topic file with its long lines does not: the refusal comes
    # while staging, before anything is renamed.
    book = Notebook(repo, cache_dir=tmp_path / "cache", max_file_bytes=600)
    long = "x" * 130
    book.write_note(Note(kind="verdict", topic="t", title="one", verdict=long))
    before = _snapshot(repo)
    with pytest.raises(ToolError, match="the limit is 600 bytes"):
        for i in range(5):
            book.write_note(Note(kind="verdict", topic="t", title=f"n{i}", verdict=long))
    after = _snapshot(repo)
    assert set(after) - set(before) <= {f"notes/t/n{i}.md" for i in range(5)}
    _consistent(repo)
