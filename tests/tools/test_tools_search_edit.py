"""search_files and edit_file: finding lines, and one exact, unique piece of a file replaced
through the same guard as write_file."""

from __future__ import annotations

import pytest
from tools_helpers import Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools


async def test_edit_replaces_the_one_occurrence_and_says_where(
    tools: LocalTools, workspace: Workspace
) -> None:
    edit = tool_by_name(tools, "edit_file")
    answer = await edit.invoke(
        {
            "path": "invoice_app/main.py",
            "old": "    return a + b\n",
            "new": "    # rounded\n    return round(a + b, 2)\n",
        }
    )
    assert answer.startswith("Edited invoice_app/main.py: lines 2-4 now hold the new text")
    assert (workspace.repo / "invoice_app" / "main.py").read_text() == (
        "def total(a, b):\n    # rounded\n    return round(a + b, 2)\n"
    )


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ("return a - b", "old occurs 0 times in invoice_app/main.py; it must occur exactly once"),
        ("a", "occurs 3 times in invoice_app/main.py; it must occur exactly once: include more"),
        ("", "old is empty"),
    ],
)
async def test_an_edit_that_is_not_unique_changes_nothing(
    tools: LocalTools, workspace: Workspace, old: str, message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        await tool_by_name(tools, "edit_file").invoke(
            {"path": "invoice_app/main.py", "old": old, "new": "x"}
        )
    assert (workspace.repo / "invoice_app" / "main.py").read_text() == (
        "def total(a, b):\n    return a + b\n"
    )


async def test_edit_goes_through_the_guard(tools: LocalTools, workspace: Workspace) -> None:
    edit = tool_by_name(tools, "edit_file")
    with pytest.raises(ToolError):  # readable but not writable
        await edit.invoke({"path": "docs/guide.md", "old": "Guide", "new": "Gide"})
    assert (workspace.repo / "docs" / "guide.md").read_text() == "# Guide\nUse two decimals.\n"
    with pytest.raises(ToolError):  # a link out of the workspace
        await edit.invoke({"path": "invoice_app/link_file", "old": "TOP", "new": "x"})
    assert workspace.marker in (workspace.outside / "secret.txt").read_text()
    with pytest.raises(ToolError, match="larger than the file size limit"):
        await edit.invoke({"path": "invoice_app/huge.txt", "old": "abcdefghij" * 2, "new": "x"})


async def test_search_names_path_and_line_and_never_leaves_the_workspace(
    tools: LocalTools, workspace: Workspace
) -> None:
    (workspace.repo / "invoice_app" / "sub" / "y.py").write_text("a = 1\n\ndef total():\n")
    search = tool_by_name(tools, "search_files")
    answer = await search.invoke({"text": "def total"})
    lines = answer.splitlines()
    assert "invoice_app/main.py:1: def total(a, b):" in lines
    assert "invoice_app/sub/y.py:3: def total():" in lines
    assert "binary or not UTF-8" in lines[-1]  # blob.bin was skipped, and said so
    assert await search.invoke({"text": "def total", "folder": "invoice_app/sub"}) == (
        "invoice_app/sub/y.py:3: def total():"
    )
    # the secret marker is in files outside the readable folders and behind links out
    assert workspace.marker not in await search.invoke({"text": "TOPSECRET"})
    assert (await search.invoke({"text": "no such text"})).startswith(
        "(no line contains 'no such text' under the readable folders)"
    )
    with pytest.raises(ToolError, match="text: expected the text of one line"):
        await search.invoke({"text": "a\nb"})


async def test_search_caps_its_answer(workspace: Workspace) -> None:
    (workspace.repo / "invoice_app" / "many.py").write_text("x = 1\n" * 30)
    tools = LocalTools(workspace.config(max_output_lines=10))
    answer = await tool_by_name(tools, "search_files").invoke(
        {"text": "x = 1", "folder": "invoice_app"}
    )
    lines = answer.splitlines()
    assert lines[:10] == [f"invoice_app/many.py:{n}: x = 1" for n in range(1, 11)]
    assert lines[10] == "[20 more matching lines not shown; search a folder or a longer text]"
