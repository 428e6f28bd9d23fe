"""The Linux backend: AT-SPI over D-Bus, with synthesized input and event-driven confirmation.

Every action follows one pattern (:meth:`~loopkit_ui.backends.atspi_actions.AtspiActions._act`):
note the top-level windows (and, with ``diff``, the tree), deliver the input, wait for the
application's accessibility events to start and then settle (or for the caller's expectation),
then report windows opened/closed, the active dialog and the diff. Clicks go through synthesized
input at the element's centre by default; ``method="action"`` uses the accessible action
("Press", ~100 ms slower in Qt).
"""

from __future__ import annotations

import time

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_core import a11y_bus_address
from loopkit_ui.backends.atspi_input import parse_keys
from loopkit_ui.backends.atspi_text import AtspiText
from loopkit_ui.backends.atspi_tree import TEXT_ROLES
from loopkit_ui.backends.lookup import changed_content
from loopkit_ui.backends.protocol import (
    ActionResult,
    ClickMethod,
    ElementNotFoundError,
    ElementVanishedError,
    Expectation,
    Locator,
    MouseButton,
    TreeNode,
    UIError,
    WaitCondition,
    WaitResult,
)

__all__ = ["AtspiBackend", "a11y_bus_address"]

_PRESS_ACTIONS = ("press", "click", "activate", "toggle", "jump", "open")
#: How long a hover waits for the tooltip of an element that has one.
TOOLTIP_WAIT = 2.0


