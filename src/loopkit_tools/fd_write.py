"""Staged writes through a folder descriptor: a temp file beside its target, renamed over it later.

:meth:`~loopkit_tools.workspace.WorkspaceGuard.write_texts` stages every file of a change first and
renames them only when all are written; :func:`rename_all` puts back the targets already renamed
when a later rename fails. Everything is relative to the descriptors of the guard's resolution.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass

from loopkit_tools.fd_paths import FILE_FLAGS, PathRefusedError, os_refusal


def write_new(parent: int, name: str, data: bytes, mode: int) -> None:
    """Create ``name`` (it must not exist) in the folder ``parent`` with ``data``, fsynced."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=parent)
        raise


@dataclass
class Staged:
    """A temp file written beside its target, waiting to be renamed over it."""

    fd: int  # the folder's descriptor, open while the resolution that made it is
    tmp: str
    name: str
    shown: str
    existed: bool
    mode: int
    renamed: bool = False

    def old_content(self) -> bytes | None:
        """The target's content before the rename (None if it did not exist), to restore it."""
        if not self.existed:
            return None
        fd = os.open(self.name, FILE_FLAGS, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def restore(self, old: bytes | None) -> bool:
        """Put the target back as it was before the rename; False if that failed."""
        try:
            if old is None:
                os.unlink(self.name, dir_fd=self.fd)
            else:
                back = f".{self.name[:60]}.{secrets.token_hex(6)}.tmp"
                write_new(self.fd, back, old, self.mode)
                os.replace(back, self.name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError:
            return False
        return True

    def discard(self) -> None:
        if not self.renamed:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp, dir_fd=self.fd)

    def sync(self) -> None:
        with contextlib.suppress(OSError):  # make the rename durable where folders can be synced
            os.fsync(self.fd)


def rename_all(staged: list[Staged]) -> None:
    """Rename every staged file over its target, in order; on a failure put the renamed ones back
    and raise (a :class:`PathRefusedError` naming the file, or what could not be put back)."""
    done: list[tuple[Staged, bytes | None]] = []
    try:
        for s in staged:
            old = s.old_content()
            os.replace(s.tmp, s.name, src_dir_fd=s.fd, dst_dir_fd=s.fd)
            s.renamed = True
            done.append((s, old))
    except BaseException as error:
        failed = [s.shown for s, old in reversed(done) if not s.restore(old)]
        if failed:
            raise PathRefusedError(
                f"the change failed ({error}) and {', '.join(failed)} could not be put back"
            ) from error
        if isinstance(error, OSError):
            shown = next(s.shown for s in staged if not s.renamed)
            raise os_refusal(error, shown, "write") from None
        raise
    for s in staged:
        s.sync()
