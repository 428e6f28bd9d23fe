"""Every refusal of the file tools is a clear ToolError naming the path and what was wrong.

Errors of the system (ENOTDIR, ENAMETOOLONG, ELOOP, EACCES, EISDIR, ...), text that is not valid
Unicode (lone surrogates in a path or in content) and names the model may not create (control
characters, line separators, bidirectional controls, zero-width characters) never reach the model
as a raw exception or "the function failed", and leave the disk as it was.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from tools_helpers import Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, PathRefusedError, WorkspaceGuard
from loopkit_tools.fd_paths import os_refusal


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


async def refusal(local: LocalTools, tool: str, **args: object) -> str:
    """The ToolError message of a call that must be refused (anything else fails the test)."""
    try:
        result = await tool_by_name(local, tool).invoke(args)
    except ToolError as e:
        return str(e)
    raise AssertionError(f"{tool} {args} was not refused: {result!r}")


# ---------------------------------------------------------------- errors of the system


async def test_a_file_used_as_a_folder_is_named(tools: LocalTools, workspace: Workspace) -> None:
    before = tree(workspace.repo)
    for tool, args in [
        ("read_file", {"path": "invoice_app/main.py/x.py"}),
        ("write_file", {"path": "invoice_app/main.py/x.py", "content": "X"}),
        ("list_files", {"folder": "invoice_app/main.py/sub"}),
    ]:
        message = await refusal(tools, tool, **args)
        assert "'invoice_app/main.py' is a file, not a folder" in message, message
    message = await refusal(tools, "list_files", folder="invoice_app/main.py")
    assert message == "folder 'invoice_app/main.py' is a file, not a folder; use read_file"
    assert tree(workspace.repo) == before


async def test_a_folder_used_as_a_file_is_named(tools: LocalTools, workspace: Workspace) -> None:
    before = tree(workspace.repo)
    for tool, args in [
        ("read_file", {"path": "invoice_app/sub"}),
        ("write_file", {"path": "invoice_app/sub", "content": "X"}),
    ]:
        message = await refusal(tools, tool, **args)
        assert message == "path 'invoice_app/sub' is a folder, not a file; use list_files"
    assert tree(workspace.repo) == before


async def test_a_name_too_long_for_the_file_system(tools: LocalTools, workspace: Workspace) -> None:
    before = tree(workspace.repo)
    long_name = "n" * 300  # a path under the guard's 1,024 characters, a name over NAME_MAX
    for tool, args in [
        ("read_file", {"path": f"invoice_app/{long_name}.py"}),
        ("write_file", {"path": f"invoice_app/{long_name}.py", "content": "X"}),
        ("write_file", {"path": f"invoice_app/{long_name}/x.py", "content": "X"}),
        ("list_files", {"folder": f"invoice_app/{long_name}"}),
    ]:
        message = await refusal(tools, tool, **args)
        assert "longer than the file system allows" in message and "ENAMETOOLONG" in message
        assert long_name[:50] in message, message  # the path is named
    assert tree(workspace.repo) == before


async def test_symlink_loops(tools: LocalTools, workspace: Workspace) -> None:
    app = workspace.repo / "invoice_app"
    os.symlink("ping", app / "pong")
    os.symlink("pong", app / "ping")
    for path in ("invoice_app/loop", "invoice_app/ping", "invoice_app/ping/x.py"):
        for tool, args in [
            ("read_file", {"path": path}),
            ("write_file", {"path": path, "content": "X"}),
            ("list_files", {"folder": path}),
        ]:
            message = await refusal(tools, tool, **args)
            assert f"{path!r}: more than 40 symlinks on the way (a symlink loop)" in message


def test_permission_denied_is_a_clear_refusal() -> None:
    """EACCES for real: a folder and a file the runner's user may not open.

    Tests run as root here, and root opens everything; so the guard runs in a child process that
    drops to the user ``nobody`` first (os.setuid). As any other user, chmod alone is enough.
    """
    base = Path(tempfile.mkdtemp(prefix="loopkit-eacces-"))
    try:
        os.chmod(base, 0o755)
        app = base / "invoice_app"
        (app / "locked").mkdir(parents=True)
        (app / "locked" / "x.py").write_text("X = 1\n")
        (app / "private.py").write_text("P = 1\n")
        os.chmod(app / "locked", 0o700)
        os.chmod(app / "private.py", 0o600)
        if os.geteuid() == 0:
            drop = "os.setgid(65534); os.setuid(65534)"
        else:  # not root: the owner's own permission bits are enough
            os.chmod(app / "locked", 0o000)
            os.chmod(app / "private.py", 0o000)
            os.chmod(app, 0o555)
            drop = "pass"
        script = textwrap.dedent(
            f"""
            import os, sys
            from loopkit.abstractions import ToolError
            from loopkit_tools import WorkspaceGuard
            g = WorkspaceGuard(sys.argv[1], ["invoice_app"], ["invoice_app"])
            {drop}
            calls = [
                lambda: g.read_text("invoice_app/locked/x.py"),
                lambda: g.read_text("invoice_app/private.py"),
                lambda: g.list_files("invoice_app/locked"),
                lambda: g.write_text("invoice_app/locked/new.py", "X"),
                lambda: g.write_text("invoice_app/new.py", "X"),
            ]
            for call in calls:
                try:
                    print("ALLOWED", call())
                except ToolError as e:
                    print("REFUSED", e)
                except BaseException as e:
                    print("RAW", type(e).__name__, e)
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(base)], capture_output=True, text=True, timeout=60
        )
        lines = out.stdout.splitlines()
        assert len(lines) == 5, out.stdout + out.stderr
        for line in lines:
            assert line.startswith("REFUSED") and "(EACCES)" in line, line
            assert "permission denied" in line and "invoice_app/" in line, line
        assert not (app / "new.py").exists() and not (app / "locked" / "new.py").exists()
    finally:
        for p in (base, base / "invoice_app", base / "invoice_app" / "locked"):
            os.chmod(p, 0o755)
        subprocess.run(["rm", "-rf", str(base)], check=True)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (errno.ENOSPC, "the disk is full (ENOSPC)"),
        (errno.EROFS, "the file system is read-only (EROFS)"),
        (errno.EIO, "an input/output error on the disk (EIO)"),
        (errno.EMFILE, "too many open files; try again (EMFILE)"),
        (errno.EACCES, "permission denied (the runner's user may not open it) (EACCES)"),
        (errno.EISDIR, "it is a folder, not a file (EISDIR)"),
        (errno.ENOTDIR, "a part of it is a file, not a folder (ENOTDIR)"),
        (errno.ELOOP, "it is a symlink, or the symlinks on its way loop (ELOOP)"),
        (errno.ENAMETOOLONG, "a name in it is longer than the file system allows"),
        (errno.ENOMSG, "No message of desired type (ENOMSG)"),  # unmapped: strerror + name
    ],
)
def test_every_os_error_maps_to_a_message_naming_path_and_reason(code: int, reason: str) -> None:
    """Errors that cannot be made to happen here (a full disk, EIO) are mapped all the same."""
    error = os_refusal(OSError(code, os.strerror(code)), "'invoice_app/a.py'", "write")
    assert isinstance(error, PathRefusedError)
    assert str(error).startswith("cannot write 'invoice_app/a.py': " + reason), str(error)


