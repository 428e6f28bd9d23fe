"""``NoteIndex``: full-text search of the notes with SQLite FTS5, ranked by BM25.

The index is a SQLite file built from the note files and brought up to date before every search:
the notes folder is listed with each file's (mtime, size, inode, ctime) (one listing through the
guard, no file read), compared with the stamps stored beside the index, and only new or changed
notes are read and indexed again; removed ones are dropped. So a note written by ``write_note``,
by the model's ``write_file``, by a human or by ``git checkout`` is found by the next search.

The index file is a cache, kept outside the repository (by default in the notebook's cache folder,
named by the notes folder's real path): it is derived from the notes, so it must not be committed,
and outside the repository neither git nor the model's file tools see it.

Ranking: BM25 over the columns title, symptom, body and topic, the symptom weighted most (a search
is by symptom), words stemmed (Porter) so "reverts" finds "reverted". The query's words are joined
with OR, so a note matching more of them ranks higher and none has to match all.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loopkit.abstractions import ToolError
from loopkit_tools.fd_walk import Stamp
from loopkit_tools.memory.models import Note, sections
from loopkit_tools.memory.notebook import Notebook, NotesError

_SCHEMA_VERSION = 3  # 3: stamps carry the ctime
# A stamp this close to the listing is not trusted: the file may change again within the same
# tick of the file system's clock and keep it. Ticks are a few ms where file times have
# sub-second digits; a file system that stores whole seconds (FAT: 2 s) needs more.
_RACY_NS = 100_000_000
_RACY_WHOLE_SECONDS_NS = 2_100_000_000
_UNSURE = -1  # the inode stored for a stamp not trusted: it never equals a real one
# bm25() weights, in column order: path, kind (not searched), topic, title, symptom, body
_WEIGHTS = "0.0, 0.0, 1.0, 4.0, 8.0, 1.0"
_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be but by for from has have i in is it its of on or that the then "
        "this to was were when where which while with",
    )
)


@dataclass(frozen=True)
class SearchHit:
    """One note found: where, what, and its BM25 score (lower is better, as SQLite gives it)."""

    path: str
    kind: str
    topic: str
    title: str
    summary: str
    score: float


@dataclass(frozen=True)
class Refresh:
    """What bringing the index up to date did."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    unreadable: tuple[str, ...] = ()
    """Note files that could not be read (indexed as nothing until they change)."""

    @property
    def touched(self) -> int:
        """Notes indexed or dropped."""
        return self.added + self.changed + self.removed


def query_words(text: str) -> list[str]:
    """The searchable words of ``text``: lowercased, without stopwords, each once."""
    words: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if word not in _STOPWORDS and word not in words:
            words.append(word)
    return words


