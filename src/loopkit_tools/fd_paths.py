"""Resolving a workspace path through folder file descriptors, so no rename race can redirect it.

:func:`resolve` walks a path from an open root folder one name at a time: every folder is opened
relative to its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY``, so a folder swapped for a
symlink is never followed by the kernel. Symlinks met on the way are read with ``readlinkat`` and
followed here, in user space: ``..`` goes up the *logical* path (never above the root), an absolute
target must name the root by its real path, and at most :data:`MAX_SYMLINK_HOPS` are followed. The
result is the logical path (no symlinks, no ``.`` or ``..``) together with the open descriptor of
its deepest existing folder. The caller checks the logical path, then does all its I/O relative to
that descriptor: nothing is ever looked up again by name from the root.

``openat2(RESOLVE_BENEATH)`` was considered and not used: it refuses every absolute symlink (the
guard follows those that stay inside the root), it cannot tell which allowed folder a path ends in,
and the user-space walk is needed as the fallback anyway. The walk costs one ``openat`` per folder.

Every ``OSError`` becomes a :class:`PathRefusedError` that names the path and what was wrong
(:func:`os_refusal`); none escapes as a raw exception.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from loopkit.abstractions import ToolError

MAX_SYMLINK_HOPS = 40
"""Symlinks followed while resolving one path (the kernel's own limit); more is a refusal."""

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_KEEP_OPEN = 32  # descriptors a DirChain keeps open below its top
_RETRIES = 8  # a name that changes type between two looks this often: refuse, a racer is at work

_REASONS = {
    errno.ENOENT: "it does not exist",
    errno.ENOTDIR: "a part of it is a file, not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENAMETOOLONG: "a name in it is longer than the file system allows (255 bytes)",
    errno.ELOOP: "it is a symlink, or the symlinks on its way loop",
    errno.EACCES: "permission denied (the runner's user may not open it)",
    errno.EPERM: "the operation is not permitted",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EMFILE: "too many open files; try again",
    errno.ENFILE: "too many open files on the system; try again",
    errno.ENXIO: "it is not a regular file (a socket or a device)",
    errno.EEXIST: "something else already exists there",
    errno.ENOTEMPTY: "it is a folder that is not empty",
    errno.EBUSY: "it is busy",
    errno.ETXTBSY: "it is a running program",
    errno.EXDEV: "it is on another file system",
    errno.EIO: "an input/output error on the disk",
    errno.EINVAL: "the file system refused the name or the operation",
}


class PathRefusedError(ToolError):
    """A path the workspace guard refused; the message says why and which folders are allowed."""


class ResolveError(PathRefusedError):
    """A refusal met while resolving, with the logical path reached so far.

    The guard uses ``parts`` to answer "outside the allowed folders" instead of a detail (such as
    "is a file, not a folder") about a place the model may not look at.
    """

    def __init__(
        self, message: str, parts: Sequence[str], *, outside_root: bool = False, via_link: bool
    ) -> None:
        super().__init__(message)
        self.parts = list(parts)
        self.outside_root = outside_root
        self.via_link = via_link


def os_refusal(error: OSError, shown: str, doing: str) -> PathRefusedError:
    """A clear refusal for an ``OSError`` met while ``doing`` something to the path ``shown``."""
    code = error.errno or 0
    reason = _REASONS.get(code) or error.strerror or str(error) or type(error).__name__
    name = errno.errorcode.get(code)
    return PathRefusedError(f"cannot {doing} {shown}: {reason}" + (f" ({name})" if name else ""))


def is_git_name(name: str) -> bool:
    """``.git`` in any case; Windows ignores trailing dots and spaces, so ``.git.`` counts too."""
    return name.rstrip(". ").casefold() == ".git"


class DirChain:
    """The open folders from a top folder down to the current one, by name.

    ``names[i]`` is a folder inside the folder of depth ``i``. Only the top and the deepest
    ``keep_open`` descriptors stay open, so a walk 2,000 folders deep never holds 2,000
    descriptors; a closed one is reopened from the top, name by name with ``O_NOFOLLOW``, when it
    is needed again. The chain owns every descriptor in it, the top included: close it after use.
    """

    def __init__(self, top_fd: int, *, keep_open: int = _KEEP_OPEN) -> None:
        self.names: list[str] = []
        self._fds: list[int | None] = [top_fd]
        self._keep = keep_open
        self._low = 1  # every descriptor below this depth (the top excepted) is closed

    @property
    def depth(self) -> int:
        return len(self.names)

    def fd(self) -> int:
        """The current folder's descriptor, reopened from the top if it was closed."""
        fd = self._fds[-1]
        if fd is None:
            fd = self._reopen()
        return fd

    def push(self, name: str, fd: int) -> None:
        """Go down into ``name``, already opened as ``fd`` (the chain now owns it)."""
        self.names.append(name)
        self._fds.append(fd)
        while len(self._fds) - self._low > self._keep:
            old = self._fds[self._low]
            if old is not None:
                os.close(old)
                self._fds[self._low] = None
            self._low += 1

    def pop(self) -> None:
        """Go up one folder (never above the top)."""
        fd = self._fds.pop()
        self.names.pop()
        if fd is not None:
            os.close(fd)
        self._low = min(self._low, len(self._fds))

    def reset(self) -> None:
        """Go back up to the top."""
        while self.names:
            self.pop()

    def close(self) -> None:
        """Close every descriptor, the top included."""
        self.reset()
        top = self._fds[0]
        if top is not None:
            os.close(top)
            self._fds[0] = None

    def _reopen(self) -> int:
        # The open descriptors are the top and a run at the bottom; the bottom one is closed here,
        # so every one below the top is: open them again from the top, keeping the deepest few.
        fds = self._fds
        top = fds[0]
        assert top is not None, "the chain was closed"
        first_kept = max(1, len(fds) - self._keep)
        self._low = first_kept
        fd = top
        for depth in range(1, len(fds)):
            parent = fd
            temporary = 1 < depth <= first_kept  # an ancestor above the kept ones: not stored
            try:
                fd = os.open(self.names[depth - 1], DIR_FLAGS, dir_fd=parent)
            finally:
                if temporary:
                    os.close(parent)
            if depth >= first_kept:
                old, fds[depth] = fds[depth], fd
                if old is not None:
                    os.close(old)
        return fd


@dataclass
class Resolved:
    """A path resolved beneath the root: ``chain`` (open) + ``missing`` folders + ``name``.

    ``name`` is the last name, looked at with ``lstat`` but not opened (``stat``: never a symlink;
    None when it does not exist), or None when the path is the chain's current folder itself.
    ``missing`` are folders of the path that do not exist yet (``name`` does not exist then either).
    """

    chain: DirChain
    missing: list[str] = field(default_factory=list)
    name: str | None = None
    stat: os.stat_result | None = None
    via_link: bool = False

    @property
    def parts(self) -> list[str]:
        """The logical path from the root: no symlinks, no ``.`` or ``..``."""
        return [*self.chain.names, *self.missing, *([self.name] if self.name is not None else [])]


def _neither_dir_nor_link(st: os.stat_result) -> bool:
    return not (stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode))


