"""Each card's acceptance criteria, checked through the UI server like a tester would.

These checks know nothing of the transcripts or the fix: they use only the ids the app had before
any card ran, and find new dialogs and buttons by what a user sees (window lists, names).

A check tells two kinds of failure apart. A criterion of the card that does not hold raises
:class:`CriterionNotMet`, naming the card and the criterion (numbered as in the card file).
Anything else (the app not starting, a UI call that errors) is a plain ``AssertionError``: the
negative control on the unfixed app must see the first, never the second.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loopkit import Card
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import ToolAnswer, UIServerClient, running_app

CARDS = Path(__file__).resolve().parents[2] / "examples" / "cards"


class CriterionNotMet(Exception):  # not an AssertionError: a broken check must not pass for it
    """One acceptance criterion of a card does not hold in the running app."""

    def __init__(self, card: str, number: int, criterion: str, detail: str) -> None:
        super().__init__(f"{card}: criterion {number} not met ({criterion}): {detail}")
        self.card = card
        self.number = number
        self.criterion = criterion
        self.detail = detail


class Criteria:
    """The acceptance criteria of one card file, numbered from 1 as they are listed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items = Card.load(CARDS / f"{name}.md").acceptance_criteria
        assert self.items, f"{name}: the card lists no acceptance criteria"

    def require(self, number: int, holds: bool, detail: str) -> None:
        """Raise :class:`CriterionNotMet` for criterion ``number`` unless ``holds``."""
        if not holds:
            raise CriterionNotMet(self.name, number, self.items[number - 1], detail)


def text(ui: UIServerClient, target: str) -> str:
    answer = ui.call("ui_get_text", target=target)
    assert not answer.error, answer
    return answer.text


