"""The attack corpus: every path-taking tool against every attempt to get out of the workspace.

An attempt *escapes* when the tool does not refuse it with a ToolError, when any output or error
message shows a secret, or when anything on disk outside the writable folder changes (or, for the
writable folder, when the attack path itself got written). The suite prints how many attempts it
tried and how many escaped; the number escaped must be 0.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools_helpers import MAX_FILE_BYTES, NaiveGuard, Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools


@dataclass(frozen=True)
class Attack:
    name: str
    path: Any  # a string, or something else a model might send
    # l: list_files, r: read_file, w: write_file, e: edit_file, s: search_files (its folder)
    tools: str = "lrwes"


def corpus(ws: Workspace) -> list[Attack]:
    out_secret = str(ws.outside / "secret.txt")
    attacks = [
        # traversal
        Attack("dotdot to outside", "../outside/secret.txt"),
        Attack("dotdot through the app folder", "invoice_app/../../outside/secret.txt"),
        Attack("dotdot to a root file", "invoice_app/../secret.txt"),
        Attack("deep dotdot", "../../../../../../../../etc/passwd"),
        Attack("dotdot after a file name", "invoice_app/main.py/../../secret.txt"),
        Attack("dot then dotdot", "./../secret.txt"),
        Attack("dotdot inside the app folder", "invoice_app/./sub/../../secret.txt"),
        Attack("readable folder to private", "docs/../private/key.txt"),
        Attack("wrong case then dotdot", "INVOICE_APP/../secret.txt"),
        Attack("dotdot only", ".."),
        # absolute forms
        Attack("absolute /etc/passwd", "/etc/passwd"),
        Attack("absolute outside secret", out_secret),
        Attack("absolute path of an allowed file", str(ws.repo / "invoice_app" / "main.py")),
        Attack("double slash root", "//etc/passwd"),
        Attack("proc environ", "/proc/self/environ"),
        Attack("device /dev/zero", "/dev/zero"),
        Attack("home tilde", "~/.bashrc"),
        Attack("user tilde", "~root/.bashrc"),
        # not in the allowed folders
        Attack("root file", "secret.txt"),
        Attack("private folder", "private/key.txt"),
        Attack("private folder itself", "private"),
        # .git
        Attack(".git config", ".git/config"),
        Attack(".git description", ".git/description"),
        Attack(".git folder", ".git"),
        Attack(".git upper case", ".GIT/description"),
        Attack(".git via dotdot", "invoice_app/../.git/description"),
        Attack("nested .git", "invoice_app/.git/config"),
        Attack(".git trailing dot (Windows)", "invoice_app/.git./config"),
        Attack(".git trailing space (Windows)", "invoice_app/.git /config"),
        # NUL and control characters
        Attack("NUL byte", "invoice_app/main.py\x00.txt"),
        Attack("NUL then dotdot", "invoice_app/\x00/../../secret.txt"),
        Attack("newline then dotdot", "invoice_app/\n/../../secret.txt"),
        # Windows and UNC forms
        Attack("backslash dotdot", "invoice_app\\..\\secret.txt"),
        Attack("backslash outside", "..\\outside\\secret.txt"),
        Attack("drive letter backslash", "C:\\Windows\\win.ini"),
        Attack("drive letter slash", "C:/Windows/win.ini"),
        Attack("drive relative", "c:secret.txt"),
        Attack("UNC share", "\\\\server\\share\\secret.txt"),
        Attack("UNC slashes", "//server/share/secret.txt"),
        Attack("device namespace", "\\\\?\\C:\\secret.txt"),
        Attack("NTFS stream", "invoice_app/main.py::$DATA"),
        Attack("file URL", "file:///etc/passwd"),
        # encoded forms
        Attack("percent dotdot", "%2e%2e/outside/secret.txt"),
        Attack("percent dotdot in app", "invoice_app/%2e%2e/%2e%2e/outside/secret.txt"),
        Attack("percent slash", "invoice_app/..%2f..%2fsecret.txt"),
        Attack("double percent", "invoice_app/%252e%252e/secret.txt"),
        Attack("fullwidth dots", "invoice_app/\uff0e\uff0e/secret.txt"),
        Attack("fullwidth slash", "invoice_app\uff0f..\uff0fsecret.txt"),
        Attack("overlong UTF-8 style", "invoice_app/%c0%ae%c0%ae/secret.txt"),
        # symlinks and symlinked parents
        Attack("symlinked folder to outside", "invoice_app/link_out/secret.txt"),
        Attack("symlinked folder itself", "invoice_app/link_out", "lr"),
        Attack("symlink file to outside", "invoice_app/link_file"),
        Attack("symlink to a root file", "invoice_app/link_root_secret"),
        Attack("symlink into .git", "invoice_app/link_git"),
        Attack("symlink to parent, then out", "invoice_app/link_dotdot/secret.txt"),
        Attack("symlink to parent, to private", "invoice_app/link_dotdot/private/key.txt"),
        Attack("symlinked parent in readable folder", "docs/link_up/secret.txt"),
        Attack("symlink to /dev/null", "invoice_app/devnull"),
        Attack("symlink loop", "invoice_app/loop"),
        # special files inside the writable folder
        Attack("FIFO", "invoice_app/fifo"),
        Attack("unix socket", "invoice_app/sock"),
        Attack("hard link to outside", "invoice_app/hardlink"),
        # directories where a file is expected; a file where a folder is expected
        Attack("the writable folder as a file", "invoice_app", "rw"),
        Attack("a subfolder as a file", "invoice_app/sub", "rw"),
        Attack("trailing slash on a folder", "invoice_app/sub/", "rw"),
        Attack("a file as a folder", "invoice_app/main.py", "l"),
        # binary content; writing where only reading is allowed; git control files
        Attack("binary file", "invoice_app/blob.bin", "r"),
        Attack("readable but not writable", "docs/guide.md", "w"),
        Attack(".gitattributes in the app", "invoice_app/.gitattributes", "w"),
        Attack(".gitignore in the app", "invoice_app/.gitignore", "w"),
        # arguments of the wrong type
        Attack("a list instead of a string", ["invoice_app", "..", "secret.txt"]),
        Attack("None instead of a string", None),
        Attack("empty", "", "rw"),
        Attack("whitespace padding", " ../secret.txt"),
        Attack("very long path", "invoice_app/" + "a/" * 600 + "x.py"),
        # folder containment is by path component: invoice_app_private/ is not in invoice_app/
        Attack("prefix sibling folder file", "invoice_app_private/secret.txt"),
        Attack("prefix sibling folder", "invoice_app_private", "l"),
        Attack("prefix sibling new file", "invoice_app_private/new.py", "w"),
        Attack("prefix sibling via dotdot", "invoice_app/../invoice_app_private/secret.txt"),
        Attack("prefix sibling file at the root", "invoice_app.py"),
        Attack("symlink to the prefix sibling", "invoice_app/link_private"),
        # symlinks resolved in user space: absolute targets, chains, dangling, dotdot inside
        Attack("absolute symlink to a root file", "invoice_app/link_abs_root_secret"),
        Attack("absolute symlink up and out", "invoice_app/link_abs_up"),
        Attack("absolute symlink into .git", "invoice_app/link_abs_git"),
        Attack("symlink chain to outside", "invoice_app/link_chain_a/secret.txt"),
        Attack("dangling symlink to outside", "invoice_app/dangling_out"),
        Attack("symlink with dotdot in its target", "invoice_app/link_dotdot_deep"),
        Attack("readable symlink to a private folder", "docs/link_private_dir/key.txt"),
        Attack("readable symlinked private folder", "docs/link_private_dir", "l"),
        Attack("symlink loop pair", "invoice_app/ping"),
        # text that is not valid Unicode (a lone surrogate would otherwise name raw bytes)
        Attack("lone low surrogate", "invoice_app/a\udc80.py"),
        Attack("lone high surrogate folder", "invoice_app/\ud800/x.py"),
        Attack("surrogate-escaped dotdot", "invoice_app/\udc2e\udc2e/secret.txt"),
        Attack("line separator", "invoice_app/x\u2028.py"),
        Attack("paragraph separator then dotdot", "invoice_app/\u2029/../../secret.txt"),
        # names the model creates must be visible text
        Attack("right-to-left override name", "invoice_app/\u202egnp.py", "w"),
        Attack("right-to-left isolate name", "invoice_app/\u2067x.py", "w"),
        Attack("left-to-right mark in a new folder", "invoice_app/\u200enew/x.py", "w"),
        Attack("arabic letter mark name", "invoice_app/\u061cx.py", "w"),
        Attack("zero-width space name", "invoice_app/main\u200b.py", "w"),
        Attack("zero-width joiner folder", "invoice_app/\u200dsub/x.py", "w"),
        Attack("word joiner name", "invoice_app/x\u2060.py", "w"),
        Attack("byte order mark name", "invoice_app/\ufeffx.py", "w"),
        # errors of the system
        Attack("name too long for the file system", "invoice_app/" + "n" * 300),
        Attack("file as a parent folder", "invoice_app/main.py/new.py", "w"),
    ]
    if os.geteuid() == 0:
        attacks.append(Attack("character device", "invoice_app/chardev"))
    return attacks


def snapshot(base: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``base`` with its type and content hash (never opening special files)."""
    seen: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                seen[p] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                seen[p] = ("file", hashlib.sha256(Path(p).read_bytes()).hexdigest())
            else:
                seen[p] = (stat.filemode(st.st_mode)[0], "")
    return seen


