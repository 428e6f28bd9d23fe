"""``Notebook``: the notes folder of one repository, read and written through a workspace guard.

The notebook owns a :class:`~loopkit_tools.workspace.WorkspaceGuard` whose only readable and
writable folder is the notes folder, so every path it is given (a topic, a note's path) is checked
there: nothing outside the notes folder is read or written, with the guard's refusals (symlinks,
``..``, absolute paths, ``.git``). Writing a note rewrites the note, its topic file and the router
as one change (:meth:`WorkspaceGuard.write_texts`: all staged, then renamed; a failed rename puts
the others back), under an exclusive lock (``flock`` on the repository's root folder) so two
processes writing notes lose no line.

The default search index lives in a cache folder outside the repository
(``$XDG_CACHE_HOME/loopkit/memory``, else ``~/.cache/loopkit/memory``), keyed by the notes
folder's real path: it is no content of the repository, so git never sees it and the model's file
tools cannot reach it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from loopkit.abstractions import ToolError
from loopkit_tools.fd_paths import PathRefusedError
from loopkit_tools.fd_walk import Stamp
from loopkit_tools.memory.catalog import Router, RouterLine, TopicEntry, TopicFile
from loopkit_tools.memory.models import RESERVED_TOPICS, TOPIC_PATTERN, Note, check_topic
from loopkit_tools.workspace import WorkspaceGuard

ROUTER_NAME = "README.md"


class NotesError(ToolError):
    """Bad input to the memory (a name, a path, a note): the message names it and what is
    expected."""


def default_cache_dir() -> Path:
    """Where the search index goes unless a notebook is given another folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "loopkit" / "memory"


@dataclass(frozen=True)
class WrittenNote:
    """What :meth:`Notebook.write_note` wrote."""

    path: str
    """The note's path, relative to the repository."""
    topic: str
    notes_in_topic: int
    new_topic: bool
    replaced: bool
    """True when a note of the same name was rewritten."""