def test_an_error_with_no_errno_still_says_something() -> None:
    assert str(os_refusal(OSError(), "'x'", "read")) == "cannot read 'x': OSError"


# ---------------------------------------------------------------- text that is not valid Unicode


@pytest.mark.parametrize("path", ["invoice_app/a\udc80.py", "invoice_app/\ud800/x.py", "\udcff"])
async def test_a_lone_surrogate_in_a_path_is_refused(
    tools: LocalTools, workspace: Workspace, path: str
) -> None:
    before = tree(workspace.repo)
    for tool, args in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "X"}),
        ("list_files", {"folder": path}),
    ]:
        message = await refusal(tools, tool, **args)
        assert "lone surrogate" in message and "not valid Unicode" in message, message
        message.encode("utf-8")  # the message itself is valid text
    assert tree(workspace.repo) == before


async def test_a_lone_surrogate_in_content_is_refused(
    tools: LocalTools, workspace: Workspace
) -> None:
    target = workspace.repo / "invoice_app" / "main.py"
    old = target.read_bytes()
    message = await refusal(tools, "write_file", path="invoice_app/main.py", content="x\ud800y")
    assert message == (
        "content contains a lone surrogate (U+D800) at character 1: it is not valid Unicode "
        "and cannot be written as UTF-8"
    )
    await refusal(tools, "write_file", path="invoice_app/new.py", content="\udcff")
    assert target.read_bytes() == old and not (target.parent / "new.py").exists()


