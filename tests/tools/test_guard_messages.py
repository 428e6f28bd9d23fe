"""The guard's refusals word for word: each names the path (as the model wrote it, escaped), what
is wrong with it, and where the model may look instead. A refusal that is right for the wrong
reason (a backslash path refused as "outside" because the backslash check is gone) fails here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopkit_tools import PathRefusedError, WorkspaceGuard

ALLOWED = "invoice_app/, docs/"  # the writable folder first, then the readable one


@pytest.fixture
def guard(tmp_path: Path) -> WorkspaceGuard:
    (tmp_path / "invoice_app" / "sub").mkdir(parents=True)
    (tmp_path / "invoice_app" / "main.py").write_text("X = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return WorkspaceGuard(tmp_path, ["docs"], ["invoice_app"])


def refused(call: object, *args: object) -> str:
    assert callable(call)
    with pytest.raises(PathRefusedError) as e:
        call(*args)
    return str(e.value)


LONG_NAME = "a" * 250
SYNTAX = [
    ("", f"path is empty; expected a path under {ALLOWED}"),
    ("x" * 1025, "path is longer than 1024 characters"),
    (
        "invoice_app/a\udfff.py",
        "path 'invoice_app/a\\udfff.py' contains a lone surrogate (U+DFFF) at character 13: "
        "it is not valid Unicode, so it names no file",
    ),
    (
        "invoice_app/\ud800.py",
        "path 'invoice_app/\\ud800.py' contains a lone surrogate (U+D800) at character 12: "
        "it is not valid Unicode, so it names no file",
    ),
    ("invoice_app/a\x00.py", "path 'invoice_app/a\\x00.py' contains a NUL byte"),
    # only the first 200 characters are shown
    (
        f"invoice_app/{LONG_NAME}\x00",
        f"path 'invoice_app/{LONG_NAME[:188]}' contains a NUL byte",
    ),
    (
        "invoice_app/a\x07.py",
        "path 'invoice_app/a\\x07.py' contains control characters or line breaks",
    ),
    (
        "invoice_app/a\u2029.py",
        "path 'invoice_app/a\\u2029.py' contains control characters or line breaks",
    ),
    (" invoice_app/a.py", "path ' invoice_app/a.py' has leading or trailing whitespace"),
    (
        f" invoice_app/{LONG_NAME}",
        f"path ' invoice_app/{LONG_NAME[:187]}' has leading or trailing whitespace",
    ),
    (
        "invoice_app\\a.py",
        "path 'invoice_app\\\\a.py' uses backslashes (Windows or UNC form); use forward "
        f"slashes, relative to the workspace, under {ALLOWED}",
    ),
    (
        "C:/Windows/win.ini",
        "path 'C:/Windows/win.ini' contains ':' (a drive letter, URL or stream form); use a "
        f"relative path under {ALLOWED}",
    ),
    (
        "invoice_app/main.py:stream",
        "path 'invoice_app/main.py:stream' contains ':' (a drive letter, URL or stream form); "
        f"use a relative path under {ALLOWED}",
    ),
    (
        "/etc/passwd",
        f"path '/etc/passwd' is absolute; use a path relative to the workspace under {ALLOWED}",
    ),
    ("~/x", "path '~/x' starts with '~'; home folders are not allowed"),
    (
        "invoice_app/%2e%2e/secret.txt",
        "path 'invoice_app/%2e%2e/secret.txt' contains percent-encoded characters; paths are "
        "taken literally, write them plainly",
    ),
    (
        "invoice_app/\uff41.py",
        "path 'invoice_app/\uff41.py' contains Unicode compatibility characters (e.g. "
        "fullwidth dots or slashes); use plain ASCII punctuation",
    ),
    (
        "invoice_app/.git/config",
        "path 'invoice_app/.git/config': the .git folder is never readable",
    ),
    ("invoice_app/.Git. /x", "path 'invoice_app/.Git. /x': the .git folder is never readable"),
]


@pytest.mark.parametrize(("path", "message"), SYNTAX, ids=[repr(p[:30]) for p, _ in SYNTAX])
def test_each_form_that_is_never_needed_is_refused_for_what_it_is(
    guard: WorkspaceGuard, path: str, message: str
) -> None:
    assert refused(guard.check_read, path) == message
    assert refused(guard.read_text, path) == message


def test_a_path_that_is_not_text_names_its_type(guard: WorkspaceGuard) -> None:
    assert refused(guard.check_read, 5) == "path must be a string, got int"
    assert refused(guard.check_folder, None) == "folder must be a string, got NoneType"
    assert refused(guard.listing, b"invoice_app") == "folder must be a string, got bytes"


def test_a_path_of_1024_characters_is_not_too_long_for_the_guard(guard: WorkspaceGuard) -> None:
    path = "invoice_app/" + "a" * (1024 - len("invoice_app/"))
    message = refused(guard.read_text, path)
    assert "longer than 1024" not in message
    assert "a name in it is longer than the file system allows" in message


def test_a_percent_sign_that_encodes_nothing_is_taken_literally(guard: WorkspaceGuard) -> None:
    (guard.root / "invoice_app" / "50%.py").write_text("P = 1\n")
    assert guard.read_text("invoice_app/50%.py") == "P = 1\n"


def test_outside_names_the_verb_the_folders_and_a_symlink_on_the_way(
    guard: WorkspaceGuard,
) -> None:
    root = guard.root
    os.symlink("../secret.txt", root / "invoice_app" / "up.txt")
    assert refused(guard.check_read, "secret.txt") == (
        f"path 'secret.txt' is outside the folders you may read: {ALLOWED}"
    )
    assert refused(guard.check_read, "invoice_app/up.txt") == (
        f"path 'invoice_app/up.txt' is outside the folders you may read: {ALLOWED} "
        "(it resolves through a symlink)"
    )
    assert refused(guard.check_write, "docs/guide.md") == (
        "path 'docs/guide.md' is outside the folders you may write: invoice_app/"
    )
    assert refused(guard.check_folder, "invoice_app/..") == (
        f"folder 'invoice_app/..' is outside the folders you may list: {ALLOWED}"
    )
    everything = WorkspaceGuard(root, ["."], ["invoice_app"])
    assert refused(everything.check_write, "secret.txt") == (
        "path 'secret.txt' is outside the folders you may write: invoice_app/"
    )
    assert refused(everything.check_read, "..") == (
        "path '..' is outside the folders you may read: invoice_app/, the whole workspace"
    )
