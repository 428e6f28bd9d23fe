"""Conformance on the small fixture app: what the invoice app has no control for (a list to select
from, a list to reorder by drag and drop, a dialog that blinks) and expectations that must fail.

Same rules as the invoice suite: every backend passes it unchanged, through the real server.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from loopkit_ui.testing import UIServerClient

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def test_the_suite_runs_the_chosen_backend(backend_name: str) -> None:
    """LOOPKIT_UI_BACKEND (the Windows workflow sets uia) picks the backend every case runs;
    unset, the platform's own. Every server here gets it as --backend."""
    platform_default = "uia" if sys.platform == "win32" else "atspi"
    assert backend_name == (os.environ.get("LOOPKIT_UI_BACKEND") or platform_default)


def test_a_window_that_opens_and_closes_within_one_action(
    mini_ui: UIServerClient, mini_app: object
) -> None:
    # The count label changes only once the blink dialog has closed: the click waits for it,
    # so the dialog opens and closes inside this one action.
    for count in (1, 2):
        blink = mini_ui.call("ui_click", target="BlinkButton", expect_appear=[f"Blinks: {count}"])
        assert not blink.error and blink["success"] is True, blink
        windows = blink["windows"]
        assert windows["count"] == 1, windows
        assert [w.split(" #")[0] for w in windows["opened"]] == ["Blink"], windows
        assert windows["closed"] == windows["opened"], windows
        assert "active_dialog" not in blink.data
    titles = [w["title"] for w in mini_ui.call("ui_list_windows")["windows"]]
    assert titles == ["Mini App"]


def test_select_item_selects_by_name_and_index(mini_ui: UIServerClient, mini_app: object) -> None:
    cherry = mini_ui.call("ui_select_item", target="ItemsList", item="Cherry")
    assert not cherry.error and cherry["success"] is True, cherry
    assert cherry["action"] == "select_item 'Cherry'"
    assert cherry["effect"] == "confirmed by reading back"
    first = mini_ui.call("ui_select_item", target="ItemsList", item="#0")
    assert first["success"] is True and first["action"] == "select_item 'Apple'", first
    missing = mini_ui.call("ui_select_item", target="ItemsList", item="Durian")
    assert missing.error and "no item 'Durian'" in missing.text
    assert "'Apple', 'Banana', 'Cherry'" in missing.text


def _order(ui: UIServerClient) -> list[str]:
    tree = ui.call("ui_tree", window="Mini App")
    assert not tree.error, tree
    text = Path(tree["path"]).read_text(encoding="utf-8")
    return re.findall(r"'(first|second|third)'", text)


def test_drag_and_drop_reorders_a_list(mini_ui: UIServerClient, mini_app: object) -> None:
    assert _order(mini_ui) == ["first", "second", "third"]
    dropped = mini_ui.call("ui_drag_and_drop", source="first", target="third")
    assert not dropped.error and dropped["success"] is True, dropped
    assert dropped["action"] == "drag_and_drop" and dropped["id"] == "first -> third"
    assert _order(mini_ui) == ["second", "third", "first"]


def test_expect_disappear_met_and_not_met(mini_ui: UIServerClient, mini_app: object) -> None:
    opened = mini_ui.call("ui_click", target="DialogButton", expect_appear=["ConfirmOkButton"])
    assert opened["success"] is True, opened
    assert opened["windows"]["opened"] == ["Confirm #ConfirmDialog"]
    closed = mini_ui.call(
        "ui_click", target="ConfirmCancelButton", expect_disappear=["ConfirmDialog"]
    )
    assert closed["success"] is True, closed
    assert closed["effect"] == "expected elements appeared/disappeared"
    assert closed["windows"]["closed"] == ["Confirm #ConfirmDialog"]
    assert mini_ui.call("ui_get_text", target="AnswerLabel").text == "Answer: cancel"
    # Nothing makes the button go away: the expectation fails and names what is still there.
    stays = mini_ui.call(
        "ui_click", target="GreetButton", expect_disappear=["GreetButton"], expect_timeout=0.5
    )
    assert stays["success"] is False, stays
    assert "GreetButton (still there)" in stays["effect"]
    # An element that exists but is hidden has not appeared.
    hidden = mini_ui.call(
        "ui_click", target="GreetButton", expect_appear=["HiddenLabel"], expect_timeout=0.5
    )
    assert hidden["success"] is False and "HiddenLabel" in hidden["effect"], hidden
