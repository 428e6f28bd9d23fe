"""The server's output folder: the private files its tools write (trees, screenshots, videos,
the launched app's output) and their names as MCP resources.

Files are created anew, 0600, in a 0700 folder (see :mod:`loopkit_ui.private_files`). A file
that is finished is *published*: it gets a ``loopkit-ui://output/<name>`` URI, and the server
serves it through ``resources/read`` (only published files: a name the server did not write is
no resource, so a client cannot read anything else of the machine through it).
"""

from __future__ import annotations

import itertools
import mimetypes
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loopkit_ui.private_files import create_private_file, make_private_dir

__all__ = ["RESOURCE_PREFIX", "OutputFolder", "PublishedFile"]

RESOURCE_PREFIX = "loopkit-ui://output/"
_MIME = {
    ".txt": "text/plain",
    ".json": "application/json",
    ".png": "image/png",
    ".mp4": "video/mp4",
    ".log": "text/plain",
}


@dataclass(frozen=True)
class PublishedFile:
    """A finished output file and its resource URI."""

    path: Path
    uri: str
    mime_type: str
    description: str

    @property
    def name(self) -> str:
        """The file's name (the last part of its URI)."""
        return self.path.name


class OutputFolder:
    """A private folder for the server's files; ``None`` makes a fresh temp folder (mkdtemp:
    0700, a name nobody can guess or plant beforehand)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.path = (
            make_private_dir(folder) if folder else Path(tempfile.mkdtemp(prefix="loopkit-ui-"))
        )
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._published: dict[str, PublishedFile] = {}
        self.on_publish: Callable[[PublishedFile], None] | None = None

    def new_file(self, kind: str, suffix: str) -> Path:
        """A new, empty 0600 file, e.g. ``tree-003-142501.txt`` (written into afterwards, it
        keeps its mode). Never an existing file or a symlink planted there: a name that is taken
        is skipped."""
        while True:
            stamp = time.strftime("%H%M%S")
            with self._lock:
                number = next(self._counter)
            path = self.path / f"{kind}-{number:03d}-{stamp}{suffix}"
            try:
                return create_private_file(path)
            except FileExistsError:
                continue  # another server writing to the same folder took this name

    def publish(self, path: Path, description: str) -> PublishedFile:
        """Make a finished file of this folder a resource; answers its URI."""
        if path.parent != self.path:
            raise ValueError(f"{path} is not in the output folder {self.path}")
        mime = _MIME.get(path.suffix) or mimetypes.guess_type(path.name)[0]
        published = PublishedFile(
            path=path,
            uri=RESOURCE_PREFIX + path.name,
            mime_type=mime or "application/octet-stream",
            description=description,
        )
        with self._lock:
            known = published.uri in self._published
            self._published[published.uri] = published
        if not known and self.on_publish is not None:
            self.on_publish(published)
        return published

    def published(self) -> list[PublishedFile]:
        """Every published file, oldest first."""
        with self._lock:
            return list(self._published.values())
