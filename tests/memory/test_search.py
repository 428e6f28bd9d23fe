"""Search: FTS5 ranks the right note first in a generated corpus; the index follows the files."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from loopkit_tools.memory import MemoryTools, Note, Notebook, NoteIndex, NotesError
from loopkit_tools.memory import search as search_module
from tests.memory.conftest import git
from tests.memory.corpus import corpus

CORPUS_SIZE = 320


def _write_files(repo: Path, notes: list[Note], *, age_s: float = 60) -> None:
    """The note files as a human or ``git checkout`` would leave them (no router update),
    ``age_s`` seconds old (a file changed just before the index looked is read again)."""
    when = time.time() - age_s
    for note in notes:
        path = repo / "notes" / note.topic / f"{note.slug}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note.to_markdown(), encoding="utf-8")
        os.utime(path, (when, when))


class ListingClock:
    """The clock the index takes a listing's time from, ``offset_s`` ahead of the real one: a
    listing that comes long after the files were written, as under load (``utime`` cannot age
    a file: it moves the ctime the index also compares)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, offset_s: float = 0) -> None:
        self.offset_s = offset_s
        real = time.time_ns
        clock = SimpleNamespace(time_ns=lambda: real() + int(self.offset_s * 1e9))
        monkeypatch.setattr(search_module, "time", clock)


def test_fts5_is_available() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='porter unicode61')")


def test_the_right_note_ranks_first_for_each_symptom_query(repo: Path, cache: Path) -> None:
    items = corpus(CORPUS_SIZE)
    _write_files(repo, [item.note for item in items])
    with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
        assert index.refresh().added == CORPUS_SIZE
        misses = []
        for item in items:
            hits = index.search(item.query, limit=5)
            # distractors: other notes of the same control or behaviour match part of the query
            assert len(hits) == 5, item.query
            expected = f"notes/{item.note.topic}/{item.note.slug}.md"
            if hits[0].path != expected:
                misses.append((item.query, expected, hits[0].path))
    assert misses == []


def test_a_grep_for_the_whole_query_finds_nothing(repo: Path) -> None:
    # What the reference's grep would do with the same queries: the words are inflected
    # differently from the notes, so a literal search of the phrase finds no note at all.
    items = corpus(60)
    _write_files(repo, [item.note for item in items])
    texts = [p.read_text().casefold() for p in (repo / "notes").rglob("*.md")]
    assert sum(any(item.query in text for text in texts) for item in items) == 0


