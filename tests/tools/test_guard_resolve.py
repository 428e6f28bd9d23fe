"""Resolving a path through folder descriptors, exactly: symlinks counted to the 40th, where each
kind of failure is named and where it is only "outside", and what a name that changes while it
is opened leads to.

A failure inside (or on the way to) an allowed folder is named for what it is; the same failure
anywhere else is only "outside the folders you may read", so a refusal says nothing about places
the model may not look at. Each kind is tried both ways.

Names that change at one precise moment are made by wrappers around one ``os`` function that
change the disk just before (or after) the guard's own call. Errors that root (these tests' user)
never gets, EACCES and EIO, are faked by the same wrappers and say so.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopkit_tools import PathRefusedError, WorkspaceGuard
from loopkit_tools.fd_paths import DIR_FLAGS, DirChain

READ = "invoice_app/, docs/"
LONG = "n" * 300  # a name over NAME_MAX (255 bytes), in a path under the guard's 1,024


@pytest.fixture
def root(tmp_path: Path) -> Path:
    app = tmp_path / "invoice_app"
    (app / "sub").mkdir(parents=True)
    (app / "main.py").write_text("X = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n")
    (tmp_path / "private" / "sub").mkdir(parents=True)
    (tmp_path / "private" / "key.txt").write_text("key\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return tmp_path


def guard_of(root: Path) -> WorkspaceGuard:
    return WorkspaceGuard(root, ["docs"], ["invoice_app"])


def refused(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(PathRefusedError) as e:
        call(*args)
    return str(e.value)


def outside(path: str, verb: str = "read", allowed: str = READ, link: bool = False) -> str:
    note = " (it resolves through a symlink)" if link else ""
    return f"path {path!r} is outside the folders you may {verb}: {allowed}{note}"


def wrap(
    monkeypatch: pytest.MonkeyPatch,
    function: str,
    when: Callable[..., bool],
    before: Callable[[], None] | None = None,
    error: int | None = None,
) -> list[int]:
    """``os.<function>``, but for calls ``when`` accepts: run ``before`` first, or fail with
    ``error`` instead of calling it. Returns a list with one item per call it accepted."""
    real = getattr(os, function)
    seen: list[int] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if when(*args, **kwargs):
            seen.append(1)
            if before is not None:
                before()
            if error is not None:
                raise OSError(error, os.strerror(error))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, function, wrapper)
    return seen


def open_into(folder: Path) -> int:
    """Descriptors of this process open on ``folder`` or below it."""
    targets = []
    for n in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            targets.append(os.readlink(f"/proc/self/fd/{n}"))
    return sum(t == str(folder) or t.startswith(f"{folder}/") for t in targets)


def named(name: str) -> Callable[..., bool]:
    return lambda *args, **kwargs: bool(args) and args[0] == name


def folder_open_of(name: str) -> Callable[..., bool]:
    return lambda *args, **kwargs: len(args) > 1 and args[0] == name and args[1] == DIR_FLAGS


# ------------------------------------------------------------------------------ symlinks


def test_forty_symlinks_in_a_row_are_followed_and_the_41st_is_refused(root: Path) -> None:
    app = root / "invoice_app"
    os.symlink("main.py", app / "l39")
    for i in range(39):
        os.symlink(f"l{i + 1}", app / f"l{i}")
    os.symlink("l0", app / "l_extra")
    guard = guard_of(root)
    assert guard.read_text("invoice_app/l0") == "X = 1\n"  # 40 symlinks
    assert refused(guard.read_text, "invoice_app/l_extra") == (
        "'invoice_app/l_extra': more than 40 symlinks on the way (a symlink loop)"
    )


def test_a_loop_is_named_inside_an_allowed_folder_and_only_outside_elsewhere(root: Path) -> None:
    os.symlink("rootloop", root / "rootloop")
    guard = guard_of(root)
    assert refused(guard.read_text, "rootloop") == outside("rootloop", link=True)
    # the allowed folder itself replaced by a loop once the guard runs
    os.rename(root / "invoice_app", root / "old_app")
    os.symlink("invoice_app", root / "invoice_app")
    assert refused(guard.read_text, "invoice_app/main.py") == (
        "'invoice_app/main.py': more than 40 symlinks on the way (a symlink loop)"
    )


def test_an_absolute_symlink_to_the_root_itself_stays_inside(root: Path) -> None:
    os.symlink(root, root / "invoice_app" / "to_root")
    assert guard_of(root).read_text("invoice_app/to_root/docs/guide.md") == "# Guide\n"


def test_a_symlink_out_of_the_root_is_outside_whatever_it_leads_to(root: Path) -> None:
    os.symlink("/etc", root / "invoice_app" / "abs_out")
    os.symlink(root.parent, root / "invoice_app" / "up")
    guard = guard_of(root)
    for path in ("invoice_app/abs_out/passwd", "invoice_app/up", "invoice_app/abs_out"):
        assert refused(guard.read_text, path) == outside(path, link=True), path


def test_each_way_of_ending_through_a_symlink_says_so(root: Path) -> None:
    os.symlink("../private", root / "invoice_app" / "to_private")
    guard = guard_of(root)
    for path in (
        "invoice_app/to_private/key.txt",  # an existing file
        "invoice_app/to_private/nope.py",  # a missing file
        "invoice_app/to_private/sub/..",  # a folder of the chain
    ):
        assert refused(guard.read_text, path) == outside(path, link=True), path
    path = "invoice_app/to_private/newdir/x.py"  # missing folders
    assert refused(guard.write_text, path, "x") == outside(path, "write", "invoice_app/", link=True)


def test_git_reached_through_a_symlink(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "invoice_app" / ".git").mkdir()
    (root / "invoice_app" / ".git" / "config").write_text("[core]\n")
    os.symlink("../.git", root / "invoice_app" / "gitlink")
    os.symlink(".git", root / "invoice_app" / "gl")
    guard = guard_of(root)
    assert refused(guard.read_text, "invoice_app/gitlink/config") == outside(
        "invoice_app/gitlink/config", link=True
    )
    assert refused(guard.read_text, "invoice_app/gl/config") == (
        "'invoice_app/gl/config' leads into .git, which is never readable"
    )


# ------------------------------------------------------------------------------ errors


def test_a_name_too_long_is_named_inside_and_only_outside_elsewhere(root: Path) -> None:
    guard = guard_of(root)
    file = f"invoice_app/{LONG}"
    assert refused(guard.read_text, file) == (
        f"cannot look up {file!r} (in {file!r}): a name in it is longer than the file system "
        "allows (255 bytes) (ENAMETOOLONG)"
    )
    folder = f"invoice_app/sub/{LONG}"
    assert refused(guard.read_text, folder + "/x.py") == (
        f"cannot open the folder {folder!r} (in {folder + '/x.py'!r}): a name in it is longer "
        "than the file system allows (255 bytes) (ENAMETOOLONG)"
    )
    for path in (LONG, LONG + "/x.py"):
        assert refused(guard.read_text, path) == outside(path)


def test_a_file_used_as_a_folder(root: Path) -> None:
    os.mkfifo(root / "invoice_app" / "fifo")
    guard = guard_of(root)
    assert refused(guard.read_text, "invoice_app/fifo/x") == (
        "'invoice_app/fifo/x': 'invoice_app/fifo' is not a folder"
    )
    assert refused(guard.read_text, "secret.txt/x") == outside("secret.txt/x")
    # the allowed folder itself replaced by a file once the guard runs
    os.rename(root / "invoice_app", root / "old_app")
    (root / "invoice_app").write_text("")
    assert refused(guard.read_text, "invoice_app/main.py") == (
        "'invoice_app/main.py': 'invoice_app' is a file, not a folder"
    )


def test_permission_denied_on_an_allowed_folder_is_named(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked: root opens every folder. The allowed folder itself cannot be opened."""
    guard = guard_of(root)
    wrap(monkeypatch, "open", folder_open_of("invoice_app"), error=errno.EACCES)
    assert refused(guard.read_text, "invoice_app/main.py") == (
        "cannot open the folder 'invoice_app' (in 'invoice_app/main.py'): permission denied "
        "(the runner's user may not open it) (EACCES)"
    )
    wrap(monkeypatch, "open", folder_open_of("private"), error=errno.EACCES)
    assert refused(guard.read_text, "private/key.txt") == outside("private/key.txt")