async def try_attack(local: LocalTools, ws: Workspace, attack: Attack, letter: str) -> str | None:
    """Run one attack with one tool; return why it escaped, or None if it was refused cleanly."""
    name = {"l": "list_files", "r": "read_file", "w": "write_file", "e": "edit_file"}
    tool = tool_by_name(local, name.get(letter, "search_files"))
    args: dict[str, Any] = {"folder" if letter in "ls" else "path": attack.path}
    if letter == "w":
        args["content"] = "PWNED"
    if letter == "e":  # the secret files hold the marker: an edit that reached one would succeed
        args.update(old=ws.marker, new="PWNED")
    if letter == "s":  # a search that reached a secret file would show its line
        args["text"] = ws.marker
    before = snapshot(ws.base) if letter in "we" else None
    try:
        result = await tool.invoke(args)
    except ToolError as e:
        message = str(e)
        if ws.marker in message:
            return f"error message leaks a secret: {message[:200]}"
        if not message.strip():
            return "refused with an empty message"
        if before is not None and snapshot(ws.base) != before:
            return "refused, but the disk changed"
        return None
    except Exception as e:  # not a ToolError: the loop would crash; counts as a failure
        return f"raised {type(e).__name__}: {e}"
    if before is not None and snapshot(ws.base) != before:
        return f"wrote to disk: {result!r}"
    return f"was not refused; result: {str(result)[:200]!r}"


