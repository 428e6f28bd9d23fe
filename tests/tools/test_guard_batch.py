"""``WorkspaceGuard.write_texts`` (several files as one change) and listing stamps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopkit_tools import PathRefusedError, WorkspaceGuard


def _guard(tmp_path: Path) -> WorkspaceGuard:
    (tmp_path / "notes").mkdir()
    return WorkspaceGuard(tmp_path, ["notes"], ["notes"])


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_write_texts_writes_all_files_and_creates_folders(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    (tmp_path / "notes" / "a.md").write_text("old a")
    size = guard.write_texts({"notes/a.md": "new a", "notes/sub/b.md": "new b"})
    assert size == len("new a") + len("new b")
    assert (tmp_path / "notes" / "a.md").read_text() == "new a"
    assert (tmp_path / "notes" / "sub" / "b.md").read_text() == "new b"
    assert _leftovers(tmp_path) == []


def test_a_refused_second_file_renames_nothing(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    (tmp_path / "notes" / "a.md").write_text("old a")
    with pytest.raises(PathRefusedError, match="outside the folders you may write"):
        guard.write_texts({"notes/a.md": "new a", "elsewhere.md": "x"})
    assert (tmp_path / "notes" / "a.md").read_text() == "old a"
    assert not (tmp_path / "elsewhere.md").exists()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_failed_rename_puts_the_renamed_files_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    # A rename failing on a healthy disk cannot be caused on demand (root ignores permissions
    # here), so os.replace fails on its n-th call; everything else is the real file system.
    guard = _guard(tmp_path)
    notes = tmp_path / "notes"
    (notes / "a.md").write_text("old a")
    (notes / "b.md").write_text("old b")
    real_replace = os.replace
    calls = 0

    def failing_replace(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == fail_at + 1:
            raise OSError(28, "No space left on device")
        real_replace(*args, **kwargs)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(PathRefusedError, match="disk is full") as caught:
        guard.write_texts({"notes/a.md": "new a", "notes/new.md": "new", "notes/b.md": "new b"})
    shown = ["'notes/a.md'", "'notes/new.md'", "'notes/b.md'"][fail_at]
    assert shown in str(caught.value)
    assert (notes / "a.md").read_text() == "old a"
    assert (notes / "b.md").read_text() == "old b"
    assert not (notes / "new.md").exists()
    assert _leftovers(tmp_path) == []


def test_stamps_change_with_the_file(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    notes = tmp_path / "notes"
    (notes / "sub").mkdir()
    (notes / "a.md").write_text("one")
    (notes / "sub" / "b.md").write_text("b")
    (notes / "__pycache__").mkdir()  # list_exclude applies
    (notes / "__pycache__" / "x.md").write_text("x")
    os.link(notes / "sub" / "b.md", tmp_path / "b-link")  # two links: not a file read_file reads
    (notes / "c.md").write_text("c")
    (notes / "link.md").symlink_to(notes / "c.md")
    before = guard.stamps("notes")
    assert set(before) == {"notes/a.md", "notes/c.md"}
    (notes / "a.md").write_text("two!")
    after = guard.stamps("notes")
    assert after["notes/a.md"][1] == 4
    assert after["notes/a.md"] != before["notes/a.md"]
    assert after["notes/c.md"] == before["notes/c.md"]
    assert guard.stamps("notes/missing") == {}
    with pytest.raises(PathRefusedError, match="outside the folders you may list"):
        guard.stamps("..")


def test_stamps_never_follow_a_folder_swapped_for_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The racer acts at the one moment that matters: after the folder was seen as a folder,
    # just before it is opened.
    guard = _guard(tmp_path)
    notes = tmp_path / "notes"
    (notes / "sub").mkdir()
    (notes / "sub" / "a.md").write_text("a")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    real_open = os.open

    def swapping_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "sub" and kwargs.get("dir_fd") is not None:
            (notes / "sub" / "a.md").unlink()
            (notes / "sub").rmdir()
            (notes / "sub").symlink_to(outside)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    assert guard.stamps("notes") == {}
