"""Folders and files only their owner can open: folders 0700, files 0600.

Screenshots and trees show whatever the application displays (customer data, say), and the
HTTP server's token file is a key: other users of the machine must not read them. Modes are set
explicitly after creation, so an unusual umask cannot widen them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["create_private_file", "make_private_dir"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def make_private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents, each 0700; a folder that exists keeps its mode
    (it is the user's). Raises OSError when a folder cannot be created there."""
    missing: list[Path] = []
    for candidate in (path, *path.absolute().parents):
        if candidate.is_dir():
            break
        missing.append(candidate)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made by someone else meanwhile: theirs, not ours to change
        os.chmod(folder, PRIVATE_DIR)
    return path


def create_private_file(path: Path) -> Path:
    """Create ``path`` as a new, empty 0600 file. Refuses a file or a symlink already there
    (FileExistsError), so nothing else's file is overwritten or followed. Later writes through
    ``open(path, "w")`` keep the mode."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, PRIVATE_FILE)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(descriptor, PRIVATE_FILE)
    finally:
        os.close(descriptor)
    return path
