"""list_files: sorted, bounded work however big the tree, iterative, and honest about what it left out.

Work is measured by counting the folder entries the walk consumed (os.scandir wrapped), never by
the clock. Big trees are made in /dev/shm (tmpfs) when it exists, because creating 200,000 entries
on a loaded disk takes long; the code under test is the same on any file system.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tools_helpers import Workspace, tool_by_name

from loopkit_tools import LocalTools, PathRefusedError, ToolsConfig, WorkspaceGuard
from loopkit_tools.fd_paths import DIR_FLAGS, DirChain


class CountingScandir:
    """Wraps os.scandir and counts the entries its callers consumed."""

    def __init__(self) -> None:
        self.real = os.scandir
        self.entries = 0

    def __call__(self, path: Any) -> Any:
        return _Counted(self.real(path), self)


class _Counted:
    def __init__(self, it: Any, counter: CountingScandir) -> None:
        self.it, self.counter = it, counter

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.it.close()

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> Any:
        entry = next(self.it)
        self.counter.entries += 1
        return entry


@pytest.fixture
def fast_tmp() -> Iterator[Path]:
    """A scratch folder on tmpfs if there is one (fast to fill), else in the temp folder."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="loopkit-list-", dir=base))
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """rm -r without recursion (shutil.rmtree recurses, and these trees are 2,000 deep)."""
    stack = [str(path)]
    while stack:
        top = stack[-1]
        with os.scandir(top) as it:
            subdirs = []
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
                else:
                    os.unlink(e.path)
        if subdirs:
            stack.extend(subdirs)
        else:
            os.rmdir(top)
            stack.pop()