def test_permission_denied_looking_at_an_allowed_folder_is_named(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked: root may look at every name. The allowed folder itself cannot be looked at."""
    guard = guard_of(root)
    wrap(monkeypatch, "stat", named("invoice_app"), error=errno.EACCES)
    assert refused(guard.check_folder, "invoice_app") == (
        "cannot look up 'invoice_app' (in 'invoice_app'): permission denied (the runner's user "
        "may not open it) (EACCES)"
    )


def test_a_symlink_that_cannot_be_read_is_named_inside_and_only_outside_elsewhere(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked: an input/output error (EIO) reading the symlink that the allowed folder became."""
    guard = guard_of(root)
    for name in ("invoice_app", "private"):
        wrap(monkeypatch, "open", folder_open_of(name), error=errno.ELOOP)
        wrap(monkeypatch, "readlink", named(name), error=errno.EIO)
    assert refused(guard.read_text, "invoice_app/main.py") == (
        "cannot read the symlink 'invoice_app' (in 'invoice_app/main.py'): an input/output "
        "error on the disk (EIO)"
    )
    assert refused(guard.read_text, "private/key.txt") == outside("private/key.txt")


# ------------------------------------------------------------------------------ racers


class Flipper:
    """Makes the empty folder ``name`` a symlink just before the guard opens it as a folder, and
    a folder again just before the guard reads it as a symlink: the guard sees it change type
    between its two looks, ``times`` times (then it stays a folder)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, parent: Path, name: str, times: int):
        self.path, self.name, self.left = parent / name, name, times
        self.opens = wrap(monkeypatch, "open", folder_open_of(name), before=self.to_link)
        wrap(monkeypatch, "readlink", named(name), before=self.to_folder)

    def to_link(self) -> None:
        if self.left > 0:
            self.left -= 1
            os.rmdir(self.path)
            os.symlink(".", self.path)

    def to_folder(self) -> None:
        if self.path.is_symlink():
            os.unlink(self.path)
            os.mkdir(self.path)


def test_a_name_that_changed_between_two_looks_is_looked_at_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "invoice_app" / "flip").mkdir()
    guard = guard_of(root)
    flipper = Flipper(monkeypatch, root / "invoice_app", "flip", times=8)
    assert guard.check_write("invoice_app/flip/x.py") == root / "invoice_app" / "flip" / "x.py"
    assert len(flipper.opens) == 9  # eight retries, then it held still


def test_a_name_that_keeps_changing_is_refused_after_eight_retries(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "invoice_app" / "flip").mkdir()
    guard = guard_of(root)
    flipper = Flipper(monkeypatch, root / "invoice_app", "flip", times=50)
    assert refused(guard.read_text, "invoice_app/flip/x.py") == (
        "'invoice_app/flip/x.py': 'flip' kept changing while it was opened; try again"
    )
    assert len(flipper.opens) == 9


def test_a_name_that_keeps_changing_is_named_only_where_the_model_may_look(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "empty").mkdir()
    (root / "flip_root").mkdir()
    guard = WorkspaceGuard(root, [], ["empty"])
    Flipper(monkeypatch, root, "empty", times=50)
    Flipper(monkeypatch, root, "flip_root", times=50)
    assert refused(guard.read_text, "empty/x.py") == (
        "'empty/x.py': 'empty' kept changing while it was opened; try again"
    )
    assert refused(guard.read_text, "flip_root/x.py") == outside("flip_root/x.py", "read", "empty/")


def test_a_file_that_vanishes_while_it_is_looked_at_is_looked_at_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = root / "invoice_app"
    guard = guard_of(root)
    # gone before the readlink (ENOENT), and gone after it (then the stat fails)
    (app / "before").write_text("")
    wrap(monkeypatch, "readlink", named("before"), before=lambda: os.unlink(app / "before"))
    assert refused(guard.read_text, "invoice_app/before/x.py") == (
        "file 'invoice_app/before/x.py' does not exist"
    )
    (app / "after").write_text("")
    real_readlink = os.readlink

    def readlink_then_vanish(path: Any, *args: Any, **kwargs: Any) -> str:
        try:
            return str(real_readlink(path, *args, **kwargs))
        finally:
            if path == "after":
                os.unlink(app / "after")

    monkeypatch.setattr(os, "readlink", readlink_then_vanish)
    assert refused(guard.read_text, "invoice_app/after/x.py") == (
        "file 'invoice_app/after/x.py' does not exist"
    )


def test_reading_through_folders_leaves_no_descriptor_open(root: Path) -> None:
    deep = root / "invoice_app" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "f.py").write_text("F = 1\n")
    guard = guard_of(root)
    assert guard.read_text("invoice_app/a/b/c/f.py") == "F = 1\n"
    assert guard.listing("invoice_app/a").files == ["invoice_app/a/b/c/f.py"]
    assert open_into(root) == 0


# ------------------------------------------------------------------------------ the chain


def test_a_chain_keeps_using_the_folder_it_opened_after_a_rename(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    chain = DirChain(os.open(tmp_path, DIR_FLAGS))
    chain.push("a", os.open("a", DIR_FLAGS, dir_fd=chain.fd()))
    os.rename(tmp_path / "a", tmp_path / "moved")
    assert os.path.samestat(os.fstat(chain.fd()), os.stat(tmp_path / "moved"))
    chain.close()
    chain.close()  # twice is fine
    with pytest.raises(AssertionError, match=r"^the chain was closed$"):
        chain.push("a", os.open(tmp_path / "moved", DIR_FLAGS))
        chain.pop()
        chain.fd()


def test_reopening_a_chain_holds_the_top_and_the_window_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c" / "d" / "e" / "f").mkdir(parents=True)

    def open_here() -> int:
        return open_into(tmp_path)

    chain = DirChain(os.open(tmp_path, DIR_FLAGS), keep_open=2)
    for name in "abcdef":
        chain.push(name, os.open(name, DIR_FLAGS, dir_fd=chain.fd()))
    for _ in range(3):
        chain.pop()  # at c: its descriptor and those above it were closed
    assert open_here() == 1
    assert os.path.samestat(os.fstat(chain.fd()), os.stat(tmp_path / "a" / "b" / "c"))
    assert open_here() == 3  # the top, b and c
    chain.close()
    assert open_here() == 0


# ------------------------------------------------------------------------------ configuration


def test_configuration_errors_and_spellings(root: Path) -> None:
    os.symlink(root.parent, root / "up")
    with pytest.raises(ValueError) as e:
        WorkspaceGuard(root, [".."], [])
    assert str(e.value) == (
        f"configured folder '..' resolves outside the root {root}: '..' leads above the "
        "workspace root"
    )
    with pytest.raises(ValueError) as e:
        WorkspaceGuard(root, ["up"], [])
    assert str(e.value) == (
        f"configured folder 'up' resolves outside the root {root}: 'up' resolves through a "
        "symlink to outside the workspace"
    )
    missing = root / "no-such-root"
    with pytest.raises(ValueError) as e:
        WorkspaceGuard(missing, [], [])
    assert str(e.value) == f"workspace root {str(missing)!r} is not an existing folder"
    guard = WorkspaceGuard(root, ["/docs/", "/"], ["invoice_app/"])
    assert guard.read_folders == ["invoice_app", "docs", "."]
    assert guard.read_text("secret.txt") == "secret\n"
    assert (guard.max_file_bytes, guard.max_list_entries, guard.max_list_scan) == (
        100_000,
        200,
        10_000,
    )
    assert guard.relative(root / "invoice_app" / "main.py") == "invoice_app/main.py"


def test_a_root_that_is_gone_is_named(root: Path) -> None:
    guard = WorkspaceGuard(root / "invoice_app", ["."], [])
    os.rename(root / "invoice_app", root / "moved")
    assert refused(guard.read_text, "main.py") == (
        f"cannot open the workspace root {str(root / 'invoice_app')!r}: it does not exist (ENOENT)"
    )


def test_the_case_probe_is_not_fooled_by_a_name_without_letters_or_a_sibling(
    tmp_path: Path,
) -> None:
    (tmp_path / "1234").mkdir()
    assert WorkspaceGuard(tmp_path / "1234", [], []).case_insensitive is False
    (tmp_path / "Ws").mkdir()
    (tmp_path / "wS").mkdir()  # another folder whose name differs only in case
    assert WorkspaceGuard(tmp_path / "Ws", [], []).case_insensitive is False
    (tmp_path / "Ab").mkdir()
    os.symlink("Ab", tmp_path / "aB")  # a symlink to it under the swapped name
    assert WorkspaceGuard(tmp_path / "Ab", [], []).case_insensitive is False
