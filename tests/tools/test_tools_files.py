"""The file tools doing their job: listing, reading, atomic whole-file writes."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from tools_helpers import Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, PathRefusedError, WorkspaceGuard


async def test_read_write_roundtrip_and_new_folders(
    tools: LocalTools, workspace: Workspace
) -> None:
    write = tool_by_name(tools, "write_file")
    read = tool_by_name(tools, "read_file")
    content = "def total(a, b, discount):\n    return (a + b) * (1 - discount / 100)\n"
    assert await write.invoke({"path": "invoice_app/main.py", "content": content}) == (
        f"Wrote invoice_app/main.py ({len(content)} bytes)."
    )
    assert (workspace.repo / "invoice_app" / "main.py").read_text() == content
    assert await read.invoke({"path": "invoice_app/main.py"}) == content
    await write.invoke({"path": "invoice_app/new/deep/mod.py", "content": "Y = 'é'\n"})
    assert (workspace.repo / "invoice_app/new/deep/mod.py").read_text(
        encoding="utf-8"
    ) == "Y = 'é'\n"
    assert await read.invoke({"path": "docs/guide.md"}) == "# Guide\nUse two decimals.\n"
    # an in-place `..` that stays inside is fine: the guard resolves, it does not pattern-match
    assert await read.invoke({"path": "invoice_app/sub/../main.py"}) == content


async def test_write_keeps_mode_and_leaves_no_temp_files(
    tools: LocalTools, workspace: Workspace
) -> None:
    target = workspace.repo / "invoice_app" / "main.py"
    os.chmod(target, 0o755)
    await tool_by_name(tools, "write_file").invoke(
        {"path": "invoice_app/main.py", "content": "A=1\n"}
    )
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755
    leftovers = [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_failed_write_leaves_old_content_and_no_temp(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between writing the temp file and the rename never leaves half a file."""
    guard = WorkspaceGuard(workspace.repo, ["docs"], ["invoice_app"])
    target = workspace.repo / "invoice_app" / "main.py"
    old = target.read_text()

    def crash(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(errno.EIO, "simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    # an OS error is a clean refusal naming the path and what was wrong, not a raw OSError
    with pytest.raises(PathRefusedError, match=r"cannot write 'invoice_app/main.py': .*\(EIO\)"):
        guard.write_text("invoice_app/main.py", "half" * 100)
    assert target.read_text() == old
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


async def test_write_through_an_inside_symlink_writes_the_target(workspace: Workspace) -> None:
    app = workspace.repo / "invoice_app"
    os.symlink("main.py", app / "alias.py")
    local = LocalTools(workspace.config())
    await tool_by_name(local, "write_file").invoke(
        {"path": "invoice_app/alias.py", "content": "B=2\n"}
    )
    assert (app / "alias.py").is_symlink()
    assert (app / "main.py").read_text() == "B=2\n"


async def test_list_files_sorted_relative_and_capped(workspace: Workspace) -> None:
    app = workspace.repo / "invoice_app"
    (app / "__pycache__").mkdir()
    (app / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    for i in range(30):
        (app / "sub" / f"m{i:02}.py").write_text("")
    local = LocalTools(workspace.config(max_output_lines=10))
    text = await tool_by_name(local, "list_files").invoke({"folder": "invoice_app/sub"})
    lines = text.splitlines()
    assert lines[:10] == sorted(lines[:10]) and lines[0] == "invoice_app/sub/m00.py"
    assert lines[10] == "[... 21 more files not shown; list a subfolder]"
    assert len(lines) == 11
    everything = await LocalTools(workspace.config()).tools[0].invoke({"folder": "invoice_app"})
    assert "__pycache__" not in everything


def test_guard_standalone_and_case_probe(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x")
    guard = WorkspaceGuard(tmp_path, read_folders=["."], write_folders=["src"])
    assert guard.list_files() == ["src/a.py"]
    assert guard.check_read("src/a.py") == (tmp_path / "src" / "a.py").resolve()
    assert guard.case_insensitive is False  # Linux ext4/tmpfs; the probe really looked
    with pytest.raises(PathRefusedError, match="outside the folders you may write: src/"):
        guard.check_write("b.py")
    with pytest.raises(ValueError, match="resolves outside the root"):
        os.symlink(tmp_path.parent, tmp_path / "up")
        WorkspaceGuard(tmp_path, read_folders=["up"], write_folders=["src"])


async def test_missing_file_is_a_clear_tool_error(tools: LocalTools) -> None:
    with pytest.raises(ToolError, match=r"'invoice_app/nope\.py' does not exist"):
        await tool_by_name(tools, "read_file").invoke({"path": "invoice_app/nope.py"})
    with pytest.raises(ToolError, match="does not exist"):
        await tool_by_name(tools, "list_files").invoke({"folder": "invoice_app/nope"})


def test_containment_is_by_path_component(workspace: Workspace) -> None:
    """``invoice_app_private/`` and ``invoice_app.py`` share a prefix, not a folder, with
    ``invoice_app/``: a check that compares strings instead of path components lets them in."""
    repo = workspace.repo
    (repo / "invoice_app_private").mkdir()
    (repo / "invoice_app_private" / "key.py").write_text("KEY = 1\n")
    (repo / "invoice_app.py").write_text("X = 1\n")
    guard = WorkspaceGuard(repo, ["docs"], ["invoice_app"])
    for check in (guard.check_read, guard.check_write):
        for path in ("invoice_app_private/key.py", "invoice_app.py", "invoice_app_private/new.py"):
            with pytest.raises(PathRefusedError, match="outside the folders you may"):
                check(path)
    with pytest.raises(PathRefusedError, match="outside the folders you may list"):
        guard.check_folder("invoice_app_private")
    assert guard.check_read("invoice_app/main.py") == repo / "invoice_app" / "main.py"
    assert guard.list_files("") == sorted(guard.list_files(""))
    assert not any(p.startswith("invoice_app_private") for p in guard.list_files(""))


def test_case_insensitive_containment_still_compares_components(workspace: Workspace) -> None:
    """On a case-insensitive file system (probed at start; not this one) names compare folded."""
    guard = WorkspaceGuard(workspace.repo, [], ["invoice_app"])
    guard.case_insensitive = True  # what the probe says on such a file system
    assert guard._inside(["INVOICE_APP", "main.py"], ["invoice_app"])
    assert not guard._inside(["INVOICE_APP_private", "main.py"], ["invoice_app"])
    assert not guard._inside(["invoice"], ["invoice_app"])
    guard.case_insensitive = False
    assert not guard._inside(["INVOICE_APP", "main.py"], ["invoice_app"])


async def test_absolute_symlinks_that_stay_inside_keep_working(workspace: Workspace) -> None:
    """Symlinks are followed in user space; those that stay in the allowed folders still work,
    relative or absolute (naming the root by its real path), with ``..`` inside their target."""
    app = workspace.repo / "invoice_app"
    os.symlink(app / "main.py", app / "abs_alias.py")
    os.symlink("sub/../main.py", app / "rel_alias.py")
    os.symlink(workspace.repo / "docs", app / "docs_link")
    local = LocalTools(workspace.config())
    read = tool_by_name(local, "read_file")
    main = (app / "main.py").read_text()
    assert await read.invoke({"path": "invoice_app/abs_alias.py"}) == main
    assert await read.invoke({"path": "invoice_app/rel_alias.py"}) == main
    assert await read.invoke({"path": "invoice_app/docs_link/guide.md"}) == (
        "# Guide\nUse two decimals.\n"
    )
    # a write through the readable-only docs/ via a symlink in the writable folder is refused
    with pytest.raises(ToolError, match="outside the folders you may write"):
        await tool_by_name(local, "write_file").invoke(
            {"path": "invoice_app/docs_link/guide.md", "content": "x"}
        )
    assert local.guard.check_read("invoice_app/docs_link/guide.md") == (
        workspace.repo / "docs" / "guide.md"
    )
