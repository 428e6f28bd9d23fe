"""``ui_missing_ids``: which nodes count as controls without an id (a tree built here), and the
tool over MCP on the real invoice app, whose Notes panel (gap 4) has five controls without one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from loopkit_ui.backends.protocol import TreeNode, TreeSnapshot
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.missing_ids import MAX_ELEMENTS, find_missing_ids, missing_ids
from loopkit_ui.testing import UIServerClient, running_app

from .conftest import EXAMPLES_DIR, PYTHON


def _tree(*rows: tuple[int, str, str, str | None]) -> TreeSnapshot:
    """Nodes from (depth, role, name, id) rows in pre-order; parents follow from the depths."""
    nodes: list[TreeNode] = []
    stack: list[str] = []
    for i, (depth, role, name, ident) in enumerate(rows):
        del stack[depth:]
        key = f"n{i}"
        nodes.append(
            TreeNode(
                key=key,
                parent=stack[-1] if stack else None,
                depth=depth,
                role=role,
                name=name,
                id=ident,
            )
        )
        stack.append(key)
    return TreeSnapshot(app="app", nodes=nodes, node_budget=2000, ms=1.0)


def test_controls_without_id_are_listed_with_their_place() -> None:
    snapshot = _tree(
        (0, "application", "App", None),
        (1, "frame", "Main", "MainWindow"),
        (2, "filler", "", "MainPanel"),
        (3, "table", "Items", "ItemsTable"),
        (4, "panel", "", None),  # the table's own parts: never listed
        (4, "table column header", "Name", None),
        (4, "table cell", "Tea", None),
        (3, "filler", "", None),  # an unnamed layout: no control
        (4, "push button", "Save", None),
        (3, "panel", "Customer", None),  # a named group: a control
        (4, "label", "Name", None),
        (4, "text", "Name", None),
        (5, "scroll bar", "", None),  # inside a text field: part of it
        (4, "check box", "VIP", "CustomerVipCheckBox"),
        (1, "dialog", "Confirm", None),
        (2, "push button", "OK", None),
        (2, "scroll bar", "", None),  # no control role
        (1, "popup menu", "Item actions", "ItemsMenu"),
        (2, "menu item", "Duplicate", "DuplicateAction"),
        (2, "menu item", "Rename", None),  # a QAction without an object name
        (1, "frame", "Other", "OtherWindow"),
        (2, "tool bar", "Tools", "MainToolBar"),
        (3, "push button", "Print", None),  # a tool bar's button is a control of its own
    )
    found = find_missing_ids(snapshot.nodes)
    assert [(m.role, m.name) for m in found] == [
        ("push button", "Save"),
        ("panel", "Customer"),
        ("label", "Name"),
        ("text", "Name"),
        ("dialog", "Confirm"),
        ("push button", "OK"),
        ("menu item", "Rename"),
        ("push button", "Print"),
    ]
    save, customer, label, text, dialog, ok, rename, _ = found
    assert (rename.parent_id, rename.index, rename.window) == ("ItemsMenu", 1, "Item actions")
    assert (save.parent_id, save.index, save.window) == ("MainPanel", 0, "Main")
    assert save.path == "#MainWindow / #MainPanel / filler '' / push button 'Save'"
    assert (customer.index, customer.parent) == (2, "filler '' #MainPanel")
    assert (text.index, text.parent, text.parent_id) == (1, "panel 'Customer'", "MainPanel")
    assert (dialog.parent, dialog.parent_id, ok.parent_id, ok.window) == (
        "the application",
        None,
        None,
        "Confirm",
    )
    assert label.path.endswith("panel 'Customer' / label 'Name'")


def test_the_task_names_each_control_and_the_rules() -> None:
    answer = missing_ids(
        _tree(
            (0, "application", "App", None),
            (1, "frame", "Main", "MainWindow"),
            (2, "push button", "Clear notes", None),
        )
    )
    assert (answer.count, answer.checked, answer.truncated) == (1, 3, False)
    task = answer.task
    assert "1. push button 'Clear notes': child 0 of frame 'Main' #MainWindow" in task
    for rule in ("area, control type and purpose", "Change nothing else", "At most 50"):
        assert rule in task
    assert answer.render().endswith(task)

    none = missing_ids(_tree((0, "application", "App", None), (1, "frame", "Main", "W")))
    assert (none.count, none.task, none.elements) == (0, "", [])
    assert none.render() == "Every control has an id (2 nodes checked)."


def test_at_most_fifty_controls_a_task() -> None:
    rows = [(0, "application", "App", None), (1, "frame", "Main", "W")]
    rows += [(2, "push button", f"Button {i}", None) for i in range(60)]
    answer = missing_ids(_tree(*rows))
    assert answer.count == 60 and len(answer.elements) == MAX_ELEMENTS
    assert "the first 50 of 60" in answer.task and "50. push button 'Button 49'" in answer.task
    assert "Button 50'" not in answer.task
    assert len(missing_ids(_tree(*rows), limit=3).elements) == 3
    with pytest.raises(ValueError, match="limit must be 1 to 50, got 51"):
        missing_ids(_tree(*rows), limit=51)


@pytest.fixture(scope="module")
def client(
    headless_desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[UIServerClient]:
    logs = tmp_path_factory.mktemp("missing-ids")
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(logs / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env):
        args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--attach-timeout", "20",
                "--output-dir", str(logs / "out")]  # fmt: skip
        with UIServerClient(args, env=headless_desktop.child_env()) as ui:
            yield ui


@pytest.mark.ui
@pytest.mark.integration
def test_the_invoice_apps_notes_panel_over_mcp(client: UIServerClient) -> None:
    tool = {t.name: t for t in client.tools()}["ui_missing_ids"]
    assert tool.annotations.read_only_hint is True
    got = client.call("ui_missing_ids")
    assert not got.error, got
    jsonschema.Draft202012Validator(tool.output_schema).validate(got.structured)
    data: dict[str, Any] = got.structured
    assert [(e["role"], e["name"]) for e in data["elements"]] == [
        ("panel", "Notes"),
        ("label", "Note to the customer"),
        ("text", "Note to the customer"),
        ("label", "0 characters"),
        ("push button", "Clear notes"),
    ]
    assert {e["parent_id"] for e in data["elements"]} == {"InvoicePanel"}
    assert {e["window"] for e in data["elements"]} == {"Invoice Editor"}
    assert got.text.startswith("5 control(s) without an id") and data["task"] in got.text

    two = client.call("ui_missing_ids", limit=2, window="InvoiceWindow")
    assert two.structured["count"] == 5 and len(two.structured["elements"]) == 2
    nowhere = client.call("ui_missing_ids", window="NoSuchWindow")
    assert nowhere.error and "NoSuchWindow" in nowhere.text, nowhere
    refused = client.call("ui_missing_ids", limit=51)
    assert refused.error and "limit" in refused.text
    unknown = client.call("ui_missing_ids", target="NotesPanel")
    assert unknown.error and "unknown argument 'target'" in unknown.text