def test_index_is_rebuilt_when_notes_change(
    repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = corpus(40)
    _write_files(repo, [item.note for item in items])
    clock = ListingClock(monkeypatch, offset_s=10)  # listed well after they were written
    notebook = Notebook(repo, cache_dir=cache)
    with NoteIndex(notebook) as index:
        assert index.refresh().added == 40
        assert index.refresh().touched == 0  # nothing changed: nothing read
        first = repo / "notes" / items[0].note.topic / f"{items[0].note.slug}.md"
        assert index.search("marmalade jar", 5) == []

        # edited in place by a human: same name, same inode, new content
        text = first.read_text().replace("## Cause", "## Cause\nA marmalade jar on the keyboard.")
        with first.open("r+", encoding="utf-8") as f:
            f.write(text)
        clock.offset_s = 0  # listed just after the edit
        refresh = index.refresh()
        assert (refresh.added, refresh.changed, refresh.removed) == (0, 1, 0)
        # changed just now: read again by the next refresh too, until it is older than a tick
        assert index.refresh().changed == 1
        clock.offset_s = 1  # a second later, older than a tick: read once more, then trusted
        assert index.refresh().changed == 1
        assert index.refresh().touched == 0
        assert [hit.path for hit in index.search("marmalade jar", 5)] == [
            str(first.relative_to(repo))
        ]

        # removed (as git checkout of an older commit would)
        first.unlink()
        assert index.search("marmalade jar", 5) == []

        # a new file the model wrote with write_file
        new = Note(
            kind="verdict", topic="saving", title="Autosave", verdict="Autosave loses zebra rows."
        )
        _write_files(repo, [new])
        assert [hit.path for hit in index.search("zebra", 5)] == ["notes/saving/autosave.md"]


def test_the_index_lives_outside_the_repository(repo: Path, cache: Path) -> None:
    with MemoryTools(repo, cache_dir=cache) as memory:
        memory.write_note("verdict", "saving", "Autosave", verdict="Autosave works.")
        assert "1 note matches 'autosave'" in memory.search_notes("autosave")
        assert memory.index.path.parent == cache
        assert memory.index.path.exists()
    status = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(status) == [
        "?? notes/README.md",
        "?? notes/saving.md",
        "?? notes/saving/autosave.md",
    ]


def test_an_index_from_another_schema_is_rebuilt(repo: Path, cache: Path) -> None:
    _write_files(repo, [item.note for item in corpus(5)])
    notebook = Notebook(repo, cache_dir=cache)
    with NoteIndex(notebook) as index:
        index.refresh()
        path = index.path
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    with NoteIndex(notebook) as index:
        assert index.refresh().added == 5


def test_an_unparsable_note_is_still_found_by_its_text(repo: Path, cache: Path) -> None:
    folder = repo / "notes" / "misc"
    folder.mkdir(parents=True)
    (folder / "scribble.md").write_text("# Scribble\n\nThe quokka dialog hangs.\n")
    with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
        hits = index.search("quokka hangs", 5)
    assert [(h.path, h.kind, h.title) for h in hits] == [("notes/misc/scribble.md", "", "Scribble")]


@pytest.mark.parametrize(
    ("symptom", "message"),
    [
        ("", "symptom '' is empty"),
        ("   ", "symptom '   ' is empty"),
        ("the and of", "has no searchable word"),
    ],
)
def test_a_search_without_words_is_refused(memory: MemoryTools, symptom: str, message: str) -> None:
    with pytest.raises(NotesError, match=message):
        memory.search_notes(symptom)


def test_a_limit_out_of_range_is_refused(memory: MemoryTools) -> None:
    with pytest.raises(NotesError, match="limit 0 must be a whole number from 1 to 50"):
        memory.search_notes("value reverts", limit=0)


def test_a_note_behind_a_hard_link_is_not_indexed(repo: Path, cache: Path) -> None:
    _write_files(repo, [item.note for item in corpus(2)])
    outside = repo.parent / "secret.md"
    outside.write_text("---\nkind: verdict\ntopic: x\n---\n# S\n\n## Verdict\nplatypus\n")
    (repo / "notes" / "x").mkdir()
    os.link(outside, repo / "notes" / "x" / "secret.md")
    with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
        assert index.search("platypus", 5) == []


def test_a_change_within_the_same_clock_tick_is_not_missed(repo: Path, cache: Path) -> None:
    # File times come from a coarse clock: a note rewritten within one tick, to the same size,
    # keeps its stamp. Here the rewrite sets the very same mtime to make that certain.
    path = repo / "notes" / "t" / "n.md"
    path.parent.mkdir(parents=True)
    note = Note(kind="verdict", topic="t", title="N", verdict="walrus")
    path.write_text(note.to_markdown())
    with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
        assert len(index.search("walrus", 5)) == 1
        stamp = path.stat()
        path.write_text(note.model_copy(update={"verdict": "narwal"}).to_markdown())
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert path.stat().st_size == stamp.st_size
        assert len(index.search("narwal", 5)) == 1
        assert index.search("walrus", 5) == []


def _wait_for_the_file_clock_to_pass(ns: int, scratch: Path) -> None:
    """Until the file system's clock (as a new file's ctime shows it) is past ``ns``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        scratch.write_bytes(b"")
        if scratch.stat().st_ctime_ns > ns:
            return
        time.sleep(0.001)
    raise AssertionError("the file system's clock did not move in 10 s")


def test_a_rewrite_that_puts_the_mtime_back_is_seen_after_a_late_listing(
    repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under load the first listing comes long after the write, so the note's stamp is trusted.
    # A later rewrite to the same size that puts the old mtime back (cp -p, touch -r, rsync -t,
    # tar) changes neither mtime, size nor inode: only the ctime tells.
    path = repo / "notes" / "t" / "n.md"
    path.parent.mkdir(parents=True)
    note = Note(kind="verdict", topic="t", title="N", verdict="walrus")
    path.write_text(note.to_markdown())
    ListingClock(monkeypatch, offset_s=10)
    with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
        assert len(index.search("walrus", 5)) == 1
        stamp = path.stat()
        _wait_for_the_file_clock_to_pass(stamp.st_ctime_ns, repo.parent / "tick")
        path.write_text(note.model_copy(update={"verdict": "narwal"}).to_markdown())
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_ino) == (stamp.st_size, stamp.st_ino)
        assert len(index.search("narwal", 5)) == 1
        assert index.search("walrus", 5) == []


def test_a_stamp_in_whole_seconds_stays_unsure_for_two_seconds() -> None:
    # A file system that keeps whole seconds (FAT: two) lets a rewrite keep the time for that
    # long; a stamp with sub-second digits proves a fine clock.
    listed = 1_700_000_010_500_000_000
    second = 1_000_000_000
    whole = (listed - 1_500_000_000, 10, 7, listed - 1_500_000_000)
    assert search_module._is_racy(whole, listed)
    assert not search_module._is_racy((whole[0] - second, 10, 7, whole[3] - second), listed)
    fine = (whole[0] + 1, 10, 7, whole[3] + 1)
    assert not search_module._is_racy(fine, listed)
    assert search_module._is_racy((fine[0], 10, 7, listed - 50_000_000), listed)  # ctime counts


async def test_parallel_tool_calls_share_one_index(memory: MemoryTools) -> None:
    # The loop may run one round's calls in parallel: sync tools then run in worker threads
    # at once, on one index connection.
    import asyncio

    for i in range(20):
        memory.write_note("verdict", f"t{i % 4}", f"Feature {i}", verdict=f"gecko {i} works")
    tools = {t.name: t for t in memory.tools}
    calls = [
        tools["search_notes"].invoke({"symptom": "gecko works", "limit": 20}) for _ in range(12)
    ]
    writes = [
        tools["write_note"].invoke(
            {"kind": "verdict", "topic": "t9", "title": f"Late {i}", "verdict": "gecko late"}
        )
        for i in range(4)
    ]
    results = await asyncio.gather(*calls, *writes)
    assert all(str(r).startswith("2") for r in results[:12])  # "20 notes match" or more
    assert "24 notes match" in memory.search_notes("gecko", limit=50)


_SEARCHER = """
import sys
from loopkit_tools.memory import Notebook, NoteIndex
repo, cache = sys.argv[1:]
with NoteIndex(Notebook(repo, cache_dir=cache)) as index:
    for _ in range(30):
        hits = index.search("ocelot", 50)
        assert all(hit.title.startswith("Ocelot") for hit in hits), hits
    print(len(index.search("ocelot", 50)))
"""


def test_processes_searching_one_index_while_notes_are_written(repo: Path, cache: Path) -> None:
    import subprocess
    import sys

    book = Notebook(repo, cache_dir=cache)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    searchers = [
        subprocess.Popen(
            [sys.executable, "-c", _SEARCHER, str(repo), str(cache)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for i in range(30):
        book.write_note(Note(kind="verdict", topic="zoo", title=f"Ocelot {i}", verdict="ocelot"))
    outputs = [s.communicate(timeout=120)[0] for s in searchers]
    assert [s.returncode for s in searchers] == [0, 0, 0]
    assert all(0 <= int(out) <= 30 for out in outputs)  # each saw some state, none failed
    with NoteIndex(book) as index:
        assert len(index.search("ocelot", 50)) == 30


def test_fts_query_syntax_in_a_symptom_is_taken_as_words(memory: MemoryTools) -> None:
    memory.write_note("verdict", "syntax", "Near miss", verdict="NEAR the column: crash")
    answer = memory.search_notes('crash: "NOT" NEAR(x, y) * ^column OR -title:')
    assert answer.splitlines()[1].startswith("1. notes/syntax/near-miss.md")
