"""edit_file: one exact, unique piece of a file replaced, through the same guard as write_file."""

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
