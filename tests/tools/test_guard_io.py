"""read_text and write_text of the guard, exactly: the refusals word for word, the size limits at
their boundaries, what a write leaves on disk (mode, no temporary file, no open descriptor), and
what happens when the disk changes between the guard's look and its use.

The races are made to happen at one precise moment: a wrapper around one ``os`` function makes
the change on disk (a real rename, link, unlink or mkdir) just before the guard's own call runs,
and the kernel then answers as it would to a real racer. Only two faults that cannot be made to
happen here are faked, and say so: an input/output error (EIO) and a file system whose folders
cannot be synced.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopkit_tools import PathRefusedError, WorkspaceGuard
from loopkit_tools.fd_paths import FILE_FLAGS


@pytest.fixture
def root(tmp_path: Path) -> Path:
    app = tmp_path / "invoice_app"
    (app / "sub").mkdir(parents=True)
    (app / "main.py").write_text("X = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return tmp_path


def guard_of(root: Path, **limits: Any) -> WorkspaceGuard:
    return WorkspaceGuard(root, ["docs"], ["invoice_app"], **limits)


def refused(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(PathRefusedError) as e:
        call(*args)
    return str(e.value)


def just_before(
    monkeypatch: pytest.MonkeyPatch,
    function: str,
    when: Callable[..., bool],
    change: Callable[[], None],
) -> list[int]:
    """Run ``change`` (once) right before the first call of ``os.<function>`` that ``when``
    accepts; returns a list that holds 1 once it ran."""
    real = getattr(os, function)
    ran: list[int] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not ran and when(*args, **kwargs):
            ran.append(1)
            change()
        return real(*args, **kwargs)

    monkeypatch.setattr(os, function, wrapper)
    return ran


def fds_into(folder: Path) -> int:
    count = 0
    for n in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{n}")
        except OSError:
            continue
        count += target == str(folder) or target.startswith(f"{folder}/")
    return count


# ------------------------------------------------------------------------------ reading


def test_read_refusals_say_what_the_path_is(root: Path) -> None:
    app = root / "invoice_app"
    os.mkfifo(app / "fifo")
    (root / "hard.py").write_text("H = 1\n")
    os.link(root / "hard.py", app / "hard.py")
    (app / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (app / "latin1.txt").write_bytes(b"caf\xe9")
    guard = guard_of(root)
    assert refused(guard.read_text, "invoice_app/sub") == (
        "path 'invoice_app/sub' is a folder, not a file; use list_files"
    )
    assert refused(guard.read_text, "invoice_app/sub/..") == (
        "path 'invoice_app/sub/..' is a folder, not a file; use list_files"
    )
    assert refused(guard.read_text, "invoice_app/nope.py") == (
        "file 'invoice_app/nope.py' does not exist"
    )
    assert refused(guard.read_text, "invoice_app/fifo") == (
        "path 'invoice_app/fifo' is not a regular file (device, FIFO or socket)"
    )
    assert refused(guard.read_text, "invoice_app/hard.py") == (
        "path 'invoice_app/hard.py' has 2 hard links; a hard link may lead outside the workspace"
    )
    assert refused(guard.read_text, "invoice_app/blob.bin") == (
        "'invoice_app/blob.bin' is a binary file (1024 bytes); not shown"
    )
    assert refused(guard.read_text, "invoice_app/latin1.txt") == (
        "'invoice_app/latin1.txt' is not UTF-8 text (4 bytes); not shown"
    )
    assert refused(guard.read_text, "secret.txt") == (
        "path 'secret.txt' is outside the folders you may read: invoice_app/, docs/"
    )


def test_a_nul_byte_makes_a_binary_file_only_in_the_first_8192_bytes(root: Path) -> None:
    app = root / "invoice_app"
    (app / "late.txt").write_bytes(b"a" * 8192 + b"\x00")
    (app / "early.txt").write_bytes(b"a" * 8191 + b"\x00")
    guard = guard_of(root, max_file_bytes=20_000)
    assert guard.read_text("invoice_app/late.txt") == "a" * 8192 + "\x00"
    assert "is a binary file" in refused(guard.read_text, "invoice_app/early.txt")


def test_the_read_limit_at_its_boundary_and_a_character_split_by_it(root: Path) -> None:
    app = root / "invoice_app"
    (app / "ten.txt").write_text("0123456789")
    (app / "eleven.txt").write_text("0123456789A")
    (app / "emoji.txt").write_text("aaaaaaa😀tail")  # 7 bytes + 4 bytes: the cut is after 10
    (app / "bad.txt").write_bytes(b"aaaaaa\xffbcdefg")  # a bad byte 4 before the cut
    guard = guard_of(root, max_file_bytes=10)
    assert guard.read_text("invoice_app/ten.txt") == "0123456789"
    assert guard.read_text("invoice_app/eleven.txt") == (
        "0123456789\n[... cut: the file has 11 bytes, only the first 10 are shown]"
    )
    assert guard.read_text("invoice_app/emoji.txt") == (
        "aaaaaaa\n[... cut: the file has 15 bytes, only the first 10 are shown]"
    )
    assert refused(guard.read_text, "invoice_app/bad.txt") == (
        "'invoice_app/bad.txt' is not UTF-8 text (13 bytes); not shown"
    )


def test_a_huge_file_is_read_only_up_to_the_limit(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 50 MB file costs what the limit costs: one read of max_file_bytes + 1 bytes."""
    with open(root / "invoice_app" / "huge.txt", "wb") as f:
        f.truncate(50_000_000)  # sparse: made in no time
    sizes: list[int | None] = []
    real_fdopen = os.fdopen

    class Spy:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def fileno(self) -> int:
            return int(self.f.fileno())

        def read(self, size: int | None = None) -> bytes:
            sizes.append(size)
            return bytes(self.f.read(size))

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Spy(real_fdopen(*a, **k)))
    guard = guard_of(root, max_file_bytes=1000)
    assert "is a binary file (50000000 bytes)" in refused(guard.read_text, "invoice_app/huge.txt")
    assert sizes == [1001]


