"""``WorkspaceGuard``: every path a tool receives is checked here before anything touches the disk.

A workspace has a root, folders that may be read and folders that may be written (writable folders
are readable too). A path is refused, with a message naming the allowed folders, when it is empty,
absolute, not valid Unicode (lone surrogates), has NUL, control characters or line separators, uses
Windows forms (backslashes, drive letters, UNC, ``:`` streams), percent-encoded or
Unicode-compatibility tricks, a leading ``~``, names ``.git``, or resolves (after ``..``, symlinks
and, on case-insensitive file systems, case) outside the allowed folders, compared by path
component. Files must be regular files with one link (no devices, FIFOs, sockets, hard links that
may point anywhere). Reads are cut at a size limit with a note; writes are atomic; names the model
creates must be visible text (no bidirectional controls or zero-width characters).

Resolution and I/O go through folder file descriptors (:mod:`loopkit_tools.fd_paths`): a path is
resolved name by name from the root with ``O_NOFOLLOW``, checked, and then read, listed or written
relative to the descriptors of that resolution, so a racer swapping a folder for a symlink between
the check and the use gets nothing. Every error of the system is a :class:`PathRefusedError`.

The guard is usable on its own (it imports nothing from the tools around it).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote

from loopkit_tools.fd_paths import (
    DIR_FLAGS,
    FILE_FLAGS,
    DirChain,
    PathRefusedError,
    Resolved,
    ResolveError,
    is_git_name,
    os_refusal,
    resolve,
)
from loopkit_tools.fd_walk import Listing, Stamp, TreeWalk, stamp_tree
from loopkit_tools.fd_write import Staged, rename_all, write_new

__all__ = ["Listing", "PathRefusedError", "WorkspaceGuard"]

_DRIVE = re.compile(r"^[A-Za-z]:")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_MAX_PATH_CHARS = 1024
# A path of plain ASCII names that _syntax always accepts (.git names are excluded before).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*")
# Characters a name the model creates may not contain: they make a name look like another one.
_INVISIBLE = {
    **{c: "a bidirectional control" for c in "\u202a\u202b\u202c\u202d\u202e"},
    **{c: "a bidirectional isolate" for c in "\u2066\u2067\u2068\u2069"},
    **{c: "a direction mark" for c in "\u200e\u200f\u061c"},
    **{c: "a zero-width character" for c in "\u200b\u200c\u200d\u2060\ufeff"},
}
_LINE_SEPARATORS = "\u2028\u2029"


def _unfit_for_a_new_name(char: str) -> str | None:
    """What is wrong with ``char`` in a name the model creates, or None."""
    if char in _INVISIBLE:
        return f"{_INVISIBLE[char]} (U+{ord(char):04X})"
    if "\ud800" <= char <= "\udfff":
        return f"a byte that is not UTF-8 (U+{ord(char):04X}, a lone surrogate)"
    if unicodedata.category(char) == "Cc" or char in _LINE_SEPARATORS:
        return f"a control character or line break (U+{ord(char):04X})"
    return None


def _without_trailing_slash(folder: str) -> str:
    """``folder`` without its trailing slashes ("/" stays); what is not a string stays as it is,
    for the guard to refuse clearly."""
    return (folder.rstrip("/") or folder) if isinstance(folder, str) else folder


def _is_case_insensitive(folder: Path) -> bool:
    """Probe the file system: does ``folder`` with its name's case swapped name the same folder?"""
    name = folder.name
    swapped = name.swapcase()
    if name == swapped:  # no letters in the name: probe the parent instead
        return folder.parent != folder and _is_case_insensitive(folder.parent)
    try:
        # lstat: a symlink under the swapped name (to the folder itself) is not the same name
        return os.path.samestat(os.stat(folder), os.lstat(folder.parent / swapped))
    except OSError:
        return False


