"""Card files on disk: writing the state keeps the file's mode and writes through a symlink; a
card above the size limit is refused unread and never rewritten; odd files are clear errors."""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit.cards import mark_failed_in_file, read_card_text
from loopkit.cards.card import MAX_CARD_BYTES
from loopkit.errors import CardError

CARD = "---\ntitle: Deleting asks first\nstate: New\ncategory: Bug\n---\nBody stays.\n"
BROKEN = "---\nstate: New\ncategory: Bug\n---\nNo title here.\n"  # front matter, no title


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mode", [0o664, 0o640, 0o444])
def test_saving_the_state_keeps_the_files_mode(tmp_path: Path, mode: int) -> None:
    card_file = tmp_path / "card.md"
    card_file.write_text(CARD, encoding="utf-8")
    card_file.chmod(mode)
    Card.load(card_file).save_state(CardState.IN_WORK)
    assert "state: In Work" in card_file.read_text(encoding="utf-8")
    assert _mode(card_file) == mode


def test_marking_a_broken_card_failed_keeps_the_files_mode(tmp_path: Path) -> None:
    card_file = tmp_path / "card.md"
    card_file.write_text(BROKEN, encoding="utf-8")
    card_file.chmod(0o664)
    assert mark_failed_in_file(card_file)
    assert "state: Failed" in card_file.read_text(encoding="utf-8")
    assert _mode(card_file) == 0o664


def test_saving_the_state_writes_through_a_symlink(tmp_path: Path) -> None:
    board = tmp_path / "board"
    board.mkdir()
    target = board / "card.md"
    target.write_text(CARD, encoding="utf-8")
    target.chmod(0o644)
    link = tmp_path / "card.md"
    link.symlink_to(Path("board") / "card.md")  # relative, into another folder
    Card.load(link).save_state(CardState.DONE)
    assert link.is_symlink() and os.readlink(link) == str(Path("board") / "card.md")
    assert "state: Done" in target.read_text(encoding="utf-8")
    assert _mode(target) == 0o644
    assert sorted(p.name for p in board.iterdir()) == ["card.md"]  # no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board", "card.md"]


def test_marking_failed_writes_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.md"
    target.write_text(BROKEN, encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert mark_failed_in_file(link)
    assert link.is_symlink()
    assert "state: Failed" in target.read_text(encoding="utf-8")


def test_a_card_of_exactly_the_limit_is_read_one_byte_more_is_refused(tmp_path: Path) -> None:
    card_file = tmp_path / "card.md"
    card_file.write_text(CARD + "x" * (100 - len(CARD)), encoding="utf-8")
    assert card_file.stat().st_size == 100
    assert Card.load(card_file, max_bytes=100).title == "Deleting asks first"
    with pytest.raises(CardError, match=r"larger than 99 bytes \(max_card_bytes\)"):
        Card.load(card_file, max_bytes=99)


def test_a_huge_card_is_refused_unread_and_never_rewritten(tmp_path: Path) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as f:  # 2 GB, sparse: front matter first, then a hole
        f.write(BROKEN.encode())
        f.truncate(2 * 1024**3)
    before = huge.stat()
    tracemalloc.start()
    try:
        with pytest.raises(CardError, match="larger than 65,536 bytes"):
            Card.load(huge)
        assert mark_failed_in_file(huge) is False  # refused unread: not marked
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_CARD_BYTES  # read at most the limit (+1), never the file
    after = huge.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


@pytest.mark.parametrize("kind", ["directory", "fifo", "not utf-8", "missing"])
def test_a_card_that_cannot_be_read_is_a_clear_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "card.md"
    if kind == "directory":
        path.mkdir()
        message = "not a regular file"
    elif kind == "fifo":
        os.mkfifo(path)  # opening it would block forever
        message = "not a regular file"
    elif kind == "not utf-8":
        path.write_bytes(b"---\ntitle: caf\xe9\n---\n")
        message = "not UTF-8 text"
    else:
        message = "card file not found"
    with pytest.raises(CardError, match=message) as e:
        read_card_text(path)
    assert str(path) in str(e.value)
    assert mark_failed_in_file(path) is False
