"""The memory tools through loopkit's function-invocation loop: a second run finds the first's note.

The model is the scripted model (strict: each tool result must match the script's ``expect``), so
the real loop, the real tool schemas and argument validation, and the real files run; two runs on
the same repository with separate indexes, the notes committed in between as a run commits them.
"""

from __future__ import annotations

from pathlib import Path

from loopkit import FunctionInvokingChatClient
from loopkit_tools import GitCommitter, MemoryTools
from tests.core.helpers import call, opts, script, user
from tests.memory.conftest import git

NOTE = "notes/invoice-editing/amount-reverts-after-save.md"


async def test_a_second_run_finds_and_reads_the_note_of_the_first(
    repo: Path, tmp_path: Path
) -> None:
    first = script(
        {
            "calls": [
                call("read_router", expect={"contains": ["no notes yet"]}),
                call("read_rules", expect={"contains": ["1. [test] read back"]}, scope="test"),
            ]
        },
        {
            "calls": [
                call(
                    "search_notes",
                    expect={"contains": ["No note matches"]},
                    symptom="amount reverted after saving",
                )
            ]
        },
        {
            "calls": [
                call(
                    "write_note",
                    expect={"contains": [f"Wrote {NOTE}; router and new topic"]},
                    kind="failure",
                    topic="invoice-editing",
                    title="Amount reverts after save",
                    symptom="The amount field shows the old value after Save.",
                    cause="The field commits its value on focus loss only.",
                    fix="Press Tab before Save.",
                )
            ]
        },
        {"text": "Rules applied: 1.\nRESULT: passed"},
    )
    with MemoryTools(repo, cache_dir=tmp_path / "cache-1") as memory:
        memory.add_rule("remember: read back every value", "test")
        response = await FunctionInvokingChatClient(first).get_response(user(), opts(*memory.tools))
    assert first.finished
    assert response.text.endswith("RESULT: passed")
    await GitCommitter(repo, ["notes"], r"^test: .+").commit("test: amount field\n\nA note.")
    assert NOTE in git(repo, "show", "--name-only", "--format=", "HEAD")

    second = script(
        {"calls": [call("read_router", expect={"contains": ["[invoice-editing]", "(1 note)"]})]},
        {
            "calls": [
                call(
                    "search_notes",
                    expect={"contains": [f"1. {NOTE} [failure, invoice-editing]"]},
                    symptom="the amount field reverted after saving",
                )
            ]
        },
        {"calls": [call("read_note", expect={"contains": ["Press Tab before Save."]}, path=NOTE)]},
        {"calls": [call("read_topic", expect={"error": True}, topic="no-such-topic")]},
        {"text": f"Applied note {NOTE}.\nRESULT: passed"},
    )
    with MemoryTools(repo, cache_dir=tmp_path / "cache-2") as memory:  # a fresh index
        response = await FunctionInvokingChatClient(second).get_response(
            user(), opts(*memory.tools)
        )
    assert second.finished
    assert NOTE in response.text
