"""Listing a folder tree through file descriptors: iterative, bounded, sorted, following no links.

:class:`TreeWalk` walks from an open folder without recursion. Each folder is opened relative to its
parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY`` (a folder swapped for a symlink is skipped,
never followed), and only the deepest few descriptors stay open (:class:`~loopkit_tools.fd_paths.
DirChain`), so a tree 2,000 folders deep needs neither 2,000 stack frames nor 2,000 descriptors.

Folders are visited in the order that makes the files come out sorted: a folder's entries are read,
then visited by name, a folder's name counting as ``name/``. So the first ``cap`` files found are
the first ``cap`` of the sorted listing, and the walk can stop early: it reads at most ``budget``
folder entries in all and then stops, saying so (:attr:`Listing.complete`). A million files cost
what ``budget`` entries cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from loopkit_tools.fd_paths import DIR_FLAGS, DirChain


@dataclass
class Listing:
    """What a listing found: the first ``files`` (sorted) and what was left out, counted."""

    files: list[str] = field(default_factory=list)
    """Workspace-relative paths, sorted, at most the cap."""
    more: int = 0
    """Files found after the cap (a lower bound when the walk did not complete)."""
    complete: bool = True
    """False when the walk stopped at its budget of folder entries: more files may exist."""
    budget: int = 0
    """The budget of folder entries the walk had."""
    scanned: int = 0
    """Folder entries read."""
    too_long: int = 0
    """Entries whose path is over the path length limit (not listed, folders not walked)."""
    max_chars: int = 0
    """That limit."""
    unnamable: int = 0
    """Entries whose name read_file could not take (not UTF-8, control characters, ...)."""

    def notes(self) -> list[str]:
        """One line for each thing left out, for the model; nothing when the listing is whole."""
        notes = []
        if not self.complete:
            notes.append(
                f"[... more files not shown: the listing stopped after reading {self.scanned} "
                "folder entries; list a subfolder]"
            )
        elif self.more:
            notes.append(f"[... {self.more} more files not shown; list a subfolder]")
        if self.too_long:
            notes.append(
                f"[{self.too_long} paths longer than {self.max_chars} characters are not listed "
                "(and their folders not walked): read_file cannot open them]"
            )
        if self.unnamable:
            notes.append(
                f"[{self.unnamable} names read_file cannot take are not listed: names that are "
                "not UTF-8, or have control characters, line separators, ':', '\\' or other "
                "forms the workspace guard refuses]"
            )
        return notes


_FILE, _DIR = 0, 1


class TreeWalk:
    """Collects the listable files of one or more folder trees into :attr:`listing`.

    Args:
        cap: files kept in ``listing.files``; the rest are counted in ``listing.more``.
        budget: folder entries read in all (over every :meth:`walk`) before the walk stops.
        max_chars: paths longer than this are left out and counted.
        excluded: names left out silently, and folders not entered (``.git``, ``__pycache__``).
        nameable: False for a workspace-relative path that read_file would refuse as written.
        link_is_file: True for the path of a symlink that read_file would read (it resolves to a
            regular file inside the readable folders).
    """

    def __init__(
        self,
        *,
        cap: int,
        budget: int,
        max_chars: int,
        excluded: Callable[[str], bool],
        nameable: Callable[[str], bool],
        link_is_file: Callable[[str], bool],
    ) -> None:
        self.cap = cap
        self.listing = Listing(budget=budget, max_chars=max_chars)
        self._excluded = excluded
        self._nameable = nameable
        self._link_is_file = link_is_file

    def walk(self, top_fd: int, top: str) -> None:
        """List the tree of the open folder ``top_fd`` (owned and closed here), named ``top``."""
        chain = DirChain(top_fd)
        try:
            prefixes = [top]
            stack = [self._scan(top_fd, top)]
            while stack:
                entries = stack[-1]
                if not entries:
                    stack.pop()
                    prefixes.pop()
                    if stack:
                        chain.pop()
                    continue
                _key, name, kind = entries.pop()
                rel = f"{prefixes[-1]}/{name}" if prefixes[-1] else name
                if kind == _FILE:
                    self._add(rel)
                    continue
                if not self.listing.complete:
                    continue  # the budget is spent: no folder is read any more
                try:
                    fd = os.open(name, DIR_FLAGS, dir_fd=chain.fd())
                except OSError:
                    continue  # gone, or swapped for a symlink since it was read: not listed
                chain.push(name, fd)
                prefixes.append(rel)
                stack.append(self._scan(fd, rel))
        finally:
            chain.close()

    def _add(self, rel: str) -> None:
        if len(self.listing.files) < self.cap:
            self.listing.files.append(rel)
        else:
            self.listing.more += 1

    def _scan(self, fd: int, prefix: str) -> list[tuple[str, str, int]]:
        """The listable entries of one folder, sorted last-first (so ``pop`` gives the first)."""
        listing = self.listing
        entries: list[tuple[str, str, int]] = []
        with os.scandir(fd) as it:
            for entry in it:
                if listing.scanned >= listing.budget:
                    listing.complete = False
                    break
                listing.scanned += 1
                name = entry.name
                if self._excluded(name):
                    continue
                rel = f"{prefix}/{name}" if prefix else name
                if len(rel) > listing.max_chars:
                    listing.too_long += 1
                    continue
                if not self._nameable(rel):
                    listing.unnamable += 1
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        entries.append((name + "/", name, _DIR))
                    elif entry.is_file(follow_symlinks=False):
                        if entry.stat(follow_symlinks=False).st_nlink == 1:  # as read_file wants
                            entries.append((name, name, _FILE))
                    elif entry.is_symlink() and self._link_is_file(rel):
                        entries.append((name, name, _FILE))
                except OSError:
                    continue  # removed while being listed
        entries.sort(reverse=True)
        return entries


Stamp = tuple[int, int, int, int]
"""A file's (mtime in ns, size, inode, ctime in ns): what changes when the file does. The ctime
is there because the mtime can be set back (``cp -p``, ``touch -r``, ``rsync -t``, tar) while
the ctime cannot: any write or ``utime`` moves it."""


def stamp_tree(top_fd: int, top: str, excluded: Callable[[str], bool]) -> dict[str, Stamp]:
    """Every regular file with one link under the open folder ``top_fd`` (owned and closed here),
    named ``top``: its relative path and :data:`Stamp`. Folders are opened ``O_NOFOLLOW`` relative
    to their parent, symlinks are not followed, ``excluded`` names are skipped.

    Unlike :class:`TreeWalk` nothing is sorted, capped or checked for a name read_file would take
    (reading such a file is refused then): it is the cheap question "did anything change?".
    """
    stamps: dict[str, Stamp] = {}
    pending = [(top_fd, top)]
    try:
        while pending:
            fd, prefix = pending.pop()
            try:
                _stamp_folder(fd, prefix, excluded, stamps, pending)
            finally:
                os.close(fd)
    finally:
        for fd, _prefix in pending:  # only after an unexpected error
            os.close(fd)
    return stamps


def _stamp_folder(
    fd: int,
    prefix: str,
    excluded: Callable[[str], bool],
    stamps: dict[str, Stamp],
    pending: list[tuple[int, str]],
) -> None:
    with os.scandir(fd) as it:
        for entry in it:
            name = entry.name
            if excluded(name):
                continue
            rel = f"{prefix}/{name}" if prefix else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_nlink == 1:
                        stamps[rel] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
            except OSError:
                continue  # removed or swapped while being looked at
