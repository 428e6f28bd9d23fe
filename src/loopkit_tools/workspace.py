"""``WorkspaceGuard``: every path a tool receives is checked here before anything touches the disk.

A workspace has a root, folders that may be read and folders that may be written (writable folders
are readable too). A path is refused, with a message naming the allowed folders, when it is empty,
absolute, has NUL or control characters, uses Windows forms (backslashes, drive letters, UNC, ``:``
streams), percent-encoded or Unicode-compatibility tricks, a leading ``~``, names ``.git``, or
resolves (after ``..``, symlinks and, on case-insensitive file systems, case) outside the allowed
folders. Files must be regular files with one link (no devices, FIFOs, sockets, hard links that
may point anywhere). Reads are cut at a size limit with a note; writes are atomic.

The guard is usable on its own (it imports nothing from the tools around it).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from loopkit.abstractions import ToolError

_DRIVE = re.compile(r"^[A-Za-z]:")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_MAX_PATH_CHARS = 1024


class PathRefusedError(ToolError):
    """A path the workspace guard refused; the message says why and which folders are allowed."""


def _is_case_insensitive(folder: Path) -> bool:
    """Probe the file system: does ``folder`` with its name's case swapped name the same folder?"""
    name = folder.name
    swapped = name.swapcase()
    if name == swapped:  # no letters in the name: probe the parent instead
        return folder.parent != folder and _is_case_insensitive(folder.parent)
    try:
        return os.path.samestat(os.stat(folder), os.stat(folder.parent / swapped))
    except OSError:
        return False


