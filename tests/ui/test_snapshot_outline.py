"""The compact outline and its deltas on trees built in the test (no desktop): which nodes are
listed, the limits and their notes, refs that follow an element the toolkit recreated under a
new key, refs that go stale, and the forms a ref may be written in."""

from __future__ import annotations

from loopkit_ui.backends.protocol import TreeNode
from loopkit_ui.snapshot import (
    RefTable,
    SnapshotLimits,
    View,
    parse_ref,
    render_delta,
    render_outline,
)


def _node(
    key: str, parent: str | None, depth: int, role: str, name: str = "", **kw: object
) -> TreeNode:
    return TreeNode(key=key, parent=parent, depth=depth, role=role, name=name, **kw)  # type: ignore[arg-type]


def _tree(rows: int = 2) -> list[TreeNode]:
    nodes = [
        _node("app", None, 0, "application", "demo"),
        _node("w", "app", 1, "frame", "Main", id="MainWindow"),
        _node("f", "w", 2, "filler"),  # layout: left out, its children move up
        _node("ok", "f", 3, "push button", "OK", id="OkButton"),
        _node("t", "f", 3, "table", "Items", id="ItemsTable"),
    ]
    for row in range(rows):
        nodes.append(_node(f"c{row}", "t", 4, "table cell", f"item {row}"))
    return nodes


def test_the_outline_leaves_layout_out_and_gives_refs() -> None:
    refs = RefTable()
    lines, notes, truncated = render_outline(_tree(), refs, "demo", SnapshotLimits())
    assert lines == [
        "- frame 'Main' #MainWindow [ref=e1]",
        "  - push button 'OK' #OkButton [ref=e2]",
        "  - table 'Items' #ItemsTable [ref=e3]",
        "    - table cell 'item 0' [ref=e4]",
        "    - table cell 'item 1' [ref=e5]",
    ]
    assert notes == [] and truncated is False
    again, _, _ = render_outline(_tree(), refs, "demo", SnapshotLimits())
    assert again == lines  # the same elements keep their refs
    entry = refs.lookup("e2")
    assert entry is not None and (entry.app, entry.key) == ("demo", "ok")


def test_limits_cut_with_a_note_each() -> None:
    refs = RefTable()
    lines, notes, truncated = render_outline(
        _tree(rows=50), refs, "demo", SnapshotLimits(max_lines=400, max_children=10)
    )
    assert truncated and sum("table cell" in line for line in lines) == 10
    assert notes[0].startswith("40 more children of table 'Items' #ItemsTable not shown")
    lines, notes, _ = render_outline(_tree(), refs, "demo", SnapshotLimits(max_lines=2))
    assert len(lines) == 2 and "cut at 2 lines (3 more elements)" in notes[-1]
    lines, notes, _ = render_outline(_tree(), refs, "demo", SnapshotLimits(max_depth=1))
    assert lines == ["- frame 'Main' #MainWindow [ref=e1]"]
    assert notes == ["4 elements deeper than 1 levels not shown: snapshot a deeper element "
                     "alone (ui_snapshot target=its ref)"]  # fmt: skip


def test_a_delta_shows_what_appeared_changed_and_went() -> None:
    refs = RefTable()
    before = _tree()
    render_outline(before, refs, "demo", SnapshotLimits())
    after = [n.model_copy() for n in before if n.key != "c1"]
    after[3] = after[3].model_copy(update={"states": ["focused"]})  # the OK button
    after += [
        _node("d", "app", 1, "dialog", "Sure?", id="SureDialog"),
        _node("yes", "d", 2, "push button", "Yes"),
    ]
    lines, notes, _ = render_delta(View(before), after, refs, "demo", SnapshotLimits())
    assert lines == [
        "+ dialog 'Sure?' #SureDialog [ref=e6]",
        "  + push button 'Yes' [ref=e7]",
        "~ push button 'OK' #OkButton [focused] [ref=e2] (+focused)",
        "- table cell 'item 1' [ref=e5] (gone)",
    ]
    assert notes == []
    stale = refs.lookup("e5")
    assert stale is not None and stale.gone
    assert render_delta(View(after), after, refs, "demo", SnapshotLimits())[0] == []


def test_a_recreated_element_keeps_its_ref() -> None:
    refs = RefTable()
    before = _tree()
    render_outline(before, refs, "demo", SnapshotLimits())
    # Qt recreates a table's cells under new keys when a row goes: the same cell, the same ref.
    after = [n if n.key != "c0" else n.model_copy(update={"key": "c0-new"}) for n in before]
    lines, _, _ = render_delta(View(before), after, refs, "demo", SnapshotLimits())
    assert lines == []
    moved = refs.lookup("e4")
    assert moved is not None and moved.key == "c0-new" and not moved.gone


def test_ref_forms() -> None:
    assert [parse_ref(t) for t in ("e12", "ref=e12", "[ref=e12]", " e3 ")] == ["e12"] * 3 + ["e3"]
    assert [parse_ref(t) for t in ("E12", "e", "AddItemButton", "e12x", "ref=12")] == [None] * 5
