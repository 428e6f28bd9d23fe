"""The AT-SPI backend in process, against the small PySide6 fixture app under Xvfb.

The conformance suite drives the invoice app through the MCP server; these tests pin the
backend's own behaviour (lookup rules, errors, actions, events) on a controlled window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit_ui.backends.atspi import AtspiBackend
from loopkit_ui.backends.protocol import (
    AmbiguousElementError,
    AppNotFoundError,
    ElementDisabledError,
    ElementNotFoundError,
    Expectation,
    Locator,
    TreeNode,
    UIError,
)
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import running_app

from .conftest import MINI_APP, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def L(target: str, **kw: object) -> Locator:
    return Locator(target=target, **kw)  # type: ignore[arg-type]


@pytest.fixture
def backend(headless_desktop: HeadlessDesktop) -> Iterator[AtspiBackend]:
    with running_app(headless_desktop, [PYTHON, str(MINI_APP)]):
        b = AtspiBackend(
            app_name="mini_app",
            bus_address=headless_desktop.a11y_bus_address,
            display=headless_desktop.display,
            attach_timeout=15.0,
        )
        b.attach()
        try:
            yield b
        finally:
            b.close()


def test_reads_tree_element_windows(backend: AtspiBackend) -> None:
    snapshot = backend.snapshot()
    ids = [n.id for n in snapshot.nodes]
    assert ids[:2] == [None, "MiniWindow"]  # the application, then its window
    assert {"NameInput", "GreetButton", "ItemsTable", "ItemsList"} <= set(ids)
    assert not snapshot.truncated
    depth = {n.id: n.depth for n in snapshot.nodes if n.id}
    assert depth["MiniWindow"] == 1 and depth["NameInput"] == 3
    hidden = next(n for n in snapshot.nodes if n.id == "HiddenLabel")
    assert "hidden" in hidden.states
    disabled = next(n for n in snapshot.nodes if n.id == "DisabledButton")
    assert "disabled" in disabled.states
    name_input = next(n for n in snapshot.nodes if n.id == "NameInput")
    assert name_input.text == "world"

    info = backend.get_element(L("NameInput"))
    assert (info.role, info.name, info.text, info.value) == ("text", "Name", "world", "world")
    assert info.enabled and info.visible and info.window == "Mini App"
    assert info.bounds is not None and info.bounds[2] > 0
    assert backend.get_property(L("CountLabel"), "text") == "Rows: 3"
    with pytest.raises(UIError, match="unknown property 'colour'"):
        backend.get_property(L("CountLabel"), "colour")
    windows = backend.list_windows()
    assert [(w.title, w.id, w.is_dialog) for w in windows] == [("Mini App", "MiniWindow", False)]


def test_node_budget_cuts_and_says_so(backend: AtspiBackend) -> None:
    snapshot = backend.snapshot(node_budget=5)
    assert len(snapshot.nodes) == 5
    assert snapshot.truncated
    assert backend.snapshot(window="Mini App").nodes[0].id == "MiniWindow"


def test_lookup_by_id_then_name_and_errors(backend: AtspiBackend) -> None:
    assert backend.get_element(L("Greet")).id == "GreetButton"  # by name
    with pytest.raises(ElementNotFoundError) as missing:
        backend.get_element(L("GreetButon"))
    assert "GreetButton" in missing.value.suggestions
    assert "Nearest existing: GreetButton" in str(missing.value)
    # Make two cells carry the same text: a name lookup must then refuse to guess.
    backend.set_cell(L("ItemsTable", row=1, column=0), "item 0")
    with pytest.raises(AmbiguousElementError) as ambiguous:
        backend.get_element(L("item 0"))
    assert len(ambiguous.value.candidates) == 2
    assert "table cell 'item 0'" in str(ambiguous.value)


def test_table_cells_by_row_and_column(backend: AtspiBackend) -> None:
    cell = backend.get_element(L("ItemsTable", row=2, column=1))
    assert (cell.role, cell.text, cell.row, cell.column) == ("table cell", "20", 2, 1)
    with pytest.raises(ElementNotFoundError, match=r"outside the table \(3 rows x 2 columns"):
        backend.get_element(L("ItemsTable", row=3, column=0))
    with pytest.raises(UIError, match="not a table"):
        backend.get_element(L("NameInput", row=0, column=0))
    result = backend.set_cell(L("ItemsTable", row=0, column=1), "99")
    assert result.success, result
    assert backend.get_element(L("ItemsTable", row=0, column=1)).text == "99"


def test_click_confirms_by_events_and_reports(backend: AtspiBackend) -> None:
    result = backend.click(L("AddRowButton"), diff=True)
    assert result.success and result.action == "click"
    assert "accessibility events" in result.effect
    assert result.windows.count == 1 and result.active_dialog is None
    assert result.diff is not None
    assert "table cell 'new'" in result.diff.appeared
    assert any("#CountLabel: name 'Rows: 3' -> 'Rows: 4'" in c for c in result.diff.changed)
    assert backend.get_element(L("CountLabel")).text == "Rows: 4"
    # The accessible-action route reaches the same effect, later (Qt animates the press).
    result = backend.click(L("AddRowButton"), method="action")
    assert result.success and backend.get_element(L("CountLabel")).text == "Rows: 5"


def test_click_without_effect_says_so(backend: AtspiBackend) -> None:
    backend.click(L("GreetButton"))
    again = backend.click(L("GreetButton"))  # same greeting, focus already there
    assert again.success
    assert again.effect.startswith("no accessibility event")


def test_type_text_and_keys(backend: AtspiBackend) -> None:
    result = backend.type_text(L("NameInput"), "Zoë 42")
    assert result.success, result
    assert backend.get_element(L("NameInput")).text == "Zoë 42"
    backend.type_text(L("NameInput"), "!", clear=False)
    assert backend.get_element(L("NameInput")).text == "Zoë 42!"
    backend.press_keys("Backspace", locator=L("NameInput"))
    assert backend.get_element(L("NameInput")).text == "Zoë 42"
    backend.click(L("GreetButton"))
    assert backend.get_element(L("GreetingLabel")).text == "Hello, Zoë 42!"
    with pytest.raises(UIError, match="unknown key 'Foo'"):
        backend.press_keys("ctrl+Foo")
    with pytest.raises(UIError, match="not a text field"):
        backend.type_text(L("GreetButton"), "x")


def test_dialog_is_a_window_and_blocks_the_main_window(backend: AtspiBackend) -> None:
    opened = backend.click(L("DialogButton"), expect=Expectation(appear=["ConfirmOkButton"]))
    assert opened.success, opened
    assert opened.windows.opened == ["Confirm #ConfirmDialog"]
    assert opened.active_dialog == "Confirm #ConfirmDialog"
    assert [w.title for w in backend.list_windows()] == ["Mini App", "Confirm"]
    with pytest.raises(UIError, match="behind the open dialog 'Confirm #ConfirmDialog'"):
        backend.click(L("GreetButton"))
    closed = backend.click(L("ConfirmCancelButton"))
    assert closed.windows.closed == ["Confirm #ConfirmDialog"] and closed.windows.count == 1
    assert closed.active_dialog is None
    assert backend.get_element(L("AnswerLabel")).text == "Answer: cancel"


def test_disabled_select_wait_and_screenshot(backend: AtspiBackend, tmp_path: Path) -> None:
    with pytest.raises(ElementDisabledError, match="DisabledButton is disabled"):
        backend.click(L("DisabledButton"))
    assert "selected" not in backend.get_element(L("Cherry")).states
    result = backend.select_item(L("ItemsList"), "Cherry")
    assert result.success, result
    assert "selected" in backend.get_element(L("Cherry")).states
    with pytest.raises(ElementNotFoundError, match="no item 'Durian'"):
        backend.select_item(L("ItemsList"), "Durian")
    waited = backend.wait_for(L("HiddenLabel"), "visible", timeout=0.3)
    assert not waited.success and waited.actual == "hidden"
    backend.click(L("GreetButton"))
    # success means: within its 2 s timeout (the click's own time is not the wait's to bound)
    waited = backend.wait_for(L("GreetingLabel"), "text", value="Hello, world!", timeout=2)
    assert waited.success
    shot = backend.screenshot(str(tmp_path / "table.png"), locator=L("ItemsTable"))
    from PIL import Image

    with Image.open(shot) as image:
        bounds = backend.get_element(L("ItemsTable")).bounds
        assert bounds is not None and image.size == (bounds[2], bounds[3])


def test_missing_and_vanished_app(headless_desktop: HeadlessDesktop) -> None:
    missing = AtspiBackend(
        app_name="no_such_app", bus_address=headless_desktop.a11y_bus_address, attach_timeout=0.2
    )
    with pytest.raises(AppNotFoundError, match="application 'no_such_app' is not running"):
        missing.attach()
    missing.close()
    with running_app(headless_desktop, [PYTHON, str(MINI_APP)]) as proc:
        b = AtspiBackend(
            app_name="mini_app", bus_address=headless_desktop.a11y_bus_address, attach_timeout=15
        )
        assert b.attach().pid == proc.pid
        proc.terminate()
        proc.wait(5)
        b.attach_timeout = 0.2
        with pytest.raises(AppNotFoundError):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                b.get_element(L("GreetButton"))
                time.sleep(0.05)
        b.close()


def test_drag_and_drop_reorders_a_list(backend: AtspiBackend) -> None:
    def order() -> list[str]:
        names = ("first", "second", "third")
        return [n.name for n in backend.snapshot().nodes if n.name in names]

    assert order() == ["first", "second", "third"]
    result = backend.drag_and_drop(L("first"), L("third"))
    assert result.success and result.action == "drag_and_drop"
    assert order() == ["second", "third", "first"]


def test_a_window_that_opens_and_closes_within_one_action_is_reported(
    backend: AtspiBackend,
) -> None:
    """The blink dialog is gone before the click's answer: comparing the windows before and
    after sees nothing, the report must still name it as opened and closed."""
    for count in (1, 2):
        # The count label changes only after the dialog closed: the click waits for that.
        result = backend.click(L("BlinkButton"), expect=Expectation(appear=[f"Blinks: {count}"]))
        assert result.success, result
        assert result.windows.count == 1 and result.active_dialog is None
        assert [w.split(" #")[0] for w in result.windows.opened] == ["Blink"], result.windows
        assert result.windows.closed == result.windows.opened
    assert [w.title for w in backend.list_windows()] == ["Mini App"]


def _shown(nodes: list[TreeNode]) -> list[tuple[object, ...]]:
    return [(n.key, n.parent, n.depth, n.role, n.name, n.id, n.states, n.text) for n in nodes]


def test_the_mirror_follows_changes_from_events_and_matches_a_full_read(
    backend: AtspiBackend,
) -> None:
    """The tree the lookups, ui_tree and the diff read is kept current from events: after rows
    are added, text typed and a list reordered it equals a fresh bulk read, without reading the whole tree again;
    and text typed into one field costs a handful of calls to follow, where a whole read costs
    about four a node."""
    nodes = backend.snapshot().nodes
    assert backend.mirror.complete
    backend.click(L("AddRowButton"), diff=True)
    backend.type_text(L("NameInput"), "mirror")
    backend.click(L("AddRowButton"), diff=True)
    assert backend.drag_and_drop(L("first"), L("third")).success  # the list's order changes
    time.sleep(0.5)  # late events (focus, the row's cells) arrive before the comparison
    report = backend.mirror.sync()
    assert not report.full, report
    mirrored = backend.mirror.tree()[0]
    direct, truncated = backend.reader.read(budget=5000)
    assert not truncated
    assert _shown(mirrored) == _shown([n.to_tree_node() for n in direct])
    assert len(mirrored) == len(nodes) + 2 * 3  # two rows of three cells
    # Text typed into one field: the mirror reads that field again (and the focus), nothing else.
    backend.type_text(L("NameInput"), "again")
    time.sleep(0.3)
    backend.mirror.sync()
    last = backend.mirror.last
    assert not last.full and last.calls < 10, last


def test_closing_wakes_a_thread_waiting_for_events(headless_desktop: HeadlessDesktop) -> None:
    # Closing used to leave a waiter (the window-notes thread: up to 0.5 s; here 60 s) asleep
    # until its timeout, so every close of a backend (wait_app, the server's exit, a re-attach
    # after the app restarted) waited that long.
    with running_app(headless_desktop, [PYTHON, str(MINI_APP)]):
        b = AtspiBackend(
            app_name="mini_app",
            bus_address=headless_desktop.a11y_bus_address,
            display=headless_desktop.display,
            attach_timeout=15.0,
        )
        b.attach()
        monitor = b._monitor
        assert monitor is not None
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(monitor.wait_after(10**9, 60.0)))
        waiter.start()
        notes_thread = b._notes._thread if b._notes is not None else None
        b.close()
        waiter.join(20.0)
        assert not waiter.is_alive() and got == [[]]
        assert monitor.closed
        assert notes_thread is not None and not notes_thread.is_alive()


def test_a_selection_in_a_big_table_rereads_only_the_rows_it_touched(
    headless_desktop: HeadlessDesktop,
) -> None:
    """Selecting a row of an 80-row table (240 children) changes the states of two rows' cells;
    the mirror re-reads those (and the ones it had marked selected), not every child, and still
    equals a full read afterwards."""
    with running_app(headless_desktop, [PYTHON, str(MINI_APP), "--rows", "80"]):
        backend = AtspiBackend(app_name="mini_app", bus_address=headless_desktop.a11y_bus_address,
                               display=headless_desktop.display, attach_timeout=15.0)  # fmt: skip
        try:
            backend.attach()
            backend.snapshot()
            for row in ("#3", "#5", "#2", "#6"):
                assert backend.select_item(L("ItemsTable"), row).success
                time.sleep(0.3)  # late events arrive before the sync
                report = backend.mirror.sync()
                assert not report.full and report.calls < 60, report
            mirrored = backend.mirror.tree()[0]
            direct, _ = backend.reader.read(budget=5000)
            assert _shown(mirrored) == _shown([n.to_tree_node() for n in direct])
            selected = [n.name for n in mirrored if "selected" in n.states]
            assert "item 6" in selected and "item 3" not in selected, selected
        finally:
            backend.close()
