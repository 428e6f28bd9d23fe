"""Folders and files only their owner can open: moved to :mod:`loopkit.private_files` (the
library's HTTP token files use them too); re-exported here for the UI server."""

from __future__ import annotations

from loopkit.private_files import PRIVATE_DIR, PRIVATE_FILE, create_private_file, make_private_dir

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "create_private_file", "make_private_dir"]
