"""Memory search at 1,000 notes: loopkit's FTS5 index beside a grep-style scan of the same files.

The corpus is tests/memory/corpus.py at 1,000 notes (40 controls × 25 behaviours, each note's
symptom naming one pair; every query names its pair in other inflections). Rows:

- ``NoteIndex.search``: what the ``search_notes`` tool costs, including the freshness check
  before every search (one listing of the notes folder with file stamps through the guard,
  compared with the stamps in the index) and the BM25 query, limit 5;
- ``  of which: refresh``: the freshness check alone, nothing changed;
- ``grep -rilE``: the reference's way, a ``grep`` subprocess over the notes folder for any query
  word (it lists files, unranked: the agent then has to read them);
- ``Python scan``: every note file read and each counted by the query words it contains, ranked
  by that count (a grep with ranking, in process).

Each query runs once to warm up, then ``REPEATS`` passes over ``QUERIES`` queries, interleaved;
the table shows the median per search and the ratio to loopkit. Checked in every run: loopkit's
first hit is the intended note for every query, grep's list contains it. Speed is printed,
never asserted. Also printed: building the index from scratch (the first search on a checkout).
Run: ``.venv/bin/python -m pytest bench/test_memory_search.py -s -q``.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.memory.corpus import corpus

from loopkit_tools.memory import Notebook, NoteIndex
from loopkit_tools.memory.search import query_words

NOTES = 1000
QUERIES = 100
REPEATS = 5


def _write(repo: Path) -> list[tuple[str, str]]:
    """The corpus as files; (query, expected path) for every tenth note."""
    cases = []
    for i, item in enumerate(corpus(NOTES)):
        note = item.note
        rel = f"notes/{note.topic}/{note.slug}.md"
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note.to_markdown(), encoding="utf-8")
        os.utime(path, (time.time() - 60, time.time() - 60))  # as an earlier checkout left it
        if i % (NOTES // QUERIES) == 0:
            cases.append((item.query, rel))
    return cases


def _grep(repo: Path) -> Callable[[str], list[str]]:
    def search(query: str) -> list[str]:
        pattern = "|".join(re.escape(word) for word in query_words(query))
        out = subprocess.run(
            ["grep", "-rilE", pattern, "notes"], cwd=repo, capture_output=True, text=True
        ).stdout
        return out.splitlines()

    return search


def _scan(repo: Path) -> Callable[[str], list[str]]:
    def search(query: str) -> list[str]:
        words = query_words(query)
        counted = []
        for path in (repo / "notes").rglob("*.md"):
            text = path.read_text(encoding="utf-8").casefold()
            score = sum(word in text for word in words)
            if score:
                counted.append((-score, path.relative_to(repo).as_posix()))
        return [p for _score, p in sorted(counted)[:5]]

    return search


def test_memory_search_at_1000_notes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    cases = _write(repo)
    notebook = Notebook(repo, cache_dir=tmp_path / "cache")
    start = time.perf_counter()
    index = NoteIndex(notebook)
    built = index.refresh()
    build_s = time.perf_counter() - start
    assert built.added == NOTES

    def loopkit(query: str) -> list[str]:
        return [hit.path for hit in index.search(query, 5)]

    def refresh(query: str) -> list[str]:
        assert index.refresh().touched == 0
        return []

    rows: dict[str, Callable[[str], list[str]]] = {
        "NoteIndex.search (with refresh)": loopkit,
        "  of which: refresh": refresh,
        "grep -rilE (unranked)": _grep(repo),
        "Python scan (ranked by words)": _scan(repo),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    for rep in range(REPEATS + 1):
        for query, expected in cases:
            for name, search in rows.items():
                t0 = time.perf_counter()
                found = search(query)
                elapsed = time.perf_counter() - t0
                if name.startswith("NoteIndex"):
                    assert found[0] == expected, query
                elif name.startswith("grep"):
                    assert expected in found, query
                if rep > 0:
                    times[name].append(elapsed)
    index.close()

    base = statistics.median(times["NoteIndex.search (with refresh)"])
    print(f"\nmemory search, {NOTES} notes, {QUERIES} queries × {REPEATS} (median per search)")
    print(f"{'':34} {'median ms':>10} {'p95 ms':>8} {'× loopkit':>10}")
    for name, values in times.items():
        median = statistics.median(values)
        p95 = sorted(values)[int(len(values) * 0.95)]
        print(f"{name:34} {median * 1000:10.2f} {p95 * 1000:8.2f} {median / base:10.2f}")
    print(f"index built from scratch: {build_s * 1000:.0f} ms for {NOTES} notes")