class AtspiBackend(AtspiText):
    """AT-SPI backend (Linux). Configure the application by ``app_name`` or ``pid``."""

    # -- actions -----------------------------------------------------------------------------

    def click(
        self,
        locator: Locator,
        *,
        button: MouseButton = "left",
        count: int = 1,
        method: ClickMethod = "auto",
        expect: Expectation | None = None,
        diff: bool = False,
    ) -> ActionResult:
        """Click (``count=2``: double-click) and wait for the effect."""
        if count not in (1, 2, 3):
            raise UIError(f"count must be 1, 2 or 3, got {count}")

        def run() -> ActionResult:
            node, label = self._target(locator)
            point = self._center(node, label) if method != "action" else None
            if method == "input" and point is None:
                raise UIError(f"{label} is not on screen (no extents); it cannot be clicked")
            name = {"left": "click", "right": "right_click", "middle": "middle_click"}[button]
            name = "double_click" if count == 2 else name
            if point is not None:
                return self._act(
                    name,
                    label,
                    lambda: self.input.click(*point, button=button, count=count),
                    expect=expect,
                    diff=diff,
                )
            if button != "left" or count != 1:
                raise UIError(f"{label}: only a single left click can use the accessible action")
            return self._act(
                name,
                label,
                lambda: self._do_action(node, label, _PRESS_ACTIONS) and None,
                expect=expect,
                diff=diff,
            )

        return self._guarded(run)

    def hover(self, locator: Locator) -> ActionResult:
        """Move the pointer over the element's centre. An element with a tooltip (Qt gives a
        widget's tooltip as its accessible description) shows it after a delay (700 ms in Qt):
        the hover waits for it, up to :data:`TOOLTIP_WAIT` seconds, as for any popup."""

        def run() -> ActionResult:
            node, label = self._target(locator, need_enabled=False)
            point = self._center(node, label)
            if point is None:
                raise UIError(f"{label} is not on screen; cannot hover over it")
            description = self.reader.call(
                node.key, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Description")
            )[0]

            top = self._window_path_of(node)
            windows = dict(self._op_windows or self._windows())
            active = top is None or top not in windows or windows[top].active

            def tooltip_shows() -> bool:
                return any(w.kind == "tooltip" for _, w in self._windows())

            def perform() -> str | None:
                self.input.move(*point)
                if description and active:
                    self.monitor.wait_until(tooltip_shows, timeout=TOOLTIP_WAIT, recheck=0.05)
                return None

            result = self._act("hover", label, perform)
            if description and not active:
                result.detail = (
                    f"its tooltip {description!r} shows only in the active window (Qt): focus "
                    "the window first (ui_window action=focus, or click in it)"
                )
            return result

        return self._guarded(run)

    def press_keys(
        self, keys: str, *, locator: Locator | None = None, diff: bool = False
    ) -> ActionResult:
        """Press keys (``"ctrl+s"``, ``"Enter"``, ``"shift+Tab Tab"``) on the focused element,
        or on ``locator`` after focusing it."""
        try:
            strokes = parse_keys(keys)
        except ValueError as error:
            raise UIError(str(error)) from error

        def run() -> ActionResult:
            label = "(focused element)"
            node = None
            if locator is not None:
                node, label = self._target(locator)

            def perform() -> None:
                if node is not None:
                    self._focus(node, label)
                self.input.keys(strokes)

            return self._act("press_keys", label, perform, diff=diff)

        return self._guarded(run)

    def select_item(self, locator: Locator, item: str, *, diff: bool = False) -> ActionResult:
        """Select an item of a list, tab list, combo box or table by name, or by number:
        ``"#N"`` is the item at index N counting from 0 (on a table: data row N, headers
        excluded, as ``row`` counts everywhere). A combo box is opened and the item clicked;
        a table row is selected by clicking its first cell."""

        def run() -> ActionResult:
            node, label = self._target(locator)
            if node.role in ("table", "tree table"):
                return self._select_row(node, label, item, diff)
            if node.role == "combo box":
                return self._select_in_combo(node, label, item, diff)
            children = [p for _, p in self.reader.call(node.key, C.ACCESSIBLE, "GetChildren")[0]]
            index, names = self._pick(children, label, item)
            child = TreeNode(key=children[index], parent=node.key, depth=0, role="list item")
            point = self._center(child, label)
            states = self.reader.states(child.key)

            def perform() -> None:
                if point is not None and "showing" in states:
                    self.input.click(*point)
                else:
                    self.reader.call(node.key, C.SELECTION, "SelectChild", "i", (index,))

            def verify() -> tuple[bool, str]:
                now = self.reader.states(child.key)
                return "selected" in now, f"item {names[index]!r} selected: {'selected' in now}"

            return self._act(
                f"select_item {names[index]!r}", label, perform, diff=diff, verify=verify
            )

        return self._guarded(run)

    def _names(self, paths: list[str]) -> list[str]:
        t = self.reader.t
        replies = self.reader.client.call_many([(t.name, p) for p in paths], timeout=self.timeout)
        return ["" if isinstance(r, Exception) else str(r[0]) for r in replies]

    def _pick(self, items: list[str], label: str, item: str) -> tuple[int, list[str]]:
        """The index of ``item`` (a name, or ``#N`` from 0) among ``items``, and their names."""
        names = self._names(items)
        if item.startswith("#") and item[1:].isdigit():
            index = int(item[1:])
            if index >= len(items):
                raise ElementNotFoundError(
                    f"{label} has {len(items)} items; no item #{index} (items count from 0)"
                )
            return index, names
        if item in names:
            return names.index(item), names
        raise ElementNotFoundError(
            f"{label} has no item {item!r}; items: {', '.join(map(repr, names[:30]))}"
        )

    def _select_row(self, table: TreeNode, label: str, item: str, diff: bool) -> ActionResult:
        rows = self.reader.call(table.key, C.PROPERTIES, "Get", "ss", (C.TABLE, "NRows"))[0]
        if item.startswith("#") and item[1:].isdigit():
            row = int(item[1:])
            if row >= rows:
                raise ElementNotFoundError(
                    f"{label} has {rows} rows; no row #{row} (rows count from 0, headers excluded)"
                )
        else:
            children = [p for _, p in self.reader.call(table.key, C.ACCESSIBLE, "GetChildren")[0]]
            names = self._names(children)
            cells = [
                position
                for path, name in zip(children, names, strict=True)
                if name == item and (position := self.reader.cell_position(table.key, path))
            ]
            if not cells:
                raise ElementNotFoundError(f"{label} has no cell named {item!r} in any row")
            row = cells[0][0]
        cell = TreeNode(
            key=self.reader.cell(table.key, row, 0), parent=table.key, depth=0, role="table cell"
        )
        name = self._names([cell.key])[0]
        point = self._center(cell, label)

        def perform() -> None:
            if point is not None and "showing" in self.reader.states(cell.key):
                self.input.click(*point)
            else:
                self.reader.call(table.key, C.TABLE, "AddRowSelection", "i", (row,))

        def verify() -> tuple[bool, str]:
            selected = "selected" in self.reader.states(cell.key)
            return selected, f"row {row} {name!r} selected: {selected}"

        return self._act(
            f"select_item row {row} {name!r}", label, perform, diff=diff, verify=verify
        )

    def _select_in_combo(self, combo: TreeNode, label: str, item: str, diff: bool) -> ActionResult:
        """Open the drop-down (a click on the combo box), click the item, read the value."""
        t = self.reader.t
        children = [p for _, p in self.reader.call(combo.key, C.ACCESSIBLE, "GetChildren")[0]]
        roles = self.reader.client.call_many([(t.role, p) for p in children], timeout=self.timeout)
        lists = [
            p
            for p, r in zip(children, roles, strict=True)
            if not isinstance(r, Exception) and C.role_name(r[0]) in ("list", "list box", "menu")
        ]
        if not lists:
            raise UIError(f"{label} is a combo box without a drop-down list to choose from")
        items = [p for _, p in self.reader.call(lists[0], C.ACCESSIBLE, "GetChildren")[0]]
        index, names = self._pick(items, label, item)
        wanted = TreeNode(key=items[index], parent=lists[0], depth=0, role="list item")
        opener = self._center(combo, label)

        def showing() -> bool:
            # Qt reports the items as showing even when the drop-down is shut; the list is not.
            return "showing" in self.reader.states(lists[0])

        def perform() -> str | None:
            if not showing():
                if opener is None:
                    return f"{label} is not on screen; its drop-down cannot be opened"
                self.input.click(*opener)
                if not self.monitor.wait_until(showing, timeout=1.5, recheck=0.02):
                    return f"the drop-down of {label} did not show {names[index]!r}"
            point = self._center(wanted, label)
            if point is None:
                return f"{names[index]!r} in the drop-down of {label} is not on screen"
            self.input.click(*point)
            return None

        def verify() -> tuple[bool, str]:
            now = self.reader.element(combo.key).name
            return now == names[index], f"{label} shows {now!r}"

        return self._act(f"select_item {names[index]!r}", label, perform, diff=diff, verify=verify)

    def drag_and_drop(
        self, source: Locator, target: Locator, *, diff: bool = False
    ) -> ActionResult:
        """Press on ``source``, move to ``target`` in steps, release. A drop that changed
        nothing in the tree (nothing moved, appeared, disappeared or changed; focus and
        selection do not count) is reported as not taken: success false."""

        def run() -> ActionResult:
            src, src_label = self._target(source)
            dst, dst_label = self._target(target, need_enabled=False)
            start, end = self._center(src, src_label), self._center(dst, dst_label)
            if start is None or end is None:
                raise UIError("both elements of a drag and drop must be on screen")

            def perform() -> None:
                self.input.press(*start)
                steps = 5
                for i in range(1, steps + 1):
                    # Qt starts a drag only after the pointer moved past the drag distance in
                    # separate motion events; give its event loop a moment between them.
                    time.sleep(0.02)
                    x = start[0] + (end[0] - start[0]) * i // steps
                    y = start[1] + (end[1] - start[1]) * i // steps
                    self.input.move(x, y)
                time.sleep(0.02)
                self.input.release(*end)

            result = self._act("drag_and_drop", f"{src_label} -> {dst_label}", perform, diff=True)
            if result.success and result.diff is not None and not changed_content(result.diff):
                result.success = False
                result.detail = (
                    f"the drop changed nothing: no element moved, appeared, disappeared or "
                    f"changed (only focus or selection); {dst_label} may not take this drop"
                )
            if not diff:
                result.diff = None
            return result

        return self._guarded(run)

    def set_cell(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """Edit a table cell like a user: double-click it, replace the text, press Enter."""
        if locator.row is None or locator.column is None:
            raise UIError(f"set_cell needs row and column (got {locator.describe()})")

        def run() -> ActionResult:
            node, label = self._target(locator)
            point = self._center(node, label)
            if point is None:
                raise UIError(f"{label} is not on screen (scroll it into view first)")

            def perform() -> str | None:
                seq = self.monitor.seq
                self.input.click(*point, count=2)

                # The editor opens as a new focused text field: type only into that, never
                # into whatever else has the focus.
                def editor_role() -> str | None:
                    focused = [
                        e.path
                        for e in self.monitor.since(seq)
                        if e.kind == "Focus:Focus"
                        or (e.kind == "Object:StateChanged" and e.detail == "focused" and e.detail1)
                    ]
                    return self._role_of(focused[-1]) if focused else None

                # On a busy machine the editor's focus event can come late, after a quiet gap:
                # wait a little longer for it before calling the cell read-only.
                self.monitor.wait_settled(seq, first=2.0, quiet=self.settle_quiet, cap=1.0)
                editor = editor_role()
                if editor not in TEXT_ROLES:
                    self.monitor.wait_until(lambda: editor_role() in TEXT_ROLES, timeout=1.0)
                    editor = editor_role()
                if editor not in TEXT_ROLES:
                    return (
                        f"double-clicking {label} opened no editor "
                        f"(focus: {editor or 'unchanged'}); the cell is read-only "
                        "or not editable by double-click; nothing typed"
                    )
                self.input.keys(parse_keys("ctrl+a"))
                self.input.type_string(text)
                self.input.keys(parse_keys("Enter"))
                return None

            def verify() -> tuple[bool, str]:
                cell = self._find(locator)
                name = self.reader.call(
                    cell.key, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Name")
                )[0]
                return name == text, f"cell text is now {name!r}"

            return self._act("set_cell", label, perform, diff=diff, verify=verify)

        return self._guarded(run)

    # -- waiting -----------------------------------------------------------------------------

    def wait_for(
        self,
        locator: Locator,
        condition: WaitCondition,
        *,
        value: str | None = None,
        timeout: float = 5.0,
    ) -> WaitResult:
        """Wait (event-driven) until the element appears, disappears, is enabled/disabled or
        visible, or its value/text equals ``value``."""
        if condition in ("value", "text") and value is None:
            raise UIError(f"wait_for {condition!r} needs a value to wait for")

        def run() -> WaitResult:
            start = time.perf_counter()
            actual: list[str | None] = [None]

            def check() -> bool:
                try:
                    info = self._element(locator)
                except (ElementNotFoundError, ElementVanishedError):
                    actual[0] = "absent"
                    return condition == "disappear"
                actual[0] = {
                    "appear": "visible" if info.visible else "hidden",
                    "disappear": "visible" if info.visible else "hidden",
                    "visible": "visible" if info.visible else "hidden",
                    "enabled": "enabled" if info.enabled else "disabled",
                    "disabled": "enabled" if info.enabled else "disabled",
                    "value": info.value,
                    "text": info.text,
                }[condition]
                if condition in ("appear", "visible"):
                    return info.visible
                if condition == "disappear":
                    return not info.visible
                if condition == "enabled":
                    return info.enabled
                if condition == "disabled":
                    return not info.enabled
                return actual[0] == value

            ok = self.monitor.wait_until(check, timeout=timeout)
            return WaitResult(
                success=ok,
                id=locator.describe(),
                condition=condition if value is None else f"{condition} == {value!r}",
                ms=round((time.perf_counter() - start) * 1000, 1),
                actual=actual[0],
            )

        return self._guarded(run)

    # -- screenshots -------------------------------------------------------------------------

    def screenshot(
        self, path: str, *, locator: Locator | None = None, window: str | None = None
    ) -> str:
        """Save a PNG of the whole screen, of one element, or of one top-level window (by id
        or title); returns the path. The whole screen needs no application (after a crash)."""
        from PIL import ImageGrab

        box = None
        if locator is None and window is not None:

            def window_box() -> tuple[int, int, int, int]:
                info = self._pick_window(window)
                if info.bounds is None or info.bounds[2] <= 0 or info.bounds[3] <= 0:
                    raise UIError(f"window {window!r} has no area on screen")
                x, y, w, h = info.bounds
                return x, y, x + w, y + h

            box = self._guarded(window_box)
        if locator is not None:

            def bounds() -> tuple[int, int, int, int]:
                node, label = self._target(locator, need_enabled=False)
                x, y, w, h = self.reader.extents(node.key)
                if w <= 0 or h <= 0:
                    raise UIError(f"{label} has no area on screen")
                return x, y, x + w, y + h

            box = self._guarded(bounds)
        if not self.display:
            raise UIError("no DISPLAY to take a screenshot from")
        image = ImageGrab.grab(bbox=box, xdisplay=self.display)
        image.save(path, "PNG")
        return path