class Notebook:
    """The notes of the repository at ``root``, in its folder ``folder``.

    Args:
        root: the repository.
        folder: the notes folder, relative to ``root`` (created by the first write).
        cache_dir: where the search index goes by default.
        max_file_bytes: the largest notes file read or written.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        folder: str = "notes",
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        max_file_bytes: int = 1_000_000,
    ) -> None:
        cleaned = folder.strip("/") if isinstance(folder, str) else ""
        if cleaned in ("", "."):
            raise ValueError(
                f"notes folder {folder!r} must be a folder inside the repository, e.g. 'notes'"
            )
        self.guard = WorkspaceGuard(
            root,
            [cleaned],
            [cleaned],
            max_file_bytes=max_file_bytes,
            max_list_entries=1_000_000,
            max_list_scan=1_000_000,
            list_exclude=("*.tmp",),
        )
        self.folder = self.guard.write_folders[0]
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        real = os.path.realpath(self.guard.root / self.folder)
        self.key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        """Names this notes folder's files in the cache folder."""
        self._note_path = re.compile(rf"{re.escape(self.folder)}/({TOPIC_PATTERN})/[^/]+\.md")

    # ------------------------------------------------------------------ paths

    @property
    def router_path(self) -> str:
        """The router's path, relative to the repository."""
        return f"{self.folder}/{ROUTER_NAME}"

    def topic_path(self, topic: str) -> str:
        """A topic file's path, relative to the repository."""
        return f"{self.folder}/{topic}.md"

    def note_path(self, note: Note) -> str:
        """Where ``note`` is written, relative to the repository."""
        return f"{self.folder}/{note.topic}/{note.slug}.md"

    def is_note_path(self, path: str) -> bool:
        """Is ``path`` (relative to the repository) where a note lives?"""
        m = self._note_path.fullmatch(path)
        return m is not None and m.group(1) not in RESERVED_TOPICS

    # ------------------------------------------------------------------ reading

    def read(self, path: str) -> str:
        """Any file of the notes folder (path relative to the repository), through the guard."""
        return self.guard.read_text(path)

    def read_if_exists(self, path: str) -> str | None:
        """The file's text, or None when it does not exist (other refusals are raised)."""
        # The guard says "file '<path>' does not exist" for a missing file or folder on the way;
        # every other refusal (a link out, a hard link, not UTF-8) is raised as it is.
        try:
            return self.guard.read_text(path)
        except PathRefusedError as e:
            if "does not exist" in str(e):
                return None
            raise

    def router(self) -> Router:
        """The router as it is on disk (empty when there is none yet)."""
        return Router.parse(self.read_if_exists(self.router_path) or "")

    def read_topic(self, topic: str) -> str:
        """A topic file's text; an unknown topic is refused with the known ones named."""
        try:
            check_topic(topic)
        except ValueError as e:
            raise NotesError(str(e)) from None
        text = self.read_if_exists(self.topic_path(topic))
        if text is None:
            known = ", ".join(line.topic for line in self.router().lines) or "none yet"
            raise NotesError(f"unknown topic {topic!r}; the router's topics: {known}")
        return text

    def read_note(self, path: str) -> str:
        """A note's text; ``path`` relative to the repository or to the notes folder."""
        if not isinstance(path, str) or not path.strip():
            raise NotesError(
                f"note path {path!r} is empty; give it as search_notes or the topic file shows it"
            )
        if path.startswith("/"):
            raise NotesError(
                f"note path {path!r} is absolute; give it relative to the repository, "
                f"as {self.folder}/<topic>/<name>.md"
            )
        full = path if path.startswith(f"{self.folder}/") else f"{self.folder}/{path}"
        text = self.read_if_exists(full)
        if text is None:
            raise NotesError(f"note {path!r} does not exist (looked for {full!r})")
        return text

    def note_stamps(self) -> dict[str, Stamp]:
        """Every note file (relative path) with its (mtime, size, inode, ctime); cheap, no file
        read."""
        stamps = self.guard.stamps(self.folder)
        return {path: stamp for path, stamp in stamps.items() if self.is_note_path(path)}

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the notebook's exclusive lock (between processes too) inside the block.

        The lock is a ``flock`` on the repository's root folder: it always exists, every
        process writing these notes finds it whatever its cache folder, and nothing is read or
        written through this descriptor.
        """
        fd = os.open(self.guard.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def write_note(
        self, note: Note, *, related: Sequence[str] = (), description: str | None = None
    ) -> WrittenNote:
        """Write ``note`` and update its topic file and the router in one change.

        Args:
            note: the note (its title names the file: the same title rewrites the note).
            related: neighbouring topics the topic file links to (added to those it has).
            description: the topic's one-line description (kept when None).
        """
        for neighbour in related:
            try:
                check_topic(neighbour)
            except ValueError as e:
                raise NotesError(f"related {e}") from None
        if description is not None and (not description.strip() or "\n" in description.strip()):
            raise NotesError(f"topic description {description!r} must be one non-empty line")
        path = self.note_path(note)
        with self.locked():
            router = self.router()
            topic_text = self.read_if_exists(self.topic_path(note.topic))
            topic = TopicFile.parse(note.topic, topic_text or "")
            entry = TopicEntry.of(note)
            replaced = any(e.path == entry.path for e in topic.entries)
            topic.upsert(entry)
            topic.link(list(related))
            if description:
                topic.description = description.strip()
            router.upsert(RouterLine(topic=note.topic, description=topic.description, count=0))
            line = router.get(note.topic)
            assert line is not None
            line.count = len(topic.entries)
            self.guard.write_texts(
                {
                    path: note.to_markdown(),
                    self.topic_path(note.topic): topic.render(),
                    self.router_path: router.render(),
                }
            )
        return WrittenNote(
            path=path,
            topic=note.topic,
            notes_in_topic=len(topic.entries),
            new_topic=topic_text is None,
            replaced=replaced,
        )