class WorkspaceGuard:
    """Checks paths against a workspace's readable and writable folders; reads, writes and lists.

    Args:
        root: the workspace folder; every path is relative to it.
        read_folders: folders (relative to root) that may be listed and read; "." means all of root.
        write_folders: folders that may be written (and read).
        max_file_bytes: reads return at most this many bytes (with a note); bigger writes fail.
        max_list_entries: ``list_files`` returns at most this many paths (with a note).
        list_exclude: fnmatch patterns of names ``list_files`` leaves out.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        read_folders: Sequence[str],
        write_folders: Sequence[str],
        *,
        max_file_bytes: int = 100_000,
        max_list_entries: int = 200,
        list_exclude: Sequence[str] = ("__pycache__", "*.pyc"),
    ) -> None:
        root_path = Path(root)
        if not root_path.is_dir():
            raise ValueError(f"workspace root {str(root)!r} is not an existing folder")
        self.root = Path(os.path.realpath(root_path))
        self.case_insensitive = _is_case_insensitive(self.root)
        self.write_folders = [self._config_folder(f) for f in write_folders]
        extra = [self._config_folder(f) for f in read_folders]
        self.read_folders = self.write_folders + [f for f in extra if f not in self.write_folders]
        self.max_file_bytes = max_file_bytes
        self.max_list_entries = max_list_entries
        self.list_exclude = list(list_exclude)

    # ------------------------------------------------------------------ configuration

    def _config_folder(self, folder: str) -> str:
        rel = folder.strip("/") or "."
        real = os.path.realpath(self.root / rel)
        if not self._within(real, str(self.root)):
            raise ValueError(f"configured folder {folder!r} resolves outside the root {self.root}")
        return rel

    def _norm(self, path: str) -> str:
        return path.casefold() if self.case_insensitive else path

    def _within(self, real: str, folder_real: str) -> bool:
        real, folder_real = self._norm(real), self._norm(folder_real)
        return real == folder_real or real.startswith(folder_real.rstrip(os.sep) + os.sep)

    def _allowed_text(self, folders: list[str]) -> str:
        return ", ".join("the whole workspace" if f == "." else f"{f}/" for f in folders)

    # ------------------------------------------------------------------ checks

    def _syntax(self, path: object, what: str, folders: list[str]) -> str:
        """Refuse forms that are never needed, before any resolution. Returns the cleaned path."""
        allowed = self._allowed_text(folders)
        if not isinstance(path, str):
            raise PathRefusedError(f"{what} must be a string, got {type(path).__name__}")
        shown = repr(path[:200])
        if path == "":
            raise PathRefusedError(f"{what} is empty; expected a path under {allowed}")
        if len(path) > _MAX_PATH_CHARS:
            raise PathRefusedError(f"{what} is longer than {_MAX_PATH_CHARS} characters")
        if "\x00" in path:
            raise PathRefusedError(f"{what} {shown} contains a NUL byte")
        if any(unicodedata.category(c) == "Cc" for c in path):
            raise PathRefusedError(f"{what} {shown} contains control characters")
        if path != path.strip():
            raise PathRefusedError(f"{what} {shown} has leading or trailing whitespace")
        if "\\" in path:
            raise PathRefusedError(
                f"{what} {shown} uses backslashes (Windows or UNC form); use forward slashes, "
                f"relative to the workspace, under {allowed}"
            )
        if _DRIVE.match(path) or ":" in path:
            raise PathRefusedError(
                f"{what} {shown} contains ':' (a drive letter, URL or stream form); "
                f"use a relative path under {allowed}"
            )
        if path.startswith("/"):
            raise PathRefusedError(
                f"{what} {shown} is absolute; use a path relative to the workspace under {allowed}"
            )
        if path.startswith("~"):
            raise PathRefusedError(f"{what} {shown} starts with '~'; home folders are not allowed")
        if _PERCENT.search(path) and unquote(path) != path:
            raise PathRefusedError(
                f"{what} {shown} contains percent-encoded characters; paths are taken literally, "
                "write them plainly"
            )
        if unicodedata.normalize("NFKC", path) != unicodedata.normalize("NFC", path):
            raise PathRefusedError(
                f"{what} {shown} contains Unicode compatibility characters (e.g. fullwidth dots or "
                "slashes); use plain ASCII punctuation"
            )
        for part in path.split("/"):
            # Windows ignores trailing dots and spaces, so '.git.' is '.git' there.
            if part.rstrip(". ").casefold() == ".git":
                raise PathRefusedError(f"{what} {shown}: the .git folder is never readable")
        return path

    def _resolve(self, path: object, what: str, folders: list[str], verb: str) -> Path:
        cleaned = self._syntax(path, what, folders)
        real = os.path.realpath(self.root / cleaned)
        allowed = self._allowed_text(folders)
        if os.path.islink(real):  # realpath stops at a symlink loop
            raise PathRefusedError(f"{what} {cleaned!r} is a symlink loop")
        rel_real = os.path.relpath(real, self.root)
        if any(p.casefold() == ".git" for p in Path(rel_real).parts):
            raise PathRefusedError(f"{what} {cleaned!r} leads into .git, which is never readable")
        for folder in folders:
            if self._within(
                real, os.path.join(self.root, folder) if folder != "." else str(self.root)
            ):
                return Path(real)
        raise PathRefusedError(
            f"{what} {cleaned!r} is outside the folders you may {verb}: {allowed}"
            + (
                " (it resolves through a symlink)"
                if os.path.realpath(self.root / cleaned) != os.path.normpath(self.root / cleaned)
                else ""
            )
        )

    def check_read(self, path: str) -> Path:
        """Resolve ``path`` for reading; raise :class:`PathRefusedError` unless it is allowed."""
        return self._resolve(path, "path", self.read_folders, "read")

    def check_write(self, path: str) -> Path:
        """Resolve ``path`` for writing; raise :class:`PathRefusedError` unless it is allowed."""
        real = self._resolve(path, "path", self.write_folders, "write")
        if real.name.casefold().startswith(".git"):
            # .gitattributes / .gitmodules / .gitignore change what git does and commits.
            raise PathRefusedError(f"path {path!r}: git control files (.git*) cannot be written")
        return real

    def check_folder(self, folder: str) -> Path:
        """Resolve a folder for listing ("" or "." are handled by :meth:`list_files`)."""
        real = self._resolve(folder.rstrip("/") or folder, "folder", self.read_folders, "list")
        if not real.exists():
            raise PathRefusedError(f"folder {folder!r} does not exist")
        if not real.is_dir():
            raise PathRefusedError(f"folder {folder!r} is a file, not a folder; use read_file")
        return real

    def relative(self, real: Path) -> str:
        """The workspace-relative POSIX form of a resolved path."""
        return Path(os.path.relpath(real, self.root)).as_posix()

    @staticmethod
    def _regular(st: os.stat_result, shown: str) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise PathRefusedError(f"{shown} is a folder, not a file; use list_files")
        if not stat.S_ISREG(st.st_mode):
            raise PathRefusedError(f"{shown} is not a regular file (device, FIFO or socket)")
        if st.st_nlink > 1:
            raise PathRefusedError(
                f"{shown} has {st.st_nlink} hard links; a hard link may lead outside the workspace"
            )

    # ------------------------------------------------------------------ operations

    def read_text(self, path: str) -> str:
        """The file's text; above ``max_file_bytes`` the first part with a note saying so."""
        real = self.check_read(path)
        shown = repr(path)
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            raise PathRefusedError(f"file {shown} does not exist") from None
        self._regular(st, f"path {shown}")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(real, flags)
        except OSError as e:
            raise PathRefusedError(f"cannot open {shown}: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            st2 = os.fstat(f.fileno())
            self._regular(st2, f"path {shown}")  # the file swapped after the check
            data = f.read(self.max_file_bytes + 1)
        cut = len(data) > self.max_file_bytes
        data = data[: self.max_file_bytes]
        if b"\x00" in data[:8192]:
            raise PathRefusedError(f"{shown} is a binary file ({st2.st_size} bytes); not shown")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            if not (cut and e.start >= len(data) - 3):  # a character split by the cut is fine
                raise PathRefusedError(
                    f"{shown} is not UTF-8 text ({st2.st_size} bytes); not shown"
                ) from None
            text = data[: e.start].decode("utf-8")
        if cut:
            text += (
                f"\n[... cut: the file has {st2.st_size} bytes, only the first "
                f"{self.max_file_bytes} are shown]"
            )
        return text

    def write_text(self, path: str, content: str) -> int:
        """Write the whole ``content`` atomically (temp file + rename); returns the byte count."""
        if not isinstance(content, str):
            raise PathRefusedError("content must be a string (the complete file content)")
        data = content.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise PathRefusedError(
                f"content is {len(data)} bytes; the limit is {self.max_file_bytes} bytes"
            )
        real = self.check_write(path)
        shown = repr(path)
        mode = 0o644
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            st = None
        if st is not None:
            self._regular(st, f"path {shown}")
            mode = stat.S_IMODE(st.st_mode)
        parent = real.parent
        if not parent.exists():
            # Parent folders that do not exist yet cannot be symlinks: creating them is safe.
            parent.mkdir(parents=True, exist_ok=True)
        elif not parent.is_dir():
            raise PathRefusedError(f"the parent of {shown} is a file, not a folder")
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{real.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, real)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        try:  # make the rename durable; some file systems refuse to open folders
            dfd = os.open(parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
        return len(data)

    def _excluded(self, name: str) -> bool:
        return name.casefold() == ".git" or any(
            fnmatch.fnmatch(name, pat) for pat in self.list_exclude
        )

    def list_files(self, folder: str = "") -> list[str]:
        """Workspace-relative paths of the readable files under ``folder`` (all readable if "")."""
        if folder in ("", ".", "./"):
            tops = [self.root / f if f != "." else self.root for f in self.read_folders]
            tops = [t for t in tops if t.is_dir()]
        else:
            tops = [self.check_folder(folder)]
        found: set[str] = set()
        for top in tops:
            for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
                dirnames[:] = [d for d in dirnames if not self._excluded(d)]
                for name in filenames:
                    if self._excluded(name):
                        continue
                    full = os.path.join(dirpath, name)
                    rel = Path(os.path.relpath(full, self.root)).as_posix()
                    try:
                        st = os.stat(self.check_read(rel))
                    except (ToolError, OSError):
                        continue  # a symlink pointing out, a dangling link: not listed
                    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # as read_text demands
                        found.add(rel)
        return sorted(found)
