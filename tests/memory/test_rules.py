"""Feedback rules: numbered, scoped, added from "remember" messages, numbers never change."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit_tools.memory import MemoryTools, NotesError, parse_rules, rule_from_message


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        ("remember: read back every value", "read back every value"),
        ("Remember that dates are YYYY-MM-DD", "dates are YYYY-MM-DD"),
        ("REMEMBER,  close dialogs\n with Escape", "close dialogs with Escape"),
        ("please remember this", None),
        ("rememberable things", None),
        ("remember", None),
    ],
)
def test_rule_from_message(message: str, rule: str | None) -> None:
    assert rule_from_message(message) == rule


def test_rules_are_numbered_scoped_and_read_by_scope(memory: MemoryTools, repo: Path) -> None:
    assert memory.add_rule("remember: read back every value", "test") == (
        "Added rule 1 [test]: read back every value"
    )
    memory.add_rule("Name menu paths with ' > '", "documentation")
    memory.add_rule("Dates are YYYY-MM-DD", "all")
    assert memory.read_rules("test").splitlines()[1:] == [
        "1. [test] read back every value",
        "3. [all] Dates are YYYY-MM-DD",
    ]
    assert "2. [documentation]" in memory.read_rules("documentation")
    assert (
        memory.read_rules("concept")
        == "Rules in scope 'concept' (cite the numbers you applied in your report):\n3. [all] Dates are YYYY-MM-DD"
    )
    assert memory.add_rule("Read back every value", "test") == (
        "Rule 1 [test] already says this; nothing added."
    )


def test_numbers_survive_hand_edits_and_retired_rules(memory: MemoryTools, repo: Path) -> None:
    for text in ("one", "two", "three"):
        memory.add_rule(text, "test")
    path = repo / "notes" / "rules.md"
    # a human retires rule 2 and reorders the file; numbers stay, the next one is 4
    text = path.read_text().replace("2. [test] two", "2. [retired] two")
    lines = text.splitlines()
    path.write_text("\n".join([*lines[:-3], lines[-1], lines[-3], lines[-2]]) + "\n")
    assert memory.add_rule("four", "test") == "Added rule 4 [test]: four"
    rules = parse_rules(path.read_text())
    assert [(r.number, r.scope, r.text) for r in rules] == [
        (3, "test", "three"),
        (1, "test", "one"),
        (2, "retired", "two"),
        (4, "test", "four"),
    ]
    assert [r.number for r in memory.rules.in_scope("test")] == [3, 1, 4]


@pytest.mark.parametrize(
    ("text", "scope", "message"),
    [
        ("remember:", "test", "rule text 'remember:' is empty"),
        ("  ", "test", "is empty"),
        ("x", "Test", "scope 'Test' is not a scope name"),
        ("x", "retired", "scope 'retired' is for rules that no longer hold"),
        ("x" * 501, "test", "keep a rule under 500"),
    ],
)
def test_bad_rules_are_refused(memory: MemoryTools, text: str, scope: str, message: str) -> None:
    with pytest.raises(NotesError, match=message):
        memory.add_rule(text, scope)
