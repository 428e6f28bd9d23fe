"""Conformance: compact snapshots with refs. ``ui_snapshot`` lists every element with a ref; an
element without an id or a unique name is acted on by its ref; every action answers what changed
since the last look (``+`` with new refs, ``~``, ``-`` gone); a gone element's ref is refused as
stale; id and name targets keep working; a snapshot is bounded and says where it was cut; a
batch of steps answers one delta; wrong argument types are answered in plain words.

Same rules as the other suites: every backend passes it unchanged, through the real server.
"""

from __future__ import annotations

import re

import pytest

from loopkit_ui.testing import ToolAnswer, UIServerClient

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def _ref(lines: list[str] | str, pattern: str) -> str:
    """The ref on the one line that matches ``pattern`` (a regex)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    found = [line for line in lines if re.search(pattern, line)]
    assert len(found) == 1, (pattern, found, lines[:80])
    match = re.search(r"\[ref=(e\d+)\]", found[0])
    assert match, found[0]
    return match.group(1)


def _ok(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"] is True, answer
    return answer


def test_refs_act_where_ids_and_names_cannot(mini_ui: UIServerClient, mini_app: object) -> None:
    snap = mini_ui.call("ui_snapshot")
    assert not snap.error, snap
    data = snap.structured
    assert data["app"] == "mini_app" and data["shown"] == len(data["lines"]) > 20
    assert snap.text.startswith("# mini_app:"), snap.text[:200]
    # Every line: role 'name' #id [states] [ref=eN]; layout containers without a name left out.
    assert all(re.search(r"\[ref=e\d+\]$", line) for line in data["lines"]), data["lines"]
    assert not [line for line in data["lines"] if re.match(r"\s*- (filler|panel)( \[|$)", line)]
    greet = _ref(data["lines"], r"push button 'Greet' #GreetButton")
    # A list item has no id; its ref reaches it all the same.
    cherry = _ref(data["lines"], r"list item 'Cherry'")

    clicked = _ok(mini_ui.call("ui_click", target=greet))
    assert clicked["id"] == f"ref {greet}"
    # The delta: what changed since the snapshot, with the label's ref.
    label_ref = _ref(data["lines"], r"#GreetingLabel")
    assert (
        f"~ label 'Hello, world!' #GreetingLabel [ref={label_ref}] (name was 'Hello?')"
        in (clicked["snapshot"])
    ), clicked["snapshot"]
    picked = _ok(mini_ui.call("ui_click", target=cherry))
    assert any(line.startswith("~ list item 'Cherry'") and "+selected" in line
               for line in picked["snapshot"]), picked["snapshot"]  # fmt: skip
    # Nothing changes: an empty delta.
    again = _ok(mini_ui.call("ui_click", target=cherry))
    assert again["snapshot"] == [], again["snapshot"]
    # Reads and assertions take refs too; an id still works as before.
    assert mini_ui.call("ui_get_text", target=label_ref).text == "Hello, world!"
    assert not mini_ui.call("ui_assert_text", target=label_ref, expected="Hello, world!").error
    assert mini_ui.call("ui_get_text", target="GreetingLabel").text == "Hello, world!"


def test_a_gone_elements_ref_is_stale(mini_ui: UIServerClient, mini_app: object) -> None:
    mini_ui.call("ui_snapshot")
    opened = _ok(mini_ui.call("ui_click", target="DialogButton", expect_appear=["ConfirmOkButton"]))
    delta = opened["snapshot"]
    # The dialog appeared: its subtree, with new refs, under "+".
    dialog = _ref(delta, r"^\+ .*'Confirm' #ConfirmDialog")
    cancel = _ref(delta, r"^  \+ push button 'Cancel' #ConfirmCancelButton")
    closed = _ok(mini_ui.call("ui_click", target=cancel))
    assert closed["windows"]["closed"] == ["Confirm #ConfirmDialog"]
    assert (
        f"- push button 'Cancel' #ConfirmCancelButton [ref={cancel}] (gone)" in (closed["snapshot"])
    ), closed["snapshot"]
    stale = mini_ui.call("ui_click", target=cancel)
    assert stale.error and stale.text.startswith("StaleRefError: ref " + cancel), stale.text
    assert "push button 'Cancel' #ConfirmCancelButton" in stale.text and "ui_snapshot" in stale.text
    # A stale ref names an element that does not exist: assertions say so without an error.
    gone = mini_ui.call("ui_assert_exists", target=dialog, expected=False)
    assert not gone.error, gone
    # Refs are never reused: a new dialog gets new refs.
    reopened = _ok(mini_ui.call("ui_click", target="DialogButton",
                                expect_appear=["ConfirmOkButton"]))  # fmt: skip
    new_cancel = _ref(reopened["snapshot"], r"push button 'Cancel' #ConfirmCancelButton")
    assert new_cancel != cancel
    _ok(mini_ui.call("ui_click", target=new_cancel))


def test_a_snapshot_is_bounded_and_says_where(mini_ui: UIServerClient, mini_app: object) -> None:
    whole = mini_ui.call("ui_snapshot").structured
    # The long list shows its first 40 items and a note for the other 60.
    assert any("row 39" in line for line in whole["lines"])
    assert not any("'row 40'" in line for line in whole["lines"])
    assert any(note.startswith("60 more children of list 'Long list' #LongList")
               for note in whole["notes"]), whole["notes"]  # fmt: skip
    assert whole["truncated"] is True
    cut = mini_ui.call("ui_snapshot", max_lines=10).structured
    assert len(cut["lines"]) == 10 and cut["truncated"]
    assert any("cut at 10 lines" in note for note in cut["notes"]), cut["notes"]
    # One element's subtree alone, by ref or id.
    items = mini_ui.call("ui_snapshot", target="ItemsList").structured
    assert [line.split(" [ref=")[0] for line in items["lines"]] == [
        "- list 'Fruits' #ItemsList", "  - list item 'Apple'", "  - list item 'Banana'",
        "  - list item 'Cherry'",
    ]  # fmt: skip
    shallow = mini_ui.call("ui_snapshot", max_depth=1).structured
    assert all(not line.startswith("  ") for line in shallow["lines"]), shallow["lines"]
    assert any("deeper than 1 levels" in note for note in shallow["notes"])


def test_steps_run_in_one_call_with_one_delta(mini_ui: UIServerClient, mini_app: object) -> None:
    mini_ui.call("ui_snapshot")
    steps = [
        {"tool": "ui_type_text", "arguments": {"target": "NameInput", "text": "Ada"}},
        {"tool": "ui_click", "arguments": {"target": "GreetButton"}},
        {"tool": "ui_assert_text", "arguments": {"target": "GreetingLabel",
                                                 "expected": "Hello, Ada!"}},
    ]  # fmt: skip
    done = mini_ui.call("ui_run_steps", steps=steps)
    assert not done.error and done["success"] is True and done["ran"] == 3, done
    assert [s["ok"] for s in done["steps"]] == [True, True, True]
    # The single steps answered no snapshot of their own; the batch answers one.
    assert all('"snapshot"' not in s["answer"] for s in done["steps"]), done["steps"]
    assert any("'Hello, Ada!' #GreetingLabel" in line for line in done["snapshot"])
    # The first failure stops the batch; the answer is an error with what ran.
    failing = [
        {"tool": "ui_assert_text", "arguments": {"target": "GreetingLabel", "expected": "nope"}},
        {"tool": "ui_click", "arguments": {"target": "AddRowButton"}},
    ]
    stopped = mini_ui.call("ui_run_steps", steps=failing)
    assert stopped.error and stopped["success"] is False and stopped["ran"] == 1, stopped
    assert mini_ui.call("ui_get_text", target="CountLabel").text == "Rows: 3"  # not clicked
    # A bad step is refused before any step runs.
    bad = mini_ui.call("ui_run_steps", steps=[
        {"tool": "ui_click", "arguments": {"target": "AddRowButton"}},
        {"tool": "ui_click", "arguments": {"target": "AddRowButton", "colour": "red"}},
    ])  # fmt: skip
    assert bad.error and "step 2" in bad.text and "'colour'" in bad.text, bad.text
    nested = mini_ui.call("ui_run_steps", steps=[{"tool": "ui_run_steps", "arguments": {}}])
    assert nested.error and "cannot be a step" in nested.text
    assert mini_ui.call("ui_get_text", target="CountLabel").text == "Rows: 3"


def test_wrong_argument_types_in_plain_words(mini_ui: UIServerClient, mini_app: object) -> None:
    wrong = mini_ui.call("ui_get_cell", table="ItemsTable", row="x", column=0)
    assert wrong.error, wrong
    assert wrong.text.startswith("invalid arguments for ui_get_cell: row: 'x' is not an integer")
    assert "pydantic" not in wrong.text and "Arguments" not in wrong.text, wrong.text
    assert "Expected: table (string), row (integer), column (integer)." in wrong.text
    missing = mini_ui.call("ui_click")
    assert missing.error and "'target' is missing" in missing.text, missing.text
    enum = mini_ui.call("ui_scroll", target="LongList", direction="sideways")
    assert enum.error and "direction: 'sideways' is not one of 'up', 'down'" in enum.text
    # What pydantic's lax mode takes ("1" for 1) still works.
    assert mini_ui.call("ui_get_cell", table="ItemsTable", row="1", column="0")["text"] == "item 1"
