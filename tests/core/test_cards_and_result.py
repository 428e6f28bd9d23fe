from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import Card, CardError, CardState, parse_result

CARD = """---
title: Deleting an item should ask first
state: New
category: Improvement
---

"Delete selected" removes the row immediately.

**Acceptance criteria**

- Clicking "Delete selected" with a row selected shows a confirmation dialog
  naming the item.
- "Yes" removes the row; "No" leaves everything as is.
- With no row selected the button does nothing, as today.
"""


def test_parse_card() -> None:
    card = Card.parse(CARD)
    assert card.title == "Deleting an item should ask first"
    assert card.state is CardState.NEW
    assert card.front_matter.category == "Improvement"
    assert card.acceptance_criteria[0] == (
        'Clicking "Delete selected" with a row selected shows a confirmation dialog naming the item.'
    )
    assert len(card.acceptance_criteria) == 3


def test_state_written_back_without_touching_the_body(tmp_path: Path) -> None:
    path = tmp_path / "card.md"
    path.write_bytes(CARD.replace("\n", "\r\n").encode())
    card = Card.load(path)
    card = card.save_state(CardState.IN_WORK)
    card.save_state(CardState.DONE)
    after = path.read_bytes().decode()
    assert "state: Done\r\n" in after
    assert after.replace("state: Done", "state: New") == CARD.replace("\n", "\r\n")
    assert Card.load(path).state is CardState.DONE


def test_state_added_when_missing() -> None:
    card = Card.parse("---\ntitle: T\n---\nbody\n").with_state(CardState.FAILED)
    assert card.state is CardState.FAILED and card.body == "body\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter here", "no front matter"),
        ("---\nstate: New\n---\nbody", "title: Field required"),
        ("---\ntitle: '  '\n---\n", "title must not be empty"),
        ("---\ntitle: T\nstate: Doing\n---\n", "states are: New, In Work, In Test, Done, Failed"),
        ("---\ntitle: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a list\n---\n", "must be a YAML mapping"),
    ],
)
def test_bad_cards_give_clear_errors(text: str, message: str) -> None:
    with pytest.raises(CardError, match=message):
        Card.parse(text)


def test_missing_card_file(tmp_path: Path) -> None:
    with pytest.raises(CardError, match="card file not found"):
        Card.load(tmp_path / "nope.md")


@pytest.mark.parametrize(
    ("text", "status", "reason"),
    [
        ("All criteria verified.\nRESULT: done", "done", None),
        ("RESULT: done\n\n", "done", None),
        ("**RESULT: done**", "done", None),
        ("x\nRESULT: failed: build broke", "failed", "build broke"),
        ("RESULT: failed", "failed", "the model gave no reason"),
        ("", "failed", "the final answer was empty: no RESULT line"),
        (
            "I am finished.",
            "failed",
            "the final answer did not end with a RESULT line (last line: 'I am finished.')",
        ),
        (
            "RESULT: done\nbut then more",
            "failed",
            "the final answer did not end with a RESULT line (last line: 'but then more')",
        ),
    ],
)
def test_result_contract(text: str, status: str, reason: str | None) -> None:
    result = parse_result(text)
    assert (result.status, result.reason) == (status, reason)


def test_result_line_round_trip() -> None:
    assert parse_result("RESULT: failed: x").line() == "RESULT: failed: x"
