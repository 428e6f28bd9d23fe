"""Notes: the Markdown forms, router and topic written with the note, refusals, racing writers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.abstractions import ToolError
from loopkit_tools import GitCommitter
from loopkit_tools.memory import MemoryTools, Note, Notebook, Router, TopicFile
from tests.memory.conftest import git

FAILURE = {
    "kind": "failure",
    "topic": "invoice-editing",
    "title": "Amount reverts after save",
    "symptom": "The amount field shows the old value after Save.",
    "cause": "The field commits its value on focus loss only.",
    "fix": "Press Tab before Save.",
}


@pytest.mark.parametrize(
    "fields",
    [
        FAILURE,
        {"kind": "workflow", "topic": "saving", "title": "Save", "steps": ["Open", "Save"]},
        {"kind": "verdict", "topic": "export", "title": "PDF export", "verdict": "Usable."},
    ],
)
def test_a_note_reads_back_as_written(fields: dict[str, object]) -> None:
    note = Note.model_validate(fields)
    assert Note.from_markdown(note.to_markdown()) == note


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "failure", "topic": "a", "title": "t", "symptom": "s"}, "needs cause, fix"),
        ({"kind": "workflow", "topic": "a", "title": "t"}, "needs steps"),
        ({"kind": "verdict", "topic": "a", "title": "t", "verdict": "v", "fix": "f"}, "no fix"),
        ({"kind": "verdict", "topic": "A b", "title": "t", "verdict": "v"}, "'A b' is not a"),
        ({"kind": "verdict", "topic": "rules", "title": "t", "verdict": "v"}, "reserved"),
        ({"kind": "verdict", "topic": "a", "title": "t\nx", "verdict": "v"}, "one line"),
    ],
)
def test_a_note_that_does_not_fit_its_kind_is_refused(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Note.model_validate(fields)


def _consistent(repo: Path) -> None:
    """Router counts = topic lines = note files; every topic line names an existing note."""
    notes = repo / "notes"
    router = Router.parse((notes / "README.md").read_text())
    on_disk = {
        p.relative_to(notes).as_posix()
        for p in notes.glob("*/*.md")
        if p.parent.name not in ("glossary",)
    }
    listed = set()
    for line in router.lines:
        topic = TopicFile.parse(line.topic, (notes / f"{line.topic}.md").read_text())
        assert line.count == len(topic.entries), line.topic
        listed |= {entry.path for entry in topic.entries}
    assert listed == on_disk


def test_write_note_updates_router_and_topic(memory: MemoryTools, repo: Path) -> None:
    answer = memory.write_note(**FAILURE, related=["saving"])  # type: ignore[arg-type]
    assert answer == (
        "Wrote notes/invoice-editing/amount-reverts-after-save.md; router and new topic "
        "'invoice-editing' updated (1 note in it)."
    )
    memory.write_note(
        "workflow", "invoice-editing", "Edit an amount", steps=["Open", "Type", "Tab", "Save"]
    )
    changed = {**FAILURE, "fix": "Click another field before Save."}
    assert memory.write_note(**changed).startswith("Rewrote")  # type: ignore[arg-type]
    router = memory.read_router()
    assert (
        "- [invoice-editing](invoice-editing.md) — notes about invoice editing (2 notes)" in router
    )
    topic = memory.read_topic("invoice-editing")
    assert "See also: [saving](saving.md)" in topic
    assert "- workflow: [Edit an amount](invoice-editing/edit-an-amount.md) — Open → Type" in topic
    note = memory.read_note("notes/invoice-editing/amount-reverts-after-save.md")
    assert "Click another field before Save." in note
    assert memory.read_note("invoice-editing/amount-reverts-after-save.md") == note
    _consistent(repo)


def test_a_topic_description_given_later_replaces_the_default(memory: MemoryTools) -> None:
    memory.write_note("verdict", "export", "PDF", verdict="Fine.")
    memory.write_note("verdict", "export", "CSV", verdict="Fine.", topic_description="Exports")
    assert "- [export](export.md) — Exports (2 notes)" in memory.read_router()
    assert memory.read_topic("export").splitlines()[2] == "Exports"


def test_read_router_without_notes_says_so(memory: MemoryTools) -> None:
    assert memory.read_router().startswith("There are no notes yet (notes/README.md")


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("read_topic", {"topic": "nope"}, "unknown topic 'nope'; the router's topics: saving"),
        ("read_topic", {"topic": "../etc"}, "topic '../etc' is not a topic name"),
        ("write_note", {"kind": "bug", "topic": "a", "title": "t"}, "kind: Input should be"),
        ("write_note", {"kind": "verdict", "topic": "a", "title": "t"}, "needs verdict"),
        (
            "write_note",
            {"kind": "verdict", "topic": "a", "title": "t", "verdict": "v", "related": ["B!"]},
            "related topic 'B!' is not a topic name",
        ),
        ("search_notes", {"symptom": ""}, "symptom '' is empty"),
        ("read_note", {"path": "../app.py"}, "is outside the folders you may read: notes/"),
        ("read_note", {"path": "/etc/passwd"}, "note path '/etc/passwd' is absolute"),
        ("read_note", {"path": "saving/none.md"}, "note 'saving/none.md' does not exist"),
        ("read_note", {"path": "notes/.git/config"}, "the .git folder is never readable"),
        ("read_rules", {"scope": "Test!"}, "scope 'Test!' is not a scope name"),
        ("check_terms", {"text": "x", "language": "klingon"}, "'klingon' is not a language"),
    ],
)
async def test_bad_input_is_refused_naming_it(
    memory: MemoryTools, tool: str, arguments: dict[str, object], message: str
) -> None:
    memory.write_note("verdict", "saving", "Autosave", verdict="Works.")
    tools = {t.name: t for t in memory.tools}
    with pytest.raises(ToolError) as caught:
        await tools[tool].invoke(arguments)
    assert message in str(caught.value)


async def test_a_symlink_out_of_the_notes_folder_is_refused(
    memory: MemoryTools, repo: Path
) -> None:
    (repo / "notes").mkdir()
    (repo / "notes" / "leak").symlink_to(repo.parent)
    tools = {t.name: t for t in memory.tools}
    with pytest.raises(ToolError, match="outside the folders you may read: notes/"):
        await tools["read_note"].invoke({"path": "leak/repo/app.py"})


def test_the_notes_are_committed_with_the_run(memory: MemoryTools, repo: Path) -> None:
    memory.write_note(**FAILURE)  # type: ignore[arg-type]
    memory.add_rule("remember: read back every value", "test")
    committer = GitCommitter(repo, ["notes"], r"^card: .+")
    import asyncio

    result = asyncio.run(committer.commit("card: test the amount field\n\nNotes written."))
    assert "notes/invoice-editing/amount-reverts-after-save.md" in str(result)
    assert git(repo, "status", "--porcelain") == ""


_WRITER = """
import sys
from loopkit_tools.memory import Note, Notebook
repo, cache, who = sys.argv[1:]
book = Notebook(repo, cache_dir=cache)
for i in range(15):
    book.write_note(Note(kind="verdict", topic="race", title=f"{who} {i}", verdict="ok"))
"""


def test_racing_processes_lose_no_note(repo: Path, cache: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(repo), str(cache), who], env=env)
        for who in ("alpha", "beta", "gamma")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    topic = TopicFile.parse("race", (repo / "notes" / "race.md").read_text())
    assert len(topic.entries) == 45
    _consistent(repo)
    assert Notebook(repo, cache_dir=cache).router().lines[0].count == 45


def test_a_topic_folder_linked_out_of_the_notes_is_refused_and_nothing_written(
    memory: MemoryTools, repo: Path
) -> None:
    outside = repo.parent / "outside"
    outside.mkdir()
    (repo / "notes").mkdir()
    (repo / "notes" / "evil").symlink_to(outside)
    with pytest.raises(ToolError, match="is outside the folders you may write: notes/"):
        memory.write_note("verdict", "evil", "Planted", verdict="x")
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (repo / "notes").iterdir()) == ["evil"]  # no router, no topic