def _part(chain: DirChain, name: str, shown: str) -> str:
    """``'a/b' (in 'a/b/c.py')``: the part of the path an error is about."""
    where = "/".join([*chain.names, name])
    return f"{where!r} (in {shown})"


def _names(text: str) -> list[str]:
    return [p for p in text.split("/") if p not in ("", ".")]


def resolve(
    chain: DirChain,
    path: str,
    *,
    shown: str,
    root_parts: Sequence[str],
    same_name: Callable[[str, str], bool],
) -> Resolved:
    """Resolve ``path`` (relative, ``/``-separated) from ``chain``'s top, the workspace root.

    Raises :class:`ResolveError` for ``.git``, ``..`` above the root, a symlink leading outside
    the root, a symlink loop, a file used as a folder, and any other error of the system.
    The chain is moved to the deepest existing folder of the result; the caller closes it.
    """
    pending = _names(path)[::-1]
    missing: list[str] = []
    hops = retries = 0
    via_link = False

    def fail(message: str, *extra: str, outside_root: bool = False) -> ResolveError:
        parts = [*chain.names, *missing, *extra]
        return ResolveError(message, parts, outside_root=outside_root, via_link=via_link)

    def follow(name: str, target: str) -> None:
        nonlocal hops, via_link
        hops += 1
        via_link = True
        if hops > MAX_SYMLINK_HOPS:
            raise fail(
                f"{shown}: more than {MAX_SYMLINK_HOPS} symlinks on the way (a symlink loop)", name
            )
        parts = _names(target)
        if target.startswith("/"):
            n = len(root_parts)
            if len(parts) < n or not all(map(same_name, parts[:n], root_parts)):
                message = f"{shown} resolves through a symlink to outside the workspace"
                raise fail(message, name, outside_root=True)
            chain.reset()
            parts = parts[n:]
        pending.extend(reversed(parts))

    def again(name: str) -> None:
        nonlocal retries
        retries += 1
        if retries > _RETRIES:
            raise fail(f"{shown}: {name!r} kept changing while it was opened; try again", name)
        pending.append(name)

    while pending:
        name = pending.pop()
        if name == "..":
            if missing:
                missing.pop()
            elif chain.depth:
                chain.pop()
            else:
                raise fail(f"{shown} leads above the workspace root", outside_root=True)
            continue
        if is_git_name(name):
            raise fail(f"{shown} leads into .git, which is never readable", name)
        if missing:  # below a folder that does not exist: nothing can be a symlink there
            missing.append(name)
            continue
        here = chain.fd()
        if not pending:  # the last name: look at it, do not open it
            try:
                st = os.stat(name, dir_fd=here, follow_symlinks=False)
            except FileNotFoundError:
                return Resolved(chain, missing, name, None, via_link)
            except OSError as e:
                raise fail(str(os_refusal(e, _part(chain, name, shown), "look up")), name) from None
            if not stat.S_ISLNK(st.st_mode):
                return Resolved(chain, missing, name, st, via_link)
        else:
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=here)
            except FileNotFoundError:
                missing.append(name)
                continue
            except OSError as e:
                if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                    where = _part(chain, name, shown)
                    raise fail(str(os_refusal(e, where, "open the folder")), name) from None
            else:
                chain.push(name, fd)
                continue
        # a symlink (or something that is not a folder): read it where it is
        try:
            target = os.readlink(name, dir_fd=here)
        except OSError as e:
            if e.errno not in (errno.EINVAL, errno.ENOENT):
                where = _part(chain, name, shown)
                raise fail(str(os_refusal(e, where, "read the symlink")), name) from None
            now: os.stat_result | None
            try:
                now = os.stat(name, dir_fd=here, follow_symlinks=False)
            except OSError:
                now = None
            # EINVAL: not a symlink. A file is a clear refusal; a folder or a symlink again means
            # a racer swapped it between the two looks: look again.
            if e.errno == errno.EINVAL and now is not None and _neither_dir_nor_link(now):
                what = "a file, not a folder" if stat.S_ISREG(now.st_mode) else "not a folder"
                where = "/".join([*chain.names, name])
                raise fail(f"{shown}: {where!r} is {what}", name) from None
            again(name)
            continue
        follow(name, target)
    if missing:
        return Resolved(chain, missing[:-1], missing[-1], None, via_link)
    return Resolved(chain, [], None, None, via_link)