def add_attack_material(ws: Workspace) -> None:
    """More escape routes around the shared workspace (see tools_helpers.workspace)."""
    repo, app, outside = ws.repo, ws.repo / "invoice_app", ws.outside
    (repo / "invoice_app_private").mkdir()
    (repo / "invoice_app_private" / "secret.txt").write_text(ws.marker + " next door\n")
    (repo / "invoice_app.py").write_text(ws.marker + " a file named like the folder\n")
    os.symlink("../invoice_app_private/secret.txt", app / "link_private")
    os.symlink(repo / "secret.txt", app / "link_abs_root_secret")
    os.symlink(f"{repo}/../outside/secret.txt", app / "link_abs_up")
    os.symlink(repo / ".git" / "description", app / "link_abs_git")
    os.symlink("link_chain_b", app / "link_chain_a")
    os.symlink(outside, app / "link_chain_b")
    os.symlink(outside / "created.txt", app / "dangling_out")
    os.symlink("sub/../../secret.txt", app / "link_dotdot_deep")
    os.symlink("../private", repo / "docs" / "link_private_dir")
    os.symlink("pong", app / "ping")
    os.symlink("ping", app / "pong")


async def test_attack_corpus_nothing_escapes(workspace: Workspace) -> None:
    add_attack_material(workspace)
    local = LocalTools(workspace.config())
    attacks = corpus(workspace)
    assert len({a.name for a in attacks}) == len(attacks) >= 40
    tried = 0
    escaped: list[str] = []
    for attack in attacks:
        for letter in attack.tools:
            tried += 1
            why = await try_attack(local, workspace, attack, letter)
            if why is not None:
                escaped.append(f"{attack.name} [{letter}] {attack.path!r}: {why}")
    summary = f"attacks tried: {tried}, escaped: {len(escaped)}"
    print(f"\n{summary}")
    assert not escaped, summary + "\n" + "\n".join(escaped)
    assert tried >= 440, summary  # every path-taking tool saw the corpus