def test_a_file_swapped_for_a_symlink_after_the_look_is_not_followed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = root / "invoice_app"
    os.symlink(root / "secret.txt", app / "planted")

    def swap() -> None:
        os.rename(app / "planted", app / "main.py")

    just_before(monkeypatch, "open", lambda *a, **k: len(a) > 1 and a[1] == FILE_FLAGS, swap)
    assert refused(guard_of(root).read_text, "invoice_app/main.py") == (
        "cannot open 'invoice_app/main.py': it is a symlink, or the symlinks on its way loop "
        "(ELOOP)"
    )


def test_a_file_hard_linked_after_the_look_is_refused_after_the_open(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = root / "invoice_app"

    def link() -> None:
        os.link(app / "main.py", root / "outside-link")

    just_before(monkeypatch, "open", lambda *a, **k: len(a) > 1 and a[1] == FILE_FLAGS, link)
    assert refused(guard_of(root).read_text, "invoice_app/main.py") == (
        "path 'invoice_app/main.py' has 2 hard links; a hard link may lead outside the workspace"
    )


def test_an_input_output_error_while_reading_names_the_file(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked (a failing disk cannot be made here): fstat of the open file fails with EIO."""

    real_fstat = os.fstat

    def broken(fd: int) -> os.stat_result:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(root)):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_fstat(fd)

    guard = guard_of(root)
    monkeypatch.setattr(os, "fstat", broken)
    assert refused(guard.read_text, "invoice_app/main.py") == (
        "cannot read 'invoice_app/main.py': an input/output error on the disk (EIO)"
    )


# ------------------------------------------------------------------------------ writing


def test_write_refusals_say_what_is_wrong(root: Path) -> None:
    guard = guard_of(root, max_file_bytes=10)
    assert refused(guard.write_text, "invoice_app/a.py", b"X") == (
        "content must be a string (the complete file content)"
    )
    assert refused(guard.write_text, "docs/guide.md", "x") == (
        "path 'docs/guide.md' is outside the folders you may write: invoice_app/"
    )
    assert refused(guard.write_text, "invoice_app/sub/..", "x") == (
        "path 'invoice_app/sub/..' is a folder, not a file"
    )
    assert refused(guard.write_text, "invoice_app/.gitignore", "x") == (
        "path 'invoice_app/.gitignore': git control files (.git*) cannot be written"
    )
    path = "invoice_app/a\u200b.py"
    assert refused(guard.write_text, path, "x") == (
        f"path {path!r}: the new name 'a\\u200b.py' contains a zero-width character (U+200B); "
        "names you create must be visible text"
    )
    assert refused(guard.check_write, "invoice_app/.gitattributes") == (
        "path 'invoice_app/.gitattributes': git control files (.git*) cannot be written"
    )
    assert guard.check_write("invoice_app/brand_new.py") == root / "invoice_app" / "brand_new.py"


def test_the_write_limit_at_its_boundary(root: Path) -> None:
    guard = guard_of(root, max_file_bytes=10)
    assert guard.write_text("invoice_app/ten.txt", "x" * 10) == 10
    assert guard.write_text("invoice_app/ten_bytes.txt", "é" * 5) == 10
    assert (root / "invoice_app" / "ten_bytes.txt").read_text(encoding="utf-8") == "é" * 5
    assert refused(guard.write_text, "invoice_app/eleven.txt", "é" * 5 + "x") == (
        "content is 11 bytes; the limit is 10 bytes"
    )


def test_a_new_file_is_0644_and_unreadable_to_others_until_it_is_complete(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modes: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            modes.append(stat.S_IMODE(st.st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    old_umask = os.umask(0)  # whatever the umask, the modes are the guard's
    try:
        guard_of(root).write_text("invoice_app/new.py", "N = 1\n")
    finally:
        os.umask(old_umask)
    assert modes == [0o600]  # while the content is written
    assert stat.S_IMODE(os.stat(root / "invoice_app" / "new.py").st_mode) == 0o644


def test_a_deep_new_path_is_created_and_no_descriptor_stays_open(root: Path) -> None:
    """40 new folders: deeper than the descriptors a chain keeps, so it reopens by name."""
    path = "invoice_app/" + "d/" * 40 + "x.py"
    before = fds_into(root)
    guard_of(root).write_text(path, "D = 1\n")
    assert (root / path).read_text() == "D = 1\n"
    assert fds_into(root) == before == 0


def test_a_folder_made_by_someone_else_meanwhile_is_used(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "invoice_app" / "pkg"

    def make() -> None:
        os.mkdir(target)

    ran = just_before(monkeypatch, "mkdir", lambda *a, **k: a[0] == "pkg", make)
    guard_of(root).write_text("invoice_app/pkg/mod.py", "M = 1\n")
    assert ran and (target / "mod.py").read_text() == "M = 1\n"


def test_a_temporary_file_removed_by_a_racer_is_a_clean_refusal(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = root / "invoice_app"

    def remove_temporaries() -> None:
        for p in app.iterdir():
            if p.name.endswith(".tmp"):
                p.unlink()

    just_before(monkeypatch, "replace", lambda *a, **k: True, remove_temporaries)
    assert refused(guard_of(root).write_text, "invoice_app/new.py", "N = 1\n") == (
        "cannot write 'invoice_app/new.py': it does not exist (ENOENT)"
    )
    assert sorted(p.name for p in app.iterdir()) == ["main.py", "sub"]


def test_a_symlink_planted_at_the_temporary_name_is_never_followed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary name is random; a racer who guessed it (here: it is made predictable)
    still cannot redirect the write: the file is created with O_EXCL and O_NOFOLLOW."""
    from loopkit_tools import workspace

    monkeypatch.setattr(workspace.secrets, "token_hex", lambda n: "feedfacecafe")
    os.symlink(root / "secret.txt", root / "invoice_app" / ".new.py.feedfacecafe.tmp")
    assert refused(guard_of(root).write_text, "invoice_app/new.py", "N = 1\n") == (
        "cannot write 'invoice_app/new.py': something else already exists there (EEXIST)"
    )
    assert (root / "secret.txt").read_text() == "secret\n"
    assert not (root / "invoice_app" / "new.py").exists()


def test_a_folder_that_cannot_be_synced_does_not_fail_the_write(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked (ext4 and tmpfs sync folders): fsync of a folder fails with EINVAL as on some
    network file systems; the file is written all the same."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert guard_of(root).write_text("invoice_app/main.py", "X = 2\n") == 6
    assert (root / "invoice_app" / "main.py").read_text() == "X = 2\n"