def deep_chain(top: Path, depth: int) -> None:
    """top/d/d/.../d, ``depth`` folders, made relative to folder descriptors (no long paths)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(1, depth + 1):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if level in (100, depth):
                os.close(os.open(f"at{level}.py", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def frames() -> int:
    f, n = sys._getframe(), 0
    while f is not None:
        f, n = f.f_back, n + 1
    return n


def test_a_huge_folder_costs_no_more_than_the_scan_budget(
    fast_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200,000 entries in one folder: the walk reads max_list_scan of them and says it stopped."""
    app = fast_tmp / "app"
    (app / "huge").mkdir(parents=True)
    (app / "a.py").write_text("A = 1\n")
    # hard links are the fastest entries to make; they count as entries (not listed: 2 links)
    (fast_tmp / "one").write_text("")
    fd = os.open(app / "huge", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(200_000):
            os.link(fast_tmp / "one", f"f{i:06d}.py", dst_dir_fd=fd)
    finally:
        os.close(fd)
    guard = WorkspaceGuard(fast_tmp, ["app"], [], max_list_entries=60, max_list_scan=5_000)
    counter = CountingScandir()
    monkeypatch.setattr(os, "scandir", counter)
    listing = guard.listing("app")
    assert counter.entries <= 5_000 + 1  # the budget, plus the one entry that proved it full
    assert listing.scanned == 5_000 and not listing.complete
    assert listing.files == ["app/a.py"]
    assert listing.notes()[0] == (
        "[... more files not shown: the listing stopped after reading 5000 folder entries; "
        "list a subfolder]"
    )
    # the same walk over a hundred entries costs a hundred: work follows the budget, not the tree
    small = fast_tmp / "app" / "small"
    small.mkdir()
    for i in range(100):
        (small / f"s{i:03d}.py").write_text("")
    counter.entries = 0
    listing = guard.listing("app/small")
    assert counter.entries == 100 and listing.complete and len(listing.files) == 60
    assert listing.more == 40 and listing.files == sorted(listing.files)
    assert listing.files[0] == "app/small/s000.py" and listing.files[-1] == "app/small/s059.py"


async def test_many_listable_files_stop_at_the_budget_with_a_truthful_note(fast_tmp: Path) -> None:
    many = fast_tmp / "app" / "many"
    many.mkdir(parents=True)
    for i in range(1_500):
        (many / f"m{i:04d}.py").write_text("")
    config = ToolsConfig(
        root=fast_tmp,
        read_folders=["app"],
        write_folders=["app"],
        max_output_lines=20,
        app_ready=None,
    )
    local = LocalTools(config)
    local.guard.max_list_scan = 500
    text = await tool_by_name(local, "list_files").invoke({"folder": "app/many"})
    lines = text.splitlines()
    assert len(lines) == 21 and lines[:20] == sorted(lines[:20])
    assert lines[20] == (
        "[... more files not shown: the listing stopped after reading 500 folder entries; "
        "list a subfolder]"
    )
    # within the budget the count is exact, and the files shown are the first ones sorted
    local.guard.max_list_scan = 10_000
    text = await tool_by_name(local, "list_files").invoke({"folder": "app/many"})
    assert text.splitlines()[:20] == [f"app/many/m{i:04d}.py" for i in range(20)]
    assert text.splitlines()[20] == "[... 1480 more files not shown; list a subfolder]"


def test_a_tree_2000_deep_lists_without_recursion_or_a_descriptor_per_level(
    fast_tmp: Path,
) -> None:
    """Folders 2,000 deep: no RecursionError, no EMFILE, long paths left out and said so.

    The recursion limit is set to the current depth + 100 and the descriptor limit to the open
    ones + 40 while listing: a recursive walk (512 levels fit in 1,024 characters) or one that
    holds a descriptor per level fails.
    """
    (fast_tmp / "app").mkdir()
    deep_chain(fast_tmp / "app", 2_000)
    guard = WorkspaceGuard(fast_tmp, ["app"], [])
    open_now = len(os.listdir("/proc/self/fd"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    old_recursion = sys.getrecursionlimit()
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 40, hard))
    sys.setrecursionlimit(frames() + 100)
    try:
        listing = guard.listing("app")
    finally:
        sys.setrecursionlimit(old_recursion)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    at100 = "app/" + "d/" * 100 + "at100.py"
    assert listing.files == [at100]
    assert listing.too_long == 1  # the first folder whose path is over 1,024 characters
    assert listing.notes() == [
        "[1 paths longer than 1024 characters are not listed (and their folders not walked): "
        "read_file cannot open them]"
    ]
    assert guard.read_text(at100) == ""


async def test_names_read_file_cannot_take_are_left_out_and_counted(
    workspace: Workspace,
) -> None:
    app = workspace.repo / "invoice_app"
    os.close(os.open(os.fsencode(app) + b"/caf\xe9.py", os.O_CREAT | os.O_WRONLY, 0o644))
    (app / "two\nlines.py").write_text("")
    (app / "colon:name.py").write_text("")
    (app / "ok.py").write_text("")
    local = LocalTools(workspace.config())
    text = await tool_by_name(local, "list_files").invoke({"folder": "invoice_app"})
    lines = text.splitlines()
    assert "invoice_app/ok.py" in lines
    assert not any("caf" in line or "lines.py" in line or "colon" in line for line in lines)
    assert lines[-1].startswith("[3 names read_file cannot take are not listed: names that are not")
    text.encode("utf-8")  # the answer is valid text: no surrogate-escaped name slipped through


async def test_symlinks_inside_are_listed_symlinked_folders_not_walked(
    workspace: Workspace,
) -> None:
    app = workspace.repo / "invoice_app"
    os.symlink("main.py", app / "alias.py")
    os.symlink("sub", app / "sub_link")
    local = LocalTools(workspace.config())
    lines = (await tool_by_name(local, "list_files").invoke({"folder": "invoice_app"})).splitlines()
    assert "invoice_app/alias.py" in lines  # read_file would read it: listed
    assert not any(line.startswith("invoice_app/sub_link") for line in lines)
    assert lines == sorted(lines)
    # listing a symlinked folder inside shows its real (resolved) paths, like read_file uses
    lines = (
        await tool_by_name(local, "list_files").invoke({"folder": "invoice_app/sub_link"})
    ).splitlines()
    assert lines == ["invoice_app/sub/x.py"]


async def test_the_listing_order_is_the_sorted_order_across_folders(
    workspace: Workspace,
) -> None:
    """Folders are walked so files come out sorted as strings ('a-b/x' before 'a/x')."""
    app = workspace.repo / "invoice_app" / "order"
    for rel in ("a/x.py", "a-b/x.py", "a.py", "a0/x.py", "b.py", "a/b/c.py"):
        (app / rel).parent.mkdir(parents=True, exist_ok=True)
        (app / rel).write_text("")
    guard = WorkspaceGuard(workspace.repo, ["invoice_app"], [], max_list_entries=4)
    listing = guard.listing("invoice_app/order")
    everything = sorted(
        f"invoice_app/order/{r}"
        for r in ("a/x.py", "a-b/x.py", "a.py", "a0/x.py", "b.py", "a/b/c.py")
    )
    assert listing.files == everything[:4] and listing.more == 2


def test_list_files_of_the_guard_keeps_its_signature(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for name in ("b.py", "a.py"):
        (tmp_path / "src" / name).write_text("")
    guard = WorkspaceGuard(tmp_path, ["."], ["src"], max_list_entries=1)
    assert guard.list_files() == ["src/a.py"]
    assert guard.list_files("src") == ["src/a.py"]
    with pytest.raises(PathRefusedError, match="folder 'nope' does not exist"):
        guard.list_files("nope")


def fds_into(folder: Path) -> int:
    """Descriptors of this process open on ``folder`` or below it."""
    count = 0
    for n in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{n}")
        except OSError:
            continue
        count += target == str(folder) or target.startswith(f"{folder}/")
    return count


def test_a_dir_chain_keeps_a_window_and_reopens_by_name(tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)
    chain = DirChain(os.open(tmp_path, DIR_FLAGS), keep_open=2)
    for name in "abcde":
        chain.push(name, os.open(name, DIR_FLAGS, dir_fd=chain.fd()))
    assert fds_into(tmp_path) == 3  # the top and the two deepest
    for _ in range(3):
        chain.pop()
    assert chain.names == ["a", "b"]
    assert os.path.samestat(os.fstat(chain.fd()), os.stat(tmp_path / "a" / "b"))
    assert fds_into(tmp_path) == 3
    # a folder swapped for a symlink is not followed when the chain reopens it
    chain.pop()
    chain.pop()
    chain.push("a", os.open("a", DIR_FLAGS, dir_fd=chain.fd()))
    chain.push("b", os.open("b", DIR_FLAGS, dir_fd=chain.fd()))
    chain.push("c", os.open("c", DIR_FLAGS, dir_fd=chain.fd()))
    chain.pop()  # at b, whose parent a is closed now
    chain.pop()  # at a: closed, reopened from the top by name on the next fd()
    os.rename(tmp_path / "a", tmp_path / "real_a")
    os.symlink(tmp_path / "real_a", tmp_path / "a")
    with pytest.raises(NotADirectoryError):
        chain.fd()
    chain.close()
    assert fds_into(tmp_path) == 0


def test_a_walk_comes_back_up_past_closed_folders(fast_tmp: Path) -> None:
    """Branches below a chain deeper than the descriptor window are still walked, in order."""
    app = fast_tmp / "app"
    deep = app / "a" / Path(*["d"] * 50)
    deep.mkdir(parents=True)
    (deep / "deep.py").write_text("")
    (app / "a" / "z").mkdir()  # a folder after the deep chain: its parent must be reopened
    (app / "a" / "z" / "y.py").write_text("")
    (app / "b").mkdir()
    (app / "b" / "x.py").write_text("")
    (app / "c.py").write_text("")
    guard = WorkspaceGuard(fast_tmp, ["app"], [])
    assert guard.list_files("app") == [
        "app/a/" + "d/" * 50 + "deep.py",
        "app/a/z/y.py",
        "app/b/x.py",
        "app/c.py",
    ]
    assert fds_into(fast_tmp) == 0


def test_readable_folders_that_overlap_are_listed_once(tmp_path: Path) -> None:
    """A folder configured twice (once through a symlink) or inside another is walked once."""
    (tmp_path / "app" / "sub").mkdir(parents=True)
    (tmp_path / "app" / "sub" / "a.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "d.md").write_text("")
    os.symlink("docs", tmp_path / "docs_link")
    guard = WorkspaceGuard(tmp_path, ["docs_link", "docs", "app/sub"], ["app"])
    assert guard.list_files() == ["app/sub/a.py", "docs/d.md"]
    assert guard.check_read("docs_link/d.md") == tmp_path / "docs" / "d.md"