# ---------------------------------------------------------------- names the model creates

INVISIBLE = {
    "\u202a": "LRE",
    "\u202b": "RLE",
    "\u202c": "PDF",
    "\u202d": "LRO",
    "\u202e": "RLO",
    "\u2066": "LRI",
    "\u2067": "RLI",
    "\u2068": "FSI",
    "\u2069": "PDI",
    "\u200e": "LRM",
    "\u200f": "RLM",
    "\u061c": "ALM",
    "\u200b": "ZWSP",
    "\u200c": "ZWNJ",
    "\u200d": "ZWJ",
    "\u2060": "WJ",
    "\ufeff": "BOM",
}
LINE_BREAKING = {"\x07": "BEL", "\x1b": "ESC", "\x7f": "DEL", "\x85": "NEL", "\u2028": "LS"}
LINE_BREAKING["\u2029"] = "PS"


@pytest.mark.parametrize(
    "char", list(INVISIBLE) + list(LINE_BREAKING), ids=lambda c: f"U+{ord(c):04X}"
)
async def test_new_names_must_be_visible_text(
    tools: LocalTools, workspace: Workspace, char: str
) -> None:
    before = tree(workspace.repo)
    for path in (f"invoice_app/ma{char}in.py", f"invoice_app/ne{char}w/x.py"):
        message = await refusal(tools, "write_file", path=path, content="X = 1\n")
        assert f"U+{ord(char):04X}" in message or "control characters" in message, message
        assert char not in message  # shown escaped, not as the invisible character itself
    assert tree(workspace.repo) == before


async def test_existing_names_with_invisible_characters_stay_readable(
    tools: LocalTools, workspace: Workspace
) -> None:
    """Only names the model *creates* must be visible: a file that already has one is usable."""
    name = "invoice_app/zero\u200bwidth.py"
    (workspace.repo / name).write_text("Z = 1\n")
    assert await tool_by_name(tools, "read_file").invoke({"path": name}) == "Z = 1\n"
    await tool_by_name(tools, "write_file").invoke({"path": name, "content": "Z = 2\n"})
    assert (workspace.repo / name).read_text() == "Z = 2\n"
    listing = await tool_by_name(tools, "list_files").invoke({"folder": "invoice_app"})
    assert name in listing.splitlines()


def test_oversized_content_is_refused_before_it_is_encoded(workspace: Workspace) -> None:
    """A 2 GB string must not be encoded to find out it is too big: its length says so."""
    encoded: list[int] = []

    class Spy(str):
        def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
            encoded.append(len(self))
            return super().encode(encoding, errors)

    guard = WorkspaceGuard(workspace.repo, [], ["invoice_app"], max_file_bytes=1000)
    with pytest.raises(
        PathRefusedError, match="1001 characters, so at least 1001 bytes; the limit"
    ):
        guard.write_text("invoice_app/big.py", Spy("x" * 1001))
    assert encoded == []
    # within the length limit it is encoded, and then the byte count decides
    with pytest.raises(PathRefusedError, match="content is 1500 bytes; the limit is 1000 bytes"):
        guard.write_text("invoice_app/big.py", Spy("é" * 750))
    assert encoded == [750]
    assert not (workspace.repo / "invoice_app" / "big.py").exists()


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (b"bad\xe2\x80\xaename.py", "a bidirectional control (U+202E)"),
        (b"caf\xe9.py", "a byte that is not UTF-8 (U+DCE9, a lone surrogate)"),
        (b"tab\there.py", "a control character or line break (U+0009)"),
    ],
)
async def test_a_new_name_that_comes_from_a_symlink_target_is_checked_too(
    tools: LocalTools, workspace: Workspace, target: bytes, problem: str
) -> None:
    """write_file through a dangling symlink creates its target: that name is checked as well."""
    app = os.fsencode(workspace.repo / "invoice_app")
    os.symlink(target, app + b"/dangling.py")
    before = tree(workspace.repo)
    message = await refusal(tools, "write_file", path="invoice_app/dangling.py", content="X")
    assert problem in message and "names you create must be visible text" in message, message
    assert tree(workspace.repo) == before