async def test_huge_file_read_is_cut_and_huge_write_refused(workspace: Workspace) -> None:
    local = LocalTools(workspace.config())
    text = await tool_by_name(local, "read_file").invoke({"path": "invoice_app/huge.txt"})
    body, note = text.rsplit("\n", 1)
    assert body == ("abcdefghij" * 500)[:MAX_FILE_BYTES]
    assert "5000 bytes" in note and f"first {MAX_FILE_BYTES}" in note
    before = snapshot(workspace.base)
    try:
        await tool_by_name(local, "write_file").invoke(
            {"path": "invoice_app/big.py", "content": "x" * (MAX_FILE_BYTES + 1)}
        )
    except ToolError as e:
        assert f"limit is {MAX_FILE_BYTES} bytes" in str(e)
    else:
        raise AssertionError("a write above the size limit was accepted")
    assert snapshot(workspace.base) == before


async def test_refusals_name_the_allowed_folders(workspace: Workspace) -> None:
    local = LocalTools(workspace.config())
    for name, args in [
        ("read_file", {"path": "secret.txt"}),
        ("write_file", {"path": "docs/guide.md", "content": "x"}),
        ("list_files", {"folder": "private"}),
    ]:
        try:
            await tool_by_name(local, name).invoke(args)
        except ToolError as e:
            assert "invoice_app/" in str(e), str(e)
        else:
            raise AssertionError(f"{name} {args} was not refused")
    try:
        await tool_by_name(local, "read_file").invoke({"path": "../outside/secret.txt"})
    except ToolError as e:
        assert "invoice_app/, docs/" in str(e)
    else:
        raise AssertionError("'../outside/secret.txt' was not refused")


async def test_listing_shows_no_escape_routes(workspace: Workspace) -> None:
    local = LocalTools(workspace.config())
    listing = await tool_by_name(local, "list_files").invoke({})
    lines = listing.splitlines()
    assert "invoice_app/main.py" in lines and "docs/guide.md" in lines
    for hidden in (
        "secret.txt",
        "link_out",
        "link_file",
        "link_git",
        "link_root_secret",
        "fifo",
        "sock",
        "devnull",
        "hardlink",
        "loop",
        "chardev",
        "link_up",
    ):
        assert not any(hidden in line for line in lines), (hidden, lines)
    assert workspace.marker not in listing
    assert lines == sorted(lines)


async def test_the_corpus_detects_a_naive_guard(workspace: Workspace) -> None:
    """The escape detector itself works: a guard that only joins paths lets attacks through."""
    add_attack_material(workspace)
    local = LocalTools(workspace.config())
    local.guard = NaiveGuard(  # type: ignore[assignment]
        workspace.repo, ["invoice_app", "docs"], ["invoice_app"], check=False
    )
    escaped = []
    for attack in corpus(workspace):
        if not isinstance(attack.path, str) or "\x00" in attack.path:
            continue
        for letter in attack.tools:
            if letter == "w" and attack.name not in ("root file", "dotdot to outside"):
                continue  # keep the real disk damage of this check small and inside tmp_path
            if await try_attack(local, workspace, attack, letter) is not None:
                escaped.append(attack.name)
    assert "root file" in escaped and "symlinked folder to outside" in escaped, str(escaped)
    assert "dotdot to outside" in escaped and "prefix sibling folder file" in escaped
    assert len(escaped) >= 30