class NoteIndex:
    """The FTS5 index of one :class:`Notebook`.

    Args:
        notebook: the notes it indexes.
        path: the index file; by default ``<notebook.cache_dir>/<notebook.key>.sqlite3``.
    """

    def __init__(self, notebook: Notebook, path: str | os.PathLike[str] | None = None) -> None:
        self.notebook = notebook
        self.path = (
            Path(path) if path is not None else notebook.cache_dir / f"{notebook.key}.sqlite3"
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: tools run in worker threads, maybe two at once (parallel tool
        # calls); _lock makes each refresh or search the connection's only user meanwhile.
        # isolation_level=None: no implicit transactions; _transaction opens each one itself
        self._db = sqlite3.connect(
            self.path, timeout=30, check_same_thread=False, isolation_level=None
        )
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._create()
        # The stamps this object last brought the index to: when the files still have them,
        # a search needs no query of the stamps table (another process's refresh only ever
        # brings the index to the same files).
        self._known: dict[str, tuple[int, int, int, int]] | None = None

    def close(self) -> None:
        """Close the index file."""
        self._db.close()

    def __enter__(self) -> NoteIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != _SCHEMA_VERSION:
            with self._transaction():
                self._db.execute("DROP TABLE IF EXISTS stamps")
                self._db.execute("DROP TABLE IF EXISTS notes")
                # a note's row in the FTS table has the rowid of its stamps row: deleting by
                # path would scan the whole FTS table (path is not indexed there)
                self._db.execute(
                    "CREATE TABLE stamps (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, "
                    "mtime INTEGER, size INTEGER, inode INTEGER, ctime INTEGER)"
                )
                self._db.execute(
                    "CREATE VIRTUAL TABLE notes USING fts5(path UNINDEXED, kind UNINDEXED, "
                    "topic, title, symptom, body, tokenize='porter unicode61')"
                )
                self._db.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")  # one writer at a time, between processes too
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def refresh(self) -> Refresh:
        """Bring the index up to date with the note files; reads only new or changed notes."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> Refresh:
        listed_at = time.time_ns()
        current = self.notebook.note_stamps()
        if current == self._known:
            return Refresh()
        unreadable: list[str] = []
        with self._transaction():  # read the stored stamps inside it: another process may write
            stored = {
                path: (id_, (mtime, size, inode, ctime))
                for id_, path, mtime, size, inode, ctime in self._db.execute(
                    "SELECT id, path, mtime, size, inode, ctime FROM stamps"
                )
            }
            changed = [p for p, stamp in current.items() if stored.get(p, (0, None))[1] != stamp]
            removed = [p for p in stored if p not in current]
            for path in removed:
                self._db.execute("DELETE FROM notes WHERE rowid = ?", (stored[path][0],))
                self._db.execute("DELETE FROM stamps WHERE id = ?", (stored[path][0],))
            for path in changed:
                if _is_racy(current[path], listed_at):
                    mtime, size, _inode, ctime = current[path]
                    current[path] = (mtime, size, _UNSURE, ctime)
                if path in stored:
                    row = stored[path][0]
                    self._db.execute("DELETE FROM notes WHERE rowid = ?", (row,))
                    self._db.execute(
                        "UPDATE stamps SET mtime = ?, size = ?, inode = ?, ctime = ? WHERE id = ?",
                        (*current[path], row),
                    )
                else:
                    cursor = self._db.execute(
                        "INSERT INTO stamps (path, mtime, size, inode, ctime) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (path, *current[path]),
                    )
                    row = cursor.lastrowid
                try:
                    text = self.notebook.read(path)
                except ToolError:  # refused by the guard (not UTF-8, swapped for a link, ...)
                    unreadable.append(path)
                else:
                    self._db.execute(
                        "INSERT INTO notes (rowid, path, kind, topic, title, symptom, body) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (row, path, *_columns(text)),
                    )
        self._known = current
        added = sum(1 for p in changed if p not in stored)
        return Refresh(
            added=added,
            changed=len(changed) - added,
            removed=len(removed),
            unreadable=tuple(unreadable),
        )

    def search(self, symptom: str, limit: int = 5) -> list[SearchHit]:
        """The notes that best match ``symptom``, best first (after a :meth:`refresh`)."""
        if not isinstance(symptom, str) or not symptom.strip():
            raise NotesError(
                f"symptom {symptom!r} is empty; describe what you saw, e.g. 'value reverts "
                "after save'"
            )
        if not isinstance(limit, int) or not 1 <= limit <= 50:
            raise NotesError(f"limit {limit!r} must be a whole number from 1 to 50")
        words = query_words(symptom)
        if not words:
            raise NotesError(
                f"symptom {symptom!r} has no searchable word (only stopwords or punctuation)"
            )
        match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        with self._lock:
            self._refresh()
            rows = self._db.execute(
                f"SELECT path, kind, topic, title, symptom, bm25(notes, {_WEIGHTS}) AS score "
                "FROM notes WHERE notes MATCH ? ORDER BY score LIMIT ?",
                (match, limit),
            ).fetchall()
        return [
            SearchHit(path=path, kind=kind, topic=topic, title=title, summary=summary, score=score)
            for path, kind, topic, title, summary, score in rows
        ]


def _is_racy(stamp: Stamp, listed_at: int) -> bool:
    """Whether a file listed with ``stamp`` at ``listed_at`` (ns since the epoch) may change
    again without changing its stamp: its last change (mtime or ctime, whichever is later) lies
    within one tick of the file system's clock before the listing, so a rewrite to the same
    size in that tick keeps both times (git's "racily clean" entries, handled the same way: such
    a stamp is stored as unsure and the file is read again at the next refresh).

    Once a stamp is older than that, any change moves the ctime (a write, or an mtime put back
    with ``utime``): comparing the ctime finds it.
    """
    mtime, _size, _inode, ctime = stamp
    whole_seconds = mtime % 1_000_000_000 == 0 and ctime % 1_000_000_000 == 0
    margin = _RACY_WHOLE_SECONDS_NS if whole_seconds else _RACY_NS
    return max(mtime, ctime) >= listed_at - margin


def _columns(text: str) -> tuple[str, str, str, str, str]:
    """kind, topic, title, summary (the symptom, or what stands for it) and body of a note file;
    a note that does not parse is indexed by its raw text."""
    try:
        note = Note.from_markdown(text)
    except ValueError:
        parts = sections(text)
        title = next((line[2:] for line in text.splitlines() if line.startswith("# ")), "")
        return "", "", title, parts.get("Symptom", ""), text
    summary = note.symptom or note.summary()
    rest = [note.cause, note.fix, *note.steps]
    return note.kind, note.topic, note.title, summary, "\n".join(filter(None, rest))
