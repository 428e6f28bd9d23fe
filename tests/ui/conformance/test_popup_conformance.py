"""Conformance: popups are windows like any other. A context menu, a combo box's drop-down and a
tooltip are reported in ``windows.opened`` / ``closed`` with their kind, show in the diff, the
tree and the window list, and their items are found, read and clicked like any element.

Same rules as the other suites: every backend passes it unchanged, through the real server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit_ui.testing import ToolAnswer, UIServerClient

pytestmark = [pytest.mark.ui, pytest.mark.integration]

MENU = "menu 'Item actions' #ItemsContextMenu"


def _ok(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"] is True, answer
    return answer


def _windows(ui: UIServerClient) -> list[dict[str, object]]:
    answer = ui.call("ui_list_windows")
    assert not answer.error, answer
    return list(answer["windows"])


def _open_menu(ui: UIServerClient, row: int, *, diff: bool = False) -> ToolAnswer:
    opened = _ok(ui.call("ui_right_click", target="ItemsTable", row=row, column=0, diff=diff))
    assert opened["windows"]["opened"] == [MENU], opened
    assert opened["windows"]["count"] == 2, opened
    return opened


def test_context_menu_is_a_window_in_reports_diff_and_tree(ui: UIServerClient, app: object) -> None:
    opened = _open_menu(ui, 1, diff=True)
    appeared = opened["diff"]["appeared"]
    for ident in ("#ItemsContextMenu", "#DuplicateItemAction", "#DeleteItemAction",
                  "#SelectAllAction"):  # fmt: skip
        assert any(ident in entry for entry in appeared), (ident, appeared)
    assert "active_dialog" not in opened.data  # a menu is not a dialog to answer
    menu = [w for w in _windows(ui) if w.get("id") == "ItemsContextMenu"]
    assert len(menu) == 1, _windows(ui)
    assert menu[0]["kind"] == "menu" and menu[0]["is_dialog"] is False
    assert menu[0]["title"] == "Item actions" and menu[0]["modal"] is False
    tree = ui.call("ui_tree")
    text = Path(tree["path"]).read_text(encoding="utf-8")
    assert "'Select All' #SelectAllAction" in text, text
    scoped = ui.call("ui_tree", window="ItemsContextMenu")
    assert scoped["nodes"] == 4, scoped  # the menu and its three items
    # Read like any element.
    assert ui.call("ui_get_text", target="DuplicateItemAction").text == "Duplicate item"
    item = ui.call("ui_get_element", target="Delete item")
    assert item["id"] == "DeleteItemAction" and item["window"] == "Item actions", item
    assert ui.call("ui_assert_visible", target="SelectAllAction")["passed"] is True


def test_clicking_a_menu_item_by_id_acts_and_closes_the_menu(
    ui: UIServerClient, app: object
) -> None:
    _open_menu(ui, 1)
    duplicated = _ok(ui.call("ui_click", target="DuplicateItemAction", diff=True))
    assert duplicated["windows"] == {"count": 1, "opened": [], "closed": [MENU]}, duplicated
    assert any("#DuplicateItemAction" in e for e in duplicated["diff"]["disappeared"])
    assert ui.call("ui_get_text", target="ItemsTable", row=2, column=0).text == "Travel"
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 300.00"
    assert [w["kind"] for w in _windows(ui)] == ["window"]
    gone = ui.call("ui_click", target="DuplicateItemAction")
    assert gone.error and "no element" in gone.text  # the closed menu's items are not offered


def test_clicking_a_menu_item_by_name_and_delete_item(ui: UIServerClient, app: object) -> None:
    _open_menu(ui, 0)
    selected = _ok(ui.call("ui_click", target="Select All", diff=True))
    assert selected["windows"]["closed"] == [MENU], selected
    for row in (0, 1):
        states = ui.call("ui_get_element", target="ItemsTable", row=row, column=1)["states"]
        assert "selected" in states, (row, states)
    _open_menu(ui, 0)
    deleted = _ok(ui.call("ui_click", target="Delete item"))
    assert deleted["windows"]["closed"] == [MENU], deleted
    assert ui.call("ui_get_text", target="ItemsTable", row=0, column=0).text == "Travel"
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 50.00"


def test_escape_closes_the_menu(ui: UIServerClient, app: object) -> None:
    _open_menu(ui, 0)
    escaped = _ok(ui.call("ui_press_keys", keys="Escape", diff=True))
    assert escaped["windows"] == {"count": 1, "opened": [], "closed": [MENU]}, escaped
    assert any("#SelectAllAction" in e for e in escaped["diff"]["disappeared"]), escaped
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 250.00"
    absent = ui.call("ui_assert_exists", target="SelectAllAction", expected=False)
    assert absent["passed"] is True, absent


def test_combo_drop_down_opens_selects_and_reads_back(
    mini_ui: UIServerClient, mini_app: object
) -> None:
    assert mini_ui.call("ui_get_property", target="SizeCombo", property="value")["value"] == (
        "Small"
    )
    opened = _ok(mini_ui.call("ui_click", target="SizeCombo", diff=True))
    popups = opened["windows"]["opened"]
    assert len(popups) == 1 and popups[0].startswith("popup"), opened
    assert "SizeCombo" in popups[0], popups  # says whose drop-down it is
    assert opened["windows"]["count"] == 2
    assert opened["diff"]["appeared"] or opened["diff"]["changed"], opened
    kinds = {w["kind"] for w in _windows(mini_ui)}
    assert kinds == {"window", "popup"}, kinds
    picked = _ok(mini_ui.call("ui_click", target="Medium"))
    assert picked["windows"]["closed"] == popups, picked
    assert picked["windows"]["count"] == 1
    assert mini_ui.call("ui_get_property", target="SizeCombo", property="value")["value"] == (
        "Medium"
    )
    assert mini_ui.call("ui_assert_value", target="SizeCombo", expected="Medium")["passed"]
    # select_item opens the drop-down, picks the item and closes it within the one action.
    large = _ok(mini_ui.call("ui_select_item", target="SizeCombo", item="Large"))
    assert large["action"] == "select_item 'Large'" and large["windows"]["count"] == 1, large
    assert mini_ui.call("ui_get_text", target="SizeCombo").text == "Large"
    first = _ok(mini_ui.call("ui_select_item", target="SizeCombo", item="#0"))
    assert first["action"] == "select_item 'Small'", first
    assert mini_ui.call("ui_get_property", target="SizeCombo", property="value")["value"] == (
        "Small"
    )
    missing = mini_ui.call("ui_select_item", target="SizeCombo", item="Huge")
    assert missing.error and "'Small', 'Medium', 'Large'" in missing.text, missing
    assert [w["kind"] for w in _windows(mini_ui)] == ["window"]


def test_tooltip_appears_on_hover(mini_ui: UIServerClient, mini_app: object) -> None:
    # Qt shows tooltips in the active window: work in it first, then rest the pointer.
    _ok(mini_ui.call("ui_click", target="GreetButton"))
    _ok(mini_ui.call("ui_hover", target="TipButton"))
    # Qt shows a tooltip after the pointer rested for about 700 ms.
    shown = mini_ui.call("ui_wait_for", target="Shows a tip", condition="appear", timeout=5)
    assert shown["success"] is True, shown
    tips = [w for w in _windows(mini_ui) if w["kind"] == "tooltip"]
    assert [w["title"] for w in tips] == ["Shows a tip"], _windows(mini_ui)
    assert mini_ui.call("ui_get_text", target="Shows a tip").text == "Shows a tip"
    # Moving away hides it again.
    _ok(mini_ui.call("ui_hover", target="GreetingLabel"))
    gone = mini_ui.call("ui_wait_for", target="Shows a tip", condition="disappear", timeout=5)
    assert gone["success"] is True, gone
    assert [w["kind"] for w in _windows(mini_ui)] == ["window"]
