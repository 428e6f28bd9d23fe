"""Each card's acceptance criteria, checked through the UI server like a tester would.

These checks know nothing of the transcripts or the fix: they use only the ids the app had before
any card ran, and find new dialogs and buttons by what a user sees (window lists, names).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from loopkit_ui.session import HeadlessDesktop
from loopkit_ui.testing import ToolAnswer, UIServerClient, running_app


def text(ui: UIServerClient, target: str) -> str:
    answer = ui.call("ui_get_text", target=target)
    assert not answer.error, answer
    return answer.text


def acted(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"], answer
    return answer


def total_subtracts_the_discount(ui: UIServerClient) -> None:
    acted(ui.call("ui_type_text", target="DiscountInput", text="10"))
    assert text(ui, "SubtotalLabel") == "Subtotal: 250.00"
    assert text(ui, "TotalLabel") == "Total: 225.00"
    acted(ui.call("ui_type_text", target="DiscountInput", text="0"))
    assert text(ui, "TotalLabel") == "Total: 250.00"
    acted(ui.call("ui_type_text", target="DiscountInput", text="20"))
    assert text(ui, "TotalLabel") == "Total: 200.00"  # at once, no other click


def _dialogs(ui: UIServerClient) -> list[dict]:
    answer = ui.call("ui_list_windows")
    assert not answer.error, answer
    return [w for w in answer["windows"] if w.get("is_dialog") or w["title"] != "Invoice Editor"]


def _dialog_text(ui: UIServerClient, dialog: dict) -> str:
    tree = ui.call("ui_tree", window=dialog.get("id") or dialog["title"])
    assert not tree.error, tree
    return Path(tree["path"]).read_text(encoding="utf-8")


def delete_asks_first(ui: UIServerClient) -> None:
    # No row selected: nothing happens.
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    assert _dialogs(ui) == []
    assert text(ui, "TotalLabel") == "Total: 250.00"
    # A row selected: a dialog names the item.
    acted(ui.call("ui_click", target="ItemsTable", row=0, column=0))
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    deadline = time.monotonic() + 3
    while not (dialogs := _dialogs(ui)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dialogs, "Delete selected with a row selected opened no dialog"
    assert "Consulting" in _dialog_text(ui, dialogs[0]), "the dialog does not name the item"
    # No: everything stays.
    acted(ui.call("ui_click", target="No", window=dialogs[0]["title"]))
    assert _dialogs(ui) == []
    assert ui.call("ui_get_cell", table="ItemsTable", row=0, column=0)["text"] == "Consulting"
    assert text(ui, "TotalLabel") == "Total: 250.00"
    # Yes: the row goes and the totals follow.
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    deadline = time.monotonic() + 3
    while not (dialogs := _dialogs(ui)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dialogs
    acted(ui.call("ui_click", target="Yes", window=dialogs[0]["title"]))
    assert ui.call("ui_get_cell", table="ItemsTable", row=0, column=0)["text"] == "Travel"
    assert text(ui, "TotalLabel") == "Total: 50.00"


def _cell(ui: UIServerClient, row: int, column: int) -> str:
    return str(ui.call("ui_get_cell", table="ItemsTable", row=row, column=column)["text"])


def only_valid_numbers(ui: UIServerClient) -> None:
    for row, column, bad, before in [
        (0, 1, "-3", "2"),
        (1, 2, "abc", "50.00"),
        (0, 2, "-1", "100.00"),
        (1, 1, "x1", "1"),
    ]:
        ui.call("ui_set_cell", table="ItemsTable", row=row, column=column, text=bad)
        assert _cell(ui, row, column) == before, f"{bad!r} was accepted in column {column}"
        assert ui.call("ui_assert_visible", target="ErrorLabel")["passed"], "no error shown"
        assert text(ui, "ErrorLabel").strip(), "the error label is empty"
        assert text(ui, "TotalLabel") == "Total: 250.00"
    acted(ui.call("ui_set_cell", table="ItemsTable", row=0, column=1, text="2.5"))
    assert _cell(ui, 0, 1) == "2.5"
    assert _cell(ui, 0, 3) == "250.00"
    assert text(ui, "TotalLabel") == "Total: 300.00"


ACCEPTANCE: dict[str, Callable[[UIServerClient], None]] = {
    "total-ignores-the-discount": total_subtracts_the_discount,
    "delete-asks-for-confirmation": delete_asks_first,
    "validate-quantity-and-price": only_valid_numbers,
}


@contextmanager
def app_under_test(
    desktop: HeadlessDesktop, app_parent: Path, log: Path
) -> Iterator[UIServerClient]:
    """The invoice app from ``app_parent`` on the desktop, and the UI server attached to it."""
    env = desktop.child_env({"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "INVOICE_APP_LOG": str(log)})
    with running_app(desktop, [sys.executable, "-m", "invoice_app"], cwd=str(app_parent), env=env):
        server_env = desktop.child_env({"LOOPKIT_UI_OUTPUT_DIR": str(log.parent / "ui")})
        with UIServerClient(
            ["-m", "loopkit_ui.server", "--app-name", "invoice_app"], env=server_env
        ) as ui:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if not ui.call("ui_get_text", target="TotalLabel").error:
                    break
                time.sleep(0.2)
            yield ui
