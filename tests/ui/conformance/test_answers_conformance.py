"""Conformance: answers that used to be wrong. ``#N`` on a table is data row N (from 0, as
``row`` everywhere); a window is always named (never an object number); a reorder shows in the
diff and a drop that does nothing fails; a modal dialog is listed modal and a non-modal one is
not; quitting the app from its crash dialog is a success that says how the app exited.

Same rules as the other suites: every backend passes it unchanged, through the real server.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopkit_ui.testing import ToolAnswer, UIServerClient

pytestmark = [pytest.mark.ui, pytest.mark.integration]

_OBJECT_NUMBER = re.compile(r"^\d+$")


def _ok(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"] is True, answer
    return answer


def _selected_rows(ui: UIServerClient, table: str, rows: int) -> list[int]:
    return [
        row
        for row in range(rows)
        if "selected" in ui.call("ui_get_element", target=table, row=row, column=0)["states"]
    ]


def test_select_item_number_on_a_table_is_the_data_row_from_0(
    mini_ui: UIServerClient, mini_app: object
) -> None:
    second = _ok(mini_ui.call("ui_select_item", target="ItemsTable", item="#1"))
    assert second["action"] == "select_item row 1 'item 1'", second
    assert _selected_rows(mini_ui, "ItemsTable", 3) == [1]
    first = _ok(mini_ui.call("ui_select_item", target="ItemsTable", item="#0"))
    assert first["action"] == "select_item row 0 'item 0'", first
    assert _selected_rows(mini_ui, "ItemsTable", 3) == [0]
    by_name = _ok(mini_ui.call("ui_select_item", target="ItemsTable", item="item 2"))
    assert by_name["action"] == "select_item row 2 'item 2'", by_name
    outside = mini_ui.call("ui_select_item", target="ItemsTable", item="#3")
    assert outside.error and "3 rows" in outside.text and "from 0" in outside.text, outside
    # The list counts the same way: #1 is the second item.
    banana = _ok(mini_ui.call("ui_select_item", target="ItemsList", item="#1"))
    assert banana["action"] == "select_item 'Banana'", banana


def test_select_item_is_documented_from_0(mini_ui: UIServerClient) -> None:
    tools = {tool.name: tool for tool in mini_ui.tools()}
    item = tools["ui_select_item"].input_schema["properties"]["item"]["description"]
    assert "#N" in item and "from 0" in item and "row" in item, item


def test_a_window_that_closed_within_the_action_is_named_by_title_and_id(
    mini_ui: UIServerClient, mini_app: object
) -> None:
    # The dialog has no title of its own: Qt names it after the application, as in its title
    # bar. It is gone (its accessible object destroyed) before the action ends.
    for count in (1, 2):
        blink = _ok(
            mini_ui.call(
                "ui_click", target="QuietBlinkButton", expect_appear=[f"Quiet blinks: {count}"]
            )
        )
        windows = blink["windows"]
        assert windows["opened"] == ["mini_app #QuietDialog"], windows
        assert windows["closed"] == ["mini_app #QuietDialog"], windows
        for label in windows["opened"] + windows["closed"]:
            assert not _OBJECT_NUMBER.match(label.strip()), label


def _order(ui: UIServerClient) -> list[str]:
    tree = ui.call("ui_tree", window="Mini App")
    text = Path(tree["path"]).read_text(encoding="utf-8")
    return re.findall(r"'(first|second|third)'", text)


def test_a_reorder_shows_in_the_diff(mini_ui: UIServerClient, mini_app: object) -> None:
    dropped = _ok(mini_ui.call("ui_drag_and_drop", source="first", target="third", diff=True))
    assert _order(mini_ui) == ["second", "third", "first"]
    changed = dropped["diff"]["changed"]
    assert any(
        "#ReorderList" in entry and "'first', 'second', 'third'" in entry
        and "'second', 'third', 'first'" in entry
        for entry in changed
    ), dropped["diff"]  # fmt: skip


def test_a_drop_that_changes_nothing_fails(mini_ui: UIServerClient, mini_app: object) -> None:
    nowhere = mini_ui.call("ui_drag_and_drop", source="first", target="GreetingLabel")
    assert not nowhere.error, nowhere  # carried out, but it did not take
    assert nowhere["success"] is False, nowhere
    assert "changed nothing" in nowhere["detail"], nowhere
    assert _order(mini_ui) == ["first", "second", "third"]


def test_modal_and_non_modal_dialogs(mini_ui: UIServerClient, mini_app: object) -> None:
    palette = _ok(mini_ui.call("ui_click", target="PaletteButton", expect_appear=["PaletteDialog"]))
    assert palette["windows"]["opened"] == ["Palette #PaletteDialog"], palette
    windows = {w["id"]: w for w in mini_ui.call("ui_list_windows")["windows"]}
    assert windows["PaletteDialog"]["is_dialog"] is True
    assert windows["PaletteDialog"]["modal"] is False, windows
    # Not modal: the main window still takes input.
    _ok(mini_ui.call("ui_click", target="GreetButton"))
    _ok(mini_ui.call("ui_click", target="PaletteCloseButton", expect_disappear=["PaletteDialog"]))
    asked = _ok(mini_ui.call("ui_click", target="DialogButton", expect_appear=["ConfirmOkButton"]))
    assert asked["windows"]["opened"] == ["Confirm #ConfirmDialog"]
    windows = {w["id"]: w for w in mini_ui.call("ui_list_windows")["windows"]}
    assert windows["ConfirmDialog"]["modal"] is True, windows
    _ok(mini_ui.call("ui_click", target="ConfirmOkButton", expect_disappear=["ConfirmDialog"]))
    # A modal QDialog (not a message box) is modal too.
    _ok(mini_ui.call("ui_click", target="OptionsButton", expect_appear=["OptionsDialog"]))
    windows = {w["id"]: w for w in mini_ui.call("ui_list_windows")["windows"]}
    assert windows["OptionsDialog"]["modal"] is True, windows
    assert windows["OptionsDialog"]["role"] == "dialog" or sys.platform == "win32", windows
    blocked = mini_ui.call("ui_click", target="GreetButton")
    assert blocked.error and "behind the open dialog" in blocked.text, blocked
    _ok(mini_ui.call("ui_click", target="OptionsCloseButton", expect_disappear=["OptionsDialog"]))


def _open_crash_dialog(ui: UIServerClient, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    _ok(ui.call("ui_type_text", target="FilePathInput", text=str(bad)))
    _ok(ui.call("ui_click", target="OpenButton", expect_appear=["CrashDialog"]))


def test_the_crash_dialog_is_listed_modal(ui: UIServerClient, app: object, tmp_path: Path) -> None:
    _open_crash_dialog(ui, tmp_path)
    windows = {w["id"]: w for w in ui.call("ui_list_windows")["windows"]}
    assert windows["CrashDialog"]["modal"] is True, windows
    assert windows["CrashDialog"]["is_dialog"] is True
    assert windows["InvoiceWindow"]["modal"] is False


def test_quit_in_the_crash_dialog_answers_the_exit(
    ui: UIServerClient, app: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _open_crash_dialog(ui, tmp_path)
    quit_ = ui.call("ui_click", target="CrashQuitButton")
    assert not quit_.error, quit_  # not ElementVanishedError
    assert quit_["success"] is True, quit_
    assert "the application exited" in quit_["effect"], quit_
    assert "exit status 1" in quit_["effect"], quit_
    assert quit_["windows"]["count"] == 0, quit_
    assert sorted(quit_["windows"]["closed"]) == sorted(
        ["Invoice Editor #CrashDialog", "Invoice Editor #InvoiceWindow"]
    ), quit_
    deadline = time.monotonic() + 10
    while app.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert app.returncode == 1
