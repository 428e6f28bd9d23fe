"""Conformance suite: the invoice app driven through the UI MCP server over stdio.

Every backend must pass it unchanged (atspi on Linux, uia on Windows). The assertions are about
names, ids, texts and reports, never about one toolkit's role names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopkit_ui.testing import UIServerClient

from .conftest import Platform

pytestmark = [pytest.mark.ui, pytest.mark.integration]

ACTION_KEYS = {"success", "id", "action", "ms", "effect", "windows"}
CRASH_DIALOG = "Invoice Editor #CrashDialog"


def _ok(answer: object) -> None:
    assert not getattr(answer, "error", True), answer


def test_tools_are_listed_with_typical_times(ui: UIServerClient) -> None:
    tools = {tool.name: tool for tool in ui.tools()}
    expected = {
        "ui_list_windows", "ui_tree", "ui_get_element", "ui_get_text", "ui_get_property",
        "ui_get_cell", "ui_click", "ui_double_click", "ui_right_click", "ui_hover",
        "ui_type_text", "ui_press_keys", "ui_select_item", "ui_drag_and_drop", "ui_set_cell",
        "ui_assert_exists", "ui_assert_visible", "ui_assert_enabled", "ui_assert_value",
        "ui_assert_text", "ui_wait_for", "ui_screenshot",
    }  # fmt: skip
    assert expected <= set(tools)
    for name in ("ui_click", "ui_tree", "ui_set_cell", "ui_type_text", "ui_screenshot"):
        assert "Typical time" in (tools[name].description or ""), name
    assert "diff" in tools["ui_click"].input_schema["properties"]


def test_reads_tree_texts_cells_and_windows(ui: UIServerClient, app: object) -> None:
    tree = ui.call("ui_tree")
    _ok(tree)
    assert tree["nodes"] > 20 and tree["truncated"] is False
    text = Path(tree["path"]).read_text(encoding="utf-8")
    for ident in ("#InvoiceWindow", "#ItemsTable", "#AddItemButton", "#TotalLabel"):
        assert ident in text
    assert "Consulting" not in tree.text  # the answer carries the path, not the tree

    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 250.00"
    assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
    cell = ui.call("ui_get_cell", table="ItemsTable", row=1, column=0)
    _ok(cell)
    assert (cell["text"], cell["row"], cell["column"]) == ("Travel", 1, 0)
    assert ui.call("ui_get_text", target="ItemsTable", row=0, column=3).text == "200.00"
    prop = ui.call("ui_get_property", target="DiscountInput", property="value")
    assert prop["value"] == "0"
    windows = ui.call("ui_list_windows")["windows"]
    assert [(w["title"], w["id"], w["is_dialog"]) for w in windows] == [
        ("Invoice Editor", "InvoiceWindow", False)
    ]
    budget = ui.call("ui_tree", node_budget=5)
    assert budget["nodes"] == 5 and budget["truncated"] is True


def test_add_item_edit_cells_and_read_totals(ui: UIServerClient, app: object) -> None:
    added = ui.call("ui_click", target="AddItemButton")
    _ok(added)
    assert set(added.data) >= ACTION_KEYS and added["success"] is True
    assert "diff" not in added.data  # off by default
    assert ui.call("ui_get_text", target="ItemsTable", row=2, column=0).text == "New item"
    for column, value in ((0, "Widget"), (1, "3"), (2, "10.00")):
        edited = ui.call("ui_set_cell", table="ItemsTable", row=2, column=column, text=value)
        assert edited["success"] is True, edited
    assert ui.call("ui_get_text", target="ItemsTable", row=2, column=3).text == "30.00"
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 280.00"
    # The line total column is read-only: the edit is refused, honestly reported.
    refused = ui.call("ui_set_cell", table="ItemsTable", row=2, column=3, text="1.00")
    assert refused["success"] is False and "nothing typed" in refused["detail"]
    assert ui.call("ui_get_text", target="ItemsTable", row=2, column=3).text == "30.00"
    # GAP 3: a non-numeric quantity is accepted and counts as 0.
    ui.call("ui_set_cell", table="ItemsTable", row=2, column=1, text="abc")
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 250.00"


def test_discount_and_every_assertion_passing_and_failing(ui: UIServerClient, app: object) -> None:
    typed = ui.call("ui_type_text", target="DiscountInput", text="10")
    assert typed["success"] is True, typed
    assert ui.call("ui_get_text", target="DiscountAmountLabel").text == "Discount: 25.00"

    def verdict(tool: str, **args: object) -> bool:
        answer = ui.call(tool, **args)
        assert answer.data is not None, answer  # a verdict, not a crash
        assert answer.error is (not answer["passed"])
        return bool(answer["passed"])

    # GAP 1: the total ignores the discount; the correct value fails, the actual one passes.
    assert verdict("ui_assert_text", target="TotalLabel", expected="Total: 250.00")
    failed = ui.call("ui_assert_text", target="TotalLabel", expected="Total: 225.00")
    assert failed.error and failed["actual"] == "'Total: 250.00'"
    assert "FAILED" in failed["message"]
    assert verdict("ui_assert_text", target="TotalLabel", expected="250", match="contains")
    assert verdict(
        "ui_assert_text", target="TotalLabel", expected=r"^Total: \d+\.\d\d$", match="regex"
    )
    assert not verdict("ui_assert_text", target="TotalLabel", expected="225", match="contains")
    assert verdict("ui_assert_value", target="DiscountInput", expected="10")
    assert not verdict("ui_assert_value", target="DiscountInput", expected="5")
    assert verdict("ui_assert_exists", target="AddItemButton")
    assert not verdict("ui_assert_exists", target="NoSuchButton")
    assert verdict("ui_assert_exists", target="NoSuchButton", expected=False)
    assert not verdict("ui_assert_visible", target="ErrorLabel")  # hidden until an error
    assert verdict("ui_assert_visible", target="ErrorLabel", expected=False)
    assert verdict("ui_assert_visible", target="SaveButton")
    assert verdict("ui_assert_enabled", target="SaveButton")
    assert not verdict("ui_assert_enabled", target="SaveButton", expected=False)
    bad_regex = ui.call("ui_assert_text", target="TotalLabel", expected="(", match="regex")
    assert bad_regex.error and "not a valid regular expression" in bad_regex.text


def test_click_diff_reports_what_changed(ui: UIServerClient, app: object) -> None:
    result = ui.call("ui_click", target="AddItemButton", diff=True)
    _ok(result)
    diff = result["diff"]
    assert set(diff) >= {"appeared", "disappeared", "changed"}
    assert any("'New item'" in entry for entry in diff["appeared"]), diff
    assert diff["disappeared"] == []
    assert all(len(diff[kind]) <= 30 for kind in ("appeared", "disappeared", "changed"))
    ui.call("ui_click", target="ItemsTable", row=0, column=0)
    deleted = ui.call("ui_click", target="DeleteSelectedButton", diff=True)
    assert any("'Consulting'" in entry for entry in deleted["diff"]["disappeared"]), deleted
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 50.00"


def test_crash_dialog_opens_is_answered_and_closes(
    ui: UIServerClient, app: object, tmp_path: Path, app_log: Path
) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    _ok(ui.call("ui_type_text", target="FilePathInput", text=str(bad)))
    opened = ui.call("ui_click", target="OpenButton")
    _ok(opened)
    assert opened["windows"]["opened"] == [CRASH_DIALOG]
    assert opened["windows"]["count"] == 2
    assert opened["active_dialog"] == CRASH_DIALOG
    windows = ui.call("ui_list_windows")["windows"]
    assert [w["id"] for w in windows] == ["InvoiceWindow", "CrashDialog"]
    assert windows[1]["is_dialog"] is True and windows[1]["title"] == "Invoice Editor"
    dialog_tree = Path(ui.call("ui_tree", window="CrashDialog")["path"]).read_text("utf-8")
    assert "InvoiceFormatError" in dialog_tree and 'File "' in dialog_tree
    # The main window is blocked while the dialog is open: a clear error, not a lost click.
    blocked = ui.call("ui_click", target="AddItemButton")
    assert blocked.error and "behind the open dialog" in blocked.text
    closed = ui.call("ui_click", target="CrashContinueButton")
    _ok(closed)
    assert closed["windows"] == {"count": 1, "opened": [], "closed": [CRASH_DIALOG]}
    assert "active_dialog" not in closed.data
    assert "ERROR" in app_log.read_text(encoding="utf-8")
    assert ui.call("ui_click", target="AddItemButton")["success"] is True


def test_save_and_reopen_round_trip(ui: UIServerClient, app: object, tmp_path: Path) -> None:
    path = tmp_path / "invoice.json"
    ui.call("ui_type_text", target="FilePathInput", text=str(path))
    ui.call("ui_set_cell", table="ItemsTable", row=0, column=1, text="5")
    saved = ui.call("ui_click", target="SaveButton")
    _ok(saved)
    assert path.exists()
    assert ui.call("ui_get_text", target="StatusLabel").text.startswith("Saved")
    ui.call("ui_set_cell", table="ItemsTable", row=0, column=1, text="1")
    assert ui.call("ui_get_text", target="ItemsTable", row=0, column=3).text == "100.00"
    ui.call("ui_click", target="OpenButton")
    assert ui.call("ui_get_text", target="ItemsTable", row=0, column=1).text == "5"
    assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 550.00"


def test_keys_hover_double_and_right_click_wait(ui: UIServerClient, app: object) -> None:
    keys = ui.call("ui_press_keys", keys="ctrl+a Backspace 7", target="DiscountInput")
    _ok(keys)
    assert ui.call("ui_get_text", target="DiscountInput").text == "7"
    _ok(ui.call("ui_hover", target="SaveButton"))
    double = ui.call("ui_double_click", target="ItemsTable", row=1, column=0)
    assert double["success"] is True and double["action"] == "double_click"
    _ok(ui.call("ui_press_keys", keys="Escape"))
    right = ui.call("ui_right_click", target="AddItemButton")
    assert right["action"] == "right_click"
    ui.call("ui_click", target="AddItemButton")
    waited = ui.call("ui_wait_for", target="ItemsTable", row=2, column=0, condition="value",
                     value="New item", timeout=3)  # fmt: skip
    assert waited["success"] is True, waited
    not_shown = ui.call("ui_wait_for", target="ErrorLabel", condition="visible", timeout=0.3)
    assert not_shown["success"] is False and not_shown["actual"] == "hidden"


def test_expectation_on_a_click(ui: UIServerClient, app: object, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    ui.call("ui_type_text", target="FilePathInput", text=str(missing))
    # A handled error shows the error label: the expectation is met.
    shown = ui.call("ui_click", target="OpenButton", expect_appear=["ErrorLabel"])
    assert shown["success"] is True, shown
    # Nothing makes a CrashDialog appear here: the expectation fails, clearly.
    nothing = ui.call("ui_click", target="AddItemButton", expect_appear=["CrashDialog"],
                      expect_timeout=0.5)  # fmt: skip
    assert nothing["success"] is False and "CrashDialog" in nothing["effect"]


def test_bad_input_gets_clear_errors(ui: UIServerClient, app: object) -> None:
    unknown = ui.call("ui_click", target="AddItemButon")
    assert unknown.error and "no element with id or name 'AddItemButon'" in unknown.text
    assert "AddItemButton" in unknown.text  # the nearest existing id
    ambiguous = ui.call("ui_get_element", target="Discount (%)")  # a label and its field
    assert ambiguous.error and "DiscountInputLabel" in ambiguous.text
    assert "DiscountInput" in ambiguous.text.replace("DiscountInputLabel", "")
    outside = ui.call("ui_get_cell", table="ItemsTable", row=9, column=0)
    assert outside.error and "outside the table" in outside.text
    not_table = ui.call("ui_get_cell", table="SaveButton", row=0, column=0)
    assert not_table.error and "not a table" in not_table.text
    half = ui.call("ui_get_element", target="ItemsTable", row=1)
    assert half.error and "both row and column" in half.text
    keys = ui.call("ui_press_keys", keys="ctrl+Nope")
    assert keys.error and "unknown key 'Nope'" in keys.text
    not_text = ui.call("ui_type_text", target="SaveButton", text="x")
    assert not_text.error and "not a text field" in not_text.text
    wrong_window = ui.call("ui_get_element", target="SaveButton", window="Settings")
    assert wrong_window.error and "no window" in wrong_window.text
    invalid = ui.call("ui_tree", node_budget=0)
    assert invalid.error


def test_screenshots_go_to_files(ui: UIServerClient, app: object) -> None:
    from PIL import Image

    whole = ui.call("ui_screenshot")
    _ok(whole)
    assert set(whole.data) == {"path"}
    with Image.open(whole["path"]) as image:
        assert image.size[0] >= 640
    part = ui.call("ui_screenshot", target="ItemsTable")
    bounds = ui.call("ui_get_element", target="ItemsTable")["bounds"]
    with Image.open(part["path"]) as image:
        assert image.size == (bounds[2], bounds[3])


def test_vanished_app_is_a_clear_error(ui: UIServerClient, app: subprocess.Popen[bytes]) -> None:
    app.terminate()
    app.wait(10)
    gone = ui.call("ui_get_element", target="AddItemButton")
    assert gone.error and "AppNotFoundError" in gone.text


def test_missing_app_is_a_clear_error(backend_name: str, platform: Platform) -> None:
    args = ["-m", "loopkit_ui.server", "--backend", backend_name, "--app-name", "no_such_app",
            "--attach-timeout", "0.2"]  # fmt: skip
    with UIServerClient(args, env=platform.env()) as client:
        answer = client.call("ui_list_windows")
    assert answer.error
    assert "application 'no_such_app' is not running" in answer.text


def test_streamable_http_transport(
    backend_name: str, platform: Platform, app: object, tmp_path: Path
) -> None:
    """The same server over streamable HTTP on loopback, with every backend (Windows too)."""
    import asyncio
    import secrets

    from loopkit.mcp import MCPClient

    # The caller's own token file (0600): the server requires it on every HTTP request.
    token = secrets.token_urlsafe(32)
    token_file = tmp_path / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    server = subprocess.Popen(
        [sys.executable, "-m", "loopkit_ui.server", "--http", "127.0.0.1:0",
         "--backend", backend_name, "--token-file", str(token_file), "--app-name", "invoice_app"],
        env=platform.env(), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        url = line.split()[-1]

        async def use() -> str:
            headers = {"Authorization": f"Bearer {token}"}
            async with MCPClient.http(url, headers=headers) as client:
                result = await client.call_tool("ui_get_text", {"target": "TotalLabel"})
                return "".join(getattr(b, "text", "") for b in result.content)

        assert asyncio.run(use()) == "Total: 250.00"
    finally:
        server.terminate()
        server.wait(10)