class WorkspaceGuard:
    """Checks paths against a workspace's readable and writable folders; reads, writes and lists.

    Args:
        root: the workspace folder; every path is relative to it.
        read_folders: folders (relative to root) that may be listed and read; "." means all of root.
        write_folders: folders that may be written (and read).
        max_file_bytes: reads return at most this many bytes (with a note); bigger writes fail.
        max_list_entries: ``list_files`` returns at most this many paths (:meth:`listing` counts
            the rest).
        list_exclude: fnmatch patterns of names ``list_files`` leaves out.
        max_list_scan: a listing reads at most this many folder entries, then stops and says so.
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
        max_list_scan: int = 10_000,
    ) -> None:
        root_path = Path(root)
        if not root_path.is_dir():
            raise ValueError(f"workspace root {str(root)!r} is not an existing folder")
        self.root = Path(os.path.realpath(root_path))
        self.case_insensitive = _is_case_insensitive(self.root)
        self._root_parts = self.root.parts[1:]
        # configured folder (as given, stripped) -> its logical path from the root
        self._folder_parts: dict[str, tuple[str, ...]] = {}
        self.write_folders = [self._config_folder(f) for f in write_folders]
        extra = [self._config_folder(f) for f in read_folders]
        self.read_folders = self.write_folders + [f for f in extra if f not in self.write_folders]
        self.max_file_bytes = max_file_bytes
        self.max_list_entries = max_list_entries
        self.list_exclude = list(list_exclude)
        self.max_list_scan = max_list_scan

    # ------------------------------------------------------------------ configuration

    def _config_folder(self, folder: str) -> str:
        rel = folder.strip("/") or "."
        chain = self._open_root()
        try:
            resolved = self._resolve_in(chain, rel, repr(folder))
            parts = tuple(resolved.parts)
        except ResolveError as e:
            raise ValueError(
                f"configured folder {folder!r} resolves outside the root {self.root}: {e}"
            ) from None
        except OSError as e:
            raise ValueError(f"configured folder {folder!r} cannot be resolved: {e}") from None
        finally:
            chain.close()
        self._folder_parts[rel] = parts
        return rel

    def _same(self, a: str, b: str) -> bool:
        return a.casefold() == b.casefold() if self.case_insensitive else a == b

    def _inside(self, parts: Sequence[str], folder: Sequence[str]) -> bool:
        """Is the logical path ``parts`` the folder ``folder`` or inside it (by component)?"""
        return len(parts) >= len(folder) and all(map(self._same, parts, folder))

    def _within(self, parts: Sequence[str], folders: list[str]) -> bool:
        return any(self._inside(parts, self._folder_parts[f]) for f in folders)

    def _related(self, parts: Sequence[str], folders: list[str]) -> bool:
        """Inside an allowed folder, or on the way to one (an error there may be shown)."""
        return any(
            self._inside(parts, fp) or self._inside(fp, parts)
            for fp in (self._folder_parts[f] for f in folders)
        )

    def _allowed_text(self, folders: list[str]) -> str:
        return ", ".join("the whole workspace" if f == "." else f"{f}/" for f in folders)

    # ------------------------------------------------------------------ checks

    def _syntax(self, path: object, what: str, folders: list[str]) -> str:
        """Refuse forms that are never needed, before any resolution. Returns the cleaned path."""
        allowed = self._allowed_text(folders)
        if not isinstance(path, str):
            raise PathRefusedError(f"{what} must be a string, got {type(path).__name__}")
        shown = ascii(path[:200])
        if path == "":
            raise PathRefusedError(f"{what} is empty; expected a path under {allowed}")
        if len(path) > _MAX_PATH_CHARS:
            raise PathRefusedError(f"{what} is longer than {_MAX_PATH_CHARS} characters")
        surrogate = next((i for i, c in enumerate(path) if "\ud800" <= c <= "\udfff"), None)
        if surrogate is not None:
            raise PathRefusedError(
                f"{what} {shown} contains a lone surrogate (U+{ord(path[surrogate]):04X}) at "
                f"character {surrogate}: it is not valid Unicode, so it names no file"
            )
        if "\x00" in path:
            raise PathRefusedError(f"{what} {shown} contains a NUL byte")
        if any(unicodedata.category(c) == "Cc" or c in _LINE_SEPARATORS for c in path):
            raise PathRefusedError(f"{what} {shown} contains control characters or line breaks")
        shown = repr(path[:200])
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
        if any(is_git_name(part) for part in path.split("/")):
            raise PathRefusedError(f"{what} {shown}: the .git folder is never readable")
        return path

    def _open_root(self) -> DirChain:
        try:
            return DirChain(os.open(self.root, DIR_FLAGS))
        except OSError as e:
            raise os_refusal(e, repr(str(self.root)), "open the workspace root") from None

    def _resolve_in(self, chain: DirChain, path: str, shown: str) -> Resolved:
        return resolve(chain, path, shown=shown, root_parts=self._root_parts, same_name=self._same)

    def _outside(
        self, shown: str, what: str, folders: list[str], verb: str, via_link: bool
    ) -> PathRefusedError:
        return PathRefusedError(
            f"{what} {shown} is outside the folders you may {verb}: {self._allowed_text(folders)}"
            + (" (it resolves through a symlink)" if via_link else "")
        )

    @contextlib.contextmanager
    def _located(
        self, path: object, what: str, folders: list[str], verb: str
    ) -> Iterator[tuple[str, Resolved]]:
        """Resolve ``path`` and check it is inside ``folders``; yields (shown, resolved).

        The resolution's folder descriptors stay open inside the block and are closed after it:
        do every bit of I/O relative to them, inside the block.
        """
        cleaned = self._syntax(path, what, folders)
        shown = repr(cleaned)
        chain = self._open_root()
        try:
            try:
                resolved = self._resolve_in(chain, cleaned, shown)
            except ResolveError as e:
                if e.outside_root or not self._related(e.parts, folders):
                    raise self._outside(shown, what, folders, verb, e.via_link) from None
                raise
            except OSError as e:  # reopening a folder of a deep path found it changed
                raise os_refusal(e, shown, "resolve") from None
            if not self._within(resolved.parts, folders):
                raise self._outside(shown, what, folders, verb, resolved.via_link)
            yield shown, resolved
        finally:
            chain.close()

    def check_read(self, path: str) -> Path:
        """Resolve ``path`` for reading; raise :class:`PathRefusedError` unless it is allowed.

        The returned path is where ``path`` resolved at the time of the call, for showing; the
        guard's own I/O never opens it by name again (a racer could swap it).
        """
        with self._located(path, "path", self.read_folders, "read") as (_shown, resolved):
            return self.root.joinpath(*resolved.parts)

    def check_write(self, path: str) -> Path:
        """Resolve ``path`` for writing; raise :class:`PathRefusedError` unless it is allowed."""
        with self._located(path, "path", self.write_folders, "write") as (shown, resolved):
            self._check_write_target(shown, resolved)
            return self.root.joinpath(*resolved.parts)

    def check_folder(self, folder: str) -> Path:
        """Resolve a folder for listing ("" or "." are handled by :meth:`list_files`)."""
        what = _without_trailing_slash(folder)
        with self._located(what, "folder", self.read_folders, "list") as (_shown, resolved):
            self._check_is_folder(folder, resolved)
            return self.root.joinpath(*resolved.parts)

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

    @staticmethod
    def _check_is_folder(folder: str, resolved: Resolved) -> None:
        if resolved.name is None:
            return  # the path came back to a folder of the chain (".", "a/..")
        if resolved.stat is None:
            raise PathRefusedError(f"folder {folder!r} does not exist")
        if not stat.S_ISDIR(resolved.stat.st_mode):
            raise PathRefusedError(f"folder {folder!r} is a file, not a folder; use read_file")

    @staticmethod
    def _check_write_target(shown: str, resolved: Resolved) -> None:
        name = resolved.name
        if name is None:
            raise PathRefusedError(f"path {shown} is a folder, not a file")
        if name.casefold().startswith(".git"):
            # .gitattributes / .gitmodules / .gitignore change what git does and commits.
            raise PathRefusedError(f"path {shown}: git control files (.git*) cannot be written")
        for new in [*resolved.missing, *([name] if resolved.stat is None else [])]:
            # The path passed _syntax, but a symlink's target may name the new file or folder.
            problem = next(filter(None, map(_unfit_for_a_new_name, new)), None)
            if problem is not None:
                raise PathRefusedError(
                    f"path {shown}: the new name {new!a} contains {problem}; names you create "
                    "must be visible text"
                )

    # ------------------------------------------------------------------ operations

    def read_text(self, path: str) -> str:
        """The file's text; above ``max_file_bytes`` the first part with a note saying so."""
        with self._located(path, "path", self.read_folders, "read") as (shown, resolved):
            st = resolved.stat
            if resolved.name is None or (st is not None and stat.S_ISDIR(st.st_mode)):
                raise PathRefusedError(f"path {shown} is a folder, not a file; use list_files")
            if st is None:
                raise PathRefusedError(f"file {shown} does not exist")
            self._regular(st, f"path {shown}")
            try:
                fd = os.open(resolved.name, FILE_FLAGS, dir_fd=resolved.chain.fd())
            except OSError as e:
                raise os_refusal(e, shown, "open") from None
            try:
                with os.fdopen(fd, "rb") as f:
                    st = os.fstat(f.fileno())
                    self._regular(st, f"path {shown}")  # swapped since it was looked at
                    data = f.read(self.max_file_bytes + 1)
            except OSError as e:
                raise os_refusal(e, shown, "read") from None
        return self._decode(data, shown, st.st_size)

    def _decode(self, data: bytes, shown: str, size: int) -> str:
        cut = len(data) > self.max_file_bytes
        data = data[: self.max_file_bytes]
        if b"\x00" in data[:8192]:
            raise PathRefusedError(f"{shown} is a binary file ({size} bytes); not shown")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            if not (cut and e.start >= len(data) - 3):  # a character split by the cut is fine
                raise PathRefusedError(
                    f"{shown} is not UTF-8 text ({size} bytes); not shown"
                ) from None
            text = data[: e.start].decode("utf-8")
        if cut:
            text += (
                f"\n[... cut: the file has {size} bytes, only the first "
                f"{self.max_file_bytes} are shown]"
            )
        return text

    def _encoded(self, content: object) -> bytes:
        """``content`` as UTF-8, refused unless it is a string within ``max_file_bytes``."""
        if not isinstance(content, str):
            raise PathRefusedError("content must be a string (the complete file content)")
        # n characters encode to at least n bytes: refuse a huge content before encoding it
        if len(content) > self.max_file_bytes:
            raise PathRefusedError(
                f"content has {len(content)} characters, so at least {len(content)} bytes; "
                f"the limit is {self.max_file_bytes} bytes"
            )
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as e:
            raise PathRefusedError(
                f"content contains a lone surrogate (U+{ord(content[e.start]):04X}) at character "
                f"{e.start}: it is not valid Unicode and cannot be written as UTF-8"
            ) from None
        if len(data) > self.max_file_bytes:
            raise PathRefusedError(
                f"content is {len(data)} bytes; the limit is {self.max_file_bytes} bytes"
            )
        return data

    def write_text(self, path: str, content: str) -> int:
        """Write the whole ``content`` atomically (temp file + rename); returns the byte count."""
        data = self._encoded(content)
        with self._located(path, "path", self.write_folders, "write") as (shown, resolved):
            self._check_write_target(shown, resolved)
            try:
                staged = self._stage(resolved, shown, data)
                try:
                    os.replace(staged.tmp, staged.name, src_dir_fd=staged.fd, dst_dir_fd=staged.fd)
                except BaseException:
                    staged.discard()
                    raise
                staged.sync()
            except OSError as e:
                raise os_refusal(e, shown, "write") from None
        return len(data)

    def write_texts(self, files: Mapping[str, str]) -> int:
        """Write several files as one change; returns the byte count of all.

        Every path and content is checked and written to a temp file beside its target first;
        nothing is renamed until all are staged. Then the temp files are renamed over their
        targets in the given order; if a rename fails, the targets already renamed get their old
        content back (new ones are removed) before the error is raised. So a failure leaves the
        old files, and a reader sees the old set or the new one except in the instant between two
        renames (POSIX has no rename of several files at once).
        """
        datas = [(path, self._encoded(content)) for path, content in files.items()]
        with contextlib.ExitStack() as stack:
            staged: list[Staged] = []
            try:
                for path, data in datas:
                    shown, resolved = stack.enter_context(
                        self._located(path, "path", self.write_folders, "write")
                    )
                    self._check_write_target(shown, resolved)
                    try:
                        staged.append(self._stage(resolved, shown, data))
                    except OSError as e:
                        raise os_refusal(e, shown, "write") from None
                rename_all(staged)
            finally:
                for s in staged:
                    s.discard()  # the temp files not renamed (all of them after a failure)
        return sum(len(data) for _path, data in datas)

    def _stage(self, resolved: Resolved, shown: str, data: bytes) -> Staged:
        """Create the missing folders, then write a temp file (fsynced) beside the target, all
        relative to fds. The caller renames it (or discards it)."""
        name = resolved.name
        assert name is not None
        mode = 0o644
        existed = resolved.stat is not None
        if resolved.stat is not None:
            self._regular(resolved.stat, f"path {shown}")
            mode = stat.S_IMODE(resolved.stat.st_mode)
        chain = resolved.chain
        for folder in resolved.missing:
            # Folders that did not exist cannot have been symlinks; if one appeared since, the
            # O_NOFOLLOW open refuses it.
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, dir_fd=chain.fd())
            chain.push(folder, os.open(folder, DIR_FLAGS, dir_fd=chain.fd()))
        parent = chain.fd()
        tmp = f".{name[:60]}.{secrets.token_hex(6)}.tmp"
        write_new(parent, tmp, data, mode)
        return Staged(parent, tmp, name, shown, existed, mode)

    # ------------------------------------------------------------------ listing

    def _nameable(self, rel: str) -> bool:
        if _PLAIN_PATH.fullmatch(rel):  # the common case, decided without the whole battery
            return True
        try:
            self._syntax(rel, "path", self.read_folders)
        except PathRefusedError:
            return False
        return True

    def _link_is_file(self, rel: str) -> bool:
        try:
            with self._located(rel, "path", self.read_folders, "read") as (_shown, resolved):
                st = resolved.stat
                return st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1
        except PathRefusedError:
            return False

    def listing(self, folder: str = "") -> Listing:
        """The readable files under ``folder`` (all readable folders if ""), sorted, capped.

        At most ``max_list_entries`` paths, then the rest counted; at most ``max_list_scan``
        folder entries are read (``complete`` is False when the walk stopped there). Left out and
        counted: paths over 1,024 characters and names read_file would refuse (not UTF-8, control
        characters, ...). Symlinks are listed when they lead to a readable file; symlinked folders
        are not walked.
        """
        patterns = re.compile("|".join(fnmatch.translate(p) for p in self.list_exclude) or "(?!)")
        walk = TreeWalk(
            cap=self.max_list_entries,
            budget=self.max_list_scan,
            max_chars=_MAX_PATH_CHARS,
            excluded=lambda name: is_git_name(name) or patterns.match(name) is not None,
            nameable=self._nameable,
            link_is_file=self._link_is_file,
        )
        explicit = folder not in ("", ".", "./")
        tops = [_without_trailing_slash(folder)] if explicit else self._list_tops()
        for top in tops:
            with self._located(top, "folder", self.read_folders, "list") as (_shown, resolved):
                st = resolved.stat
                if (
                    not explicit
                    and resolved.name is not None
                    and not (st and stat.S_ISDIR(st.st_mode))
                ):
                    continue  # a configured folder that does not exist (yet)
                self._check_is_folder(folder, resolved)
                try:
                    here = resolved.chain.fd()
                    if resolved.name is None:
                        fd = os.dup(here)
                    else:
                        fd = os.open(resolved.name, DIR_FLAGS, dir_fd=here)
                    walk.walk(fd, "/".join(resolved.parts))
                except OSError as e:
                    raise os_refusal(e, repr(folder or top), "list") from None
        walk.listing.files.sort()
        return walk.listing

    def _list_tops(self) -> list[str]:
        """The readable folders, without those inside another one, in sorted order."""
        parts: dict[tuple[str, ...], str] = {}  # one configured name per resolved folder
        for f in self.read_folders:
            parts.setdefault(self._folder_parts[f], f)
        tops = [
            (p, f)
            for p, f in parts.items()
            if not any(len(q) < len(p) and self._inside(p, q) for q in parts)
        ]
        return [f for p, f in sorted(tops, key=lambda pf: "/".join(pf[0]) + "/")]

    def stamps(self, folder: str) -> dict[str, Stamp]:
        """Each regular file under the readable ``folder`` with its :data:`Stamp`,
        to notice cheaply that files changed; a missing folder has none. Symlinks are not
        followed; ``list_exclude`` names and ``.git`` are left out."""
        patterns = re.compile("|".join(fnmatch.translate(p) for p in self.list_exclude) or "(?!)")
        cleaned = _without_trailing_slash(folder)
        with self._located(cleaned, "folder", self.read_folders, "list") as (_shown, resolved):
            if resolved.name is not None and resolved.stat is None:
                return {}
            self._check_is_folder(folder, resolved)
            try:
                here = resolved.chain.fd()
                if resolved.name is None:
                    fd = os.dup(here)
                else:
                    fd = os.open(resolved.name, DIR_FLAGS, dir_fd=here)
                return stamp_tree(
                    fd,
                    "/".join(resolved.parts),
                    lambda name: is_git_name(name) or patterns.match(name) is not None,
                )
            except OSError as e:
                raise os_refusal(e, repr(folder), "list") from None

    def list_files(self, folder: str = "") -> list[str]:
        """Workspace-relative paths of the readable files under ``folder`` (all readable if "").

        At most ``max_list_entries``; :meth:`listing` also says what was left out.
        """
        return self.listing(folder).files
