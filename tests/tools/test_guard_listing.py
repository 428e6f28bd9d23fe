"""The guard's listing, exactly: which folders it walks and in what order, what it leaves out and
counts, its notes word for word, and what it does when the tree changes while it walks.

Changes during a walk are made at one precise moment by a wrapper around ``os.open`` or
``os.scandir`` that changes the disk (a real rename, symlink or unlink) just before the walk's own
call; the kernel then answers as it would to a real racer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit_tools import PathRefusedError, WorkspaceGuard
from loopkit_tools.fd_paths import DIR_FLAGS
from loopkit_tools.fd_walk import Listing


def files(root: Path, *rels: str) -> None:
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


def refused(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(PathRefusedError) as e:
        call(*args)
    return str(e.value)


def before_open_of(
    monkeypatch: pytest.MonkeyPatch, name: str, change: Callable[[], None]
) -> list[int]:
    """Run ``change`` once, right before the first ``os.open(name, DIR_FLAGS, ...)``.

    (O_DIRECTORY | O_NOFOLLOW on a symlink: Linux answers ENOTDIR.)"""
    real = os.open
    ran: list[int] = []

    def wrapper(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not ran and path == name and flags == DIR_FLAGS:
            ran.append(1)
            change()
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", wrapper)
    return ran


def test_every_spelling_of_everything_lists_all_readable_folders(tmp_path: Path) -> None:
    files(tmp_path, "app/a.py", "docs/d.md", "secret.txt")
    guard = WorkspaceGuard(tmp_path, ["docs"], ["app"])
    everything = ["app/a.py", "docs/d.md"]
    assert guard.listing().files == everything
    for folder in ("", ".", "./"):
        assert guard.listing(folder).files == everything, folder


def test_the_cap_keeps_the_first_files_in_sorted_order_across_folders(tmp_path: Path) -> None:
    """Folders are walked as their paths sort with a slash after them: 'a-b/' < 'a/' < 'aW/'."""
    files(tmp_path, "a/x/f.py", "a-b/f.py", "aW/f.py", "b/f.py", "zz/f.py")
    cases = [
        (["a/x", "a-b"], "a-b/f.py"),  # not ('a', 'x') < ('a-b',)
        (["aW", "a/x"], "a/x/f.py"),
        (["aW", "a"], "a/x/f.py"),  # 'a/' < 'aW/'; the slash is what sorts them
        (["b", "./zz"], "b/f.py"),  # by the resolved path, not by the name as configured
        (["./zz", "b"], "b/f.py"),
    ]
    for read, first in cases:
        guard = WorkspaceGuard(tmp_path, read, [], max_list_entries=1)
        listing = guard.listing()
        assert (listing.files, listing.more) == ([first], 1), read


def test_a_configured_folder_that_is_missing_or_a_file_is_skipped(tmp_path: Path) -> None:
    files(tmp_path, "b/f.py", "c/f.py", "a_file")
    guard = WorkspaceGuard(tmp_path, ["a_missing", "a_file", "c"], ["b"])
    assert guard.listing().files == ["b/f.py", "c/f.py"]
    assert refused(guard.listing, "a_missing") == "folder 'a_missing' does not exist"
    assert refused(guard.listing, "a_file") == (
        "folder 'a_file' is a file, not a folder; use read_file"
    )


def test_folder_refusals_name_the_folder_as_written(tmp_path: Path) -> None:
    files(tmp_path, "app/a.py", "private/p.py")
    guard = WorkspaceGuard(tmp_path, [], ["app"])
    assert refused(guard.check_folder, "/app") == (
        "folder '/app' is absolute; use a path relative to the workspace under app/"
    )
    assert refused(guard.check_folder, "app ") == (
        "folder 'app ' has leading or trailing whitespace"
    )
    for call in (guard.check_folder, guard.listing):
        assert refused(call, "private/") == (
            "folder 'private' is outside the folders you may list: app/"
        )
    assert refused(guard.check_folder, "app/a.py") == (
        "folder 'app/a.py' is a file, not a folder; use read_file"
    )
    assert refused(guard.check_folder, "app/nope/") == "folder 'app/nope/' does not exist"
    assert guard.check_folder("app/") == tmp_path / "app"
    (tmp_path / "app" / "subX").mkdir()  # only slashes are taken off the end
    assert guard.check_folder("app/subX//") == tmp_path / "app" / "subX"
    assert guard.check_folder("app/..//app") == tmp_path / "app"


def test_symlinks_that_lead_to_no_readable_file_are_not_listed(tmp_path: Path) -> None:
    app = tmp_path / "app"
    files(tmp_path, "app/a.py")
    os.mkfifo(app / "fifo_real")
    os.symlink("fifo_real", app / "fifo_link")
    os.symlink("gone.py", app / "dangling")
    os.symlink("a.py", app / "alias.py")
    guard = WorkspaceGuard(tmp_path, [], ["app"])
    assert guard.listing("app").files == ["app/a.py", "app/alias.py"]


def test_a_folder_swapped_for_a_symlink_before_it_is_listed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files(tmp_path, "app/sub/s.py", "outside/o.py")
    guard = WorkspaceGuard(tmp_path, [], ["app"])

    def swap() -> None:
        os.rename(tmp_path / "app" / "sub", tmp_path / "old_sub")
        os.symlink(tmp_path / "outside", tmp_path / "app" / "sub")

    before_open_of(monkeypatch, "sub", swap)
    assert refused(guard.listing, "app/sub") == (
        "cannot list 'app/sub': a part of it is a file, not a folder (ENOTDIR)"
    )


def test_a_top_folder_swapped_while_everything_is_listed_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files(tmp_path, "app/sub/s.py", "outside/o.py")
    guard = WorkspaceGuard(tmp_path, ["app/sub"], [])

    def swap() -> None:
        os.rename(tmp_path / "app" / "sub", tmp_path / "old_sub")
        os.symlink(tmp_path / "outside", tmp_path / "app" / "sub")

    before_open_of(monkeypatch, "sub", swap)
    assert refused(guard.listing, "") == (
        "cannot list 'app/sub': a part of it is a file, not a folder (ENOTDIR)"
    )


def test_a_subfolder_swapped_during_the_walk_is_skipped_and_the_rest_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files(tmp_path, "app/a/in_a.py", "app/b/in_b.py", "app/c.py", "outside/o.py")

    def swap() -> None:
        os.rename(tmp_path / "app" / "a", tmp_path / "old_a")
        os.symlink(tmp_path / "outside", tmp_path / "app" / "a")

    guard = WorkspaceGuard(tmp_path, [], ["app"])
    ran = before_open_of(monkeypatch, "a", swap)
    assert guard.listing("app").files == ["app/b/in_b.py", "app/c.py"]
    assert ran


def test_files_read_before_the_budget_ran_out_are_still_listed(tmp_path: Path) -> None:
    """The budget runs out inside a/: ab/ is not read any more, but b.py and c.py, read
    before, are listed."""
    files(
        tmp_path, "app/b.py", "app/c.py", "app/ab/x.py", *(f"app/a/f{i:02}.py" for i in range(20))
    )
    guard = WorkspaceGuard(tmp_path, [], ["app"], max_list_scan=9)
    listing = guard.listing("app")
    assert listing.complete is False
    assert listing.scanned == 9  # a/, ab/, b.py, c.py at the top, then 5 entries of a/
    assert [f for f in listing.files if not f.startswith("app/a/")] == ["app/b.py", "app/c.py"]
    assert len(listing.files) == 7
    assert listing.notes() == [
        "[... more files not shown: the listing stopped after reading 9 folder entries; "
        "list a subfolder]"
    ]


def test_left_out_entries_do_not_stop_the_scan_of_their_folder(tmp_path: Path) -> None:
    """Excluded, too long and unnamable entries are mixed with listable ones in one folder."""
    app = tmp_path / "app"
    app.mkdir()
    names = []
    for i in range(10):
        names += [f"ok{i}.py", f"skip{i}.pyc", f"co:lon{i}.py"]
    for name in names:
        (app / name).write_text("")
    guard = WorkspaceGuard(tmp_path, [], ["app"])
    listing = guard.listing("app")
    assert listing.files == [f"app/ok{i}.py" for i in range(10)]
    assert listing.unnamable == 10 and listing.scanned == 30
    assert listing.notes() == [
        "[10 names read_file cannot take are not listed: names that are not UTF-8, or have "
        "control characters, line separators, ':', '\\' or other forms the workspace guard "
        "refuses]"
    ]


def test_a_path_of_exactly_1024_characters_is_listed(tmp_path: Path) -> None:
    top = "app/" + "/".join(["d" * 200] * 4)  # 4 + 4 * 200 + 3 = 807 characters
    (tmp_path / top).mkdir(parents=True)
    at_limit = top + "/" + "f" * (1024 - len(top) - 1)
    over_1 = top + "/" + "g" * (1025 - len(top) - 1)
    over_2 = top + "/" + "h" * (1026 - len(top) - 1)
    for rel in (at_limit, over_1, over_2):
        (tmp_path / rel).write_text("")
    assert len(at_limit) == 1024
    guard = WorkspaceGuard(tmp_path, [], ["app"])
    listing = guard.listing("app")
    assert listing.files == [at_limit]
    assert listing.too_long == 2


def test_a_file_removed_while_its_folder_is_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files(tmp_path, *(f"app/f{i}.py" for i in range(10)))
    real_scandir = os.scandir
    removed: list[str] = []

    class Removing:
        """scandir of app/ whose first file disappears after it was read, before its lstat."""

        def __init__(self, it: Any) -> None:
            self.it = it

        def __enter__(self) -> Removing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self) -> Iterator[Any]:
            for entry in self.it:
                if not removed:
                    removed.append(entry.name)
                    os.unlink(tmp_path / "app" / entry.name)
                yield entry

    monkeypatch.setattr(os, "scandir", lambda fd: Removing(real_scandir(fd)))
    listing = WorkspaceGuard(tmp_path, [], ["app"]).listing("app")
    assert removed
    assert listing.files == sorted(f"app/f{i}.py" for i in range(10) if f"f{i}.py" != removed[0])


def test_notes_are_empty_for_a_whole_listing_and_count_each_kind(tmp_path: Path) -> None:
    assert Listing(files=["a"]).notes() == []
    assert Listing(more=3).notes() == ["[... 3 more files not shown; list a subfolder]"]
    assert Listing(too_long=2, max_chars=1024).notes() == [
        "[2 paths longer than 1024 characters are not listed (and their folders not walked): "
        "read_file cannot open them]"
    ]


def test_a_name_like_git_is_not_git(tmp_path: Path) -> None:
    files(tmp_path, "app/.gitX", "app/.git./x", "app/.GIT/y")
    guard = WorkspaceGuard(tmp_path, [], ["app"])
    assert guard.read_text("app/.gitX") == ""
    assert guard.listing("app").files == ["app/.gitX"]