def acted(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"], answer
    return answer


def total_subtracts_the_discount(ui: UIServerClient) -> None:
    c = Criteria("total-ignores-the-discount")
    acted(ui.call("ui_type_text", target="DiscountInput", text="10"))
    assert text(ui, "SubtotalLabel") == "Subtotal: 250.00"  # the sample items: a precondition
    total = text(ui, "TotalLabel")
    c.require(1, total == "Total: 225.00", f"with a discount of 10 the label reads {total!r}")
    acted(ui.call("ui_type_text", target="DiscountInput", text="0"))
    total = text(ui, "TotalLabel")
    c.require(2, total == "Total: 250.00", f"with a discount of 0 the label reads {total!r}")
    acted(ui.call("ui_type_text", target="DiscountInput", text="20"))
    total = text(ui, "TotalLabel")  # at once, no other click
    c.require(3, total == "Total: 200.00", f"after typing 20 the label reads {total!r}")


def _dialogs(ui: UIServerClient) -> list[dict]:
    answer = ui.call("ui_list_windows")
    assert not answer.error, answer
    return [w for w in answer["windows"] if w.get("is_dialog") or w["title"] != "Invoice Editor"]


def _await_dialogs(ui: UIServerClient) -> list[dict]:
    deadline = time.monotonic() + 3
    while not (dialogs := _dialogs(ui)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return dialogs


def _dialog_text(ui: UIServerClient, dialog: dict) -> str:
    tree = ui.call("ui_tree", window=dialog.get("id") or dialog["title"])
    assert not tree.error, tree
    return Path(tree["path"]).read_text(encoding="utf-8")


def _first_item(ui: UIServerClient) -> str:
    cell = ui.call("ui_get_cell", table="ItemsTable", row=0, column=0)
    assert not cell.error, cell
    return str(cell["text"])


def delete_asks_first(ui: UIServerClient) -> None:
    c = Criteria("delete-asks-for-confirmation")
    # No row selected: nothing happens.
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    dialogs, total = _dialogs(ui), text(ui, "TotalLabel")
    c.require(3, dialogs == [], f"with no row selected a window opened: {dialogs}")
    c.require(3, total == "Total: 250.00", f"with no row selected the total became {total!r}")
    # A row selected: a dialog names the item.
    acted(ui.call("ui_click", target="ItemsTable", row=0, column=0))
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    dialogs = _await_dialogs(ui)
    c.require(1, bool(dialogs), f"no dialog opened; the first item is now {_first_item(ui)!r}")
    c.require(1, "Consulting" in _dialog_text(ui, dialogs[0]), "the dialog does not name the item")
    # No: everything stays.
    acted(ui.call("ui_click", target="No", window=dialogs[0]["title"]))
    first, total = _first_item(ui), text(ui, "TotalLabel")
    c.require(2, _dialogs(ui) == [], "the dialog stayed open after No")
    c.require(
        2, (first, total) == ("Consulting", "Total: 250.00"), f"after No: {first!r}, {total!r}"
    )
    # Yes: the row goes and the totals follow.
    acted(ui.call("ui_click", target="DeleteSelectedButton"))
    dialogs = _await_dialogs(ui)
    c.require(1, bool(dialogs), "no dialog opened the second time")
    acted(ui.call("ui_click", target="Yes", window=dialogs[0]["title"]))
    first, total = _first_item(ui), text(ui, "TotalLabel")
    c.require(2, (first, total) == ("Travel", "Total: 50.00"), f"after Yes: {first!r}, {total!r}")


def _cell(ui: UIServerClient, row: int, column: int) -> str:
    cell = ui.call("ui_get_cell", table="ItemsTable", row=row, column=column)
    assert not cell.error, cell
    return str(cell["text"])


def only_valid_numbers(ui: UIServerClient) -> None:
    c = Criteria("validate-quantity-and-price")
    # (criterion, row, column, refused input, the cell's value before)
    for number, row, column, bad, before in [
        (1, 0, 1, "-3", "2"),
        (2, 1, 2, "abc", "50.00"),
        (1, 0, 2, "-1", "100.00"),
        (2, 1, 1, "x1", "1"),
    ]:
        ui.call("ui_set_cell", table="ItemsTable", row=row, column=column, text=bad)
        now = _cell(ui, row, column)
        c.require(number, now == before, f"{bad!r} in column {column} was kept as {now!r}")
        shown = ui.call("ui_assert_visible", target="ErrorLabel")
        assert shown.data is not None, shown  # a verdict, not a broken call
        c.require(number, bool(shown["passed"]), f"{bad!r}: no error label shown")
        c.require(number, bool(text(ui, "ErrorLabel").strip()), f"{bad!r}: the error is empty")
        total = text(ui, "TotalLabel")
        c.require(number, total == "Total: 250.00", f"{bad!r}: the total became {total!r}")
    acted(ui.call("ui_set_cell", table="ItemsTable", row=0, column=1, text="2.5"))
    quantity, line, total = _cell(ui, 0, 1), _cell(ui, 0, 3), text(ui, "TotalLabel")
    c.require(
        3,
        (quantity, line, total) == ("2.5", "250.00", "Total: 300.00"),
        f"after 2.5: quantity {quantity!r}, line total {line!r}, {total!r}",
    )


ACCEPTANCE: dict[str, Callable[[UIServerClient], None]] = {
    "total-ignores-the-discount": total_subtracts_the_discount,
    "delete-asks-for-confirmation": delete_asks_first,
    "validate-quantity-and-price": only_valid_numbers,
}


@dataclass
class AppUnderTest:
    """The running app and the UI server attached to it."""

    ui: UIServerClient
    proc: subprocess.Popen[bytes]

    def answering(self) -> bool:
        """The app process is alive and its window answers through the server."""
        return (
            self.proc.poll() is None and not self.ui.call("ui_get_text", target="TotalLabel").error
        )


@contextmanager
def app_under_test(desktop: HeadlessDesktop, app_parent: Path, log: Path) -> Iterator[AppUnderTest]:
    """The invoice app from ``app_parent`` on the desktop, and the UI server attached to it.

    Fails (AssertionError) unless the app comes up and answers within 20 s: a check must never
    run, and fail, against an app that is not there.
    """
    env = desktop.child_env({"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "INVOICE_APP_LOG": str(log)})
    argv = [sys.executable, "-m", "invoice_app"]
    with running_app(desktop, argv, cwd=str(app_parent), env=env) as proc:
        server_env = desktop.child_env({"LOOPKIT_UI_OUTPUT_DIR": str(log.parent / "ui")})
        with UIServerClient(
            ["-m", "loopkit_ui.server", "--app-name", "invoice_app"], env=server_env
        ) as ui:
            app = AppUnderTest(ui, proc)
            deadline = time.monotonic() + 20
            while not app.answering():
                assert proc.poll() is None, (
                    f"the invoice app from {app_parent} exited with {proc.returncode}"
                )
                assert time.monotonic() < deadline, (
                    f"the invoice app from {app_parent} did not answer within 20 s"
                )
                time.sleep(0.2)
            yield app
