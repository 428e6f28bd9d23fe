"""The Windows backend: UI Automation through the ``uiautomation`` package (actions here, the
core in :mod:`.uia_core`).

Windows only, never imported on Linux: it cannot run on the Linux build machine, so it is
written against the package's documented API and kept honest by the conformance suite, which
``.github/workflows/windows-ui.yml`` runs on windows-latest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from loopkit_ui.backends.protocol import (
    ActionResult,
    ClickMethod,
    ElementNotFoundError,
    Expectation,
    Locator,
    MouseButton,
    UIError,
    WaitCondition,
    WaitResult,
)
from loopkit_ui.backends.text_limits import TYPE_CHUNK, refuse_long_text
from loopkit_ui.backends.uia_core import (
    _EDIT_TYPE,
    _INVOKE,
    _SELECTION_ITEM,
    _TOGGLE,
    _VALUE,
    _center,
    _role,
    escape_keys,
    to_send_keys,
)
from loopkit_ui.backends.uia_desktop import UIADesktop

__all__ = ["UIABackend", "to_send_keys"]


class UIABackend(UIADesktop):
    """UI Automation backend (Windows). Configure the application by ``app_name`` or ``pid``."""

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
        """Click: Invoke/Toggle/SelectionItem patterns first, the mouse otherwise."""

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator)
            name = (
                "double_click"
                if count == 2
                else {"left": "click", "right": "right_click", "middle": "middle_click"}[button]
            )

            def perform() -> None:
                if button == "left" and count == 1 and method != "input":
                    for pattern_id, call in (
                        (_INVOKE, "Invoke"),
                        (_TOGGLE, "Toggle"),
                        (_SELECTION_ITEM, "Select"),
                    ):
                        pattern = control.GetPattern(pattern_id)
                        if pattern is not None:
                            getattr(pattern, call)(waitTime=0)
                            return
                    if method == "action":
                        raise UIError(
                            f"{locator.describe()} supports no Invoke/Toggle/Select pattern"
                        )
                x, y = _center(control, locator)
                clicker = {
                    "left": auto.Click,
                    "right": auto.RightClick,
                    "middle": auto.MiddleClick,
                }[button]
                for i in range(count):
                    clicker(x, y, 0.05 if i + 1 < count else 0)

            return self._act(auto, name, locator.describe(), perform, expect=expect, diff=diff)

        return self._run(run, self.timeout * 4 + (expect.timeout if expect else 0))

    def hover(self, locator: Locator) -> ActionResult:
        """Move the mouse over the element; one with a tooltip (its HelpText) is answered once
        the tooltip window shows, up to 2 s."""

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator, need_enabled=False)
            x, y = _center(control, locator)
            tip = control.HelpText

            def perform() -> None:
                auto.SetCursorPos(x, y)
                deadline = time.monotonic() + 2.0
                while tip and time.monotonic() < deadline:
                    if any(w.kind == "tooltip" for _, w in self._windows(auto)):
                        return
                    time.sleep(0.05)

            return self._act(auto, "hover", locator.describe(), perform, expect=None, diff=False)

        return self._run(run)

    def type_text(
        self,
        locator: Locator,
        text: str,
        *,
        clear: bool = True,
        diff: bool = False,
        cancel: threading.Event | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ActionResult:
        """Set the text through the Value pattern (typing with the keyboard as the fallback,
        in chunks, stopping between them once ``cancel`` is set)."""
        refuse_long_text(text)

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator)
            value = control.GetPattern(_VALUE)
            if control.ControlType != _EDIT_TYPE and value is None:
                raise UIError(
                    f"{locator.describe()} is a {_role(control.ControlType)}, not a text "
                    "field; use set_cell for table cells or press_keys to send keys to it"
                )
            before = value.Value if value is not None else ""
            expected = text if clear else before + text

            def perform() -> str | None:
                if value is not None and not value.IsReadOnly:
                    value.SetValue(expected, waitTime=0)
                    return None
                control.SetFocus()
                auto.SendKeys("{Ctrl}a" if clear else "{End}", 0.005, 0, True)
                for start in range(0, len(text), TYPE_CHUNK):
                    if cancel is not None and cancel.is_set():
                        return f"stopped after {start:,} of {len(text):,} characters"
                    auto.SendKeys(escape_keys(text[start : start + TYPE_CHUNK]), 0.005, 0, True)
                    if progress is not None:
                        progress(min(start + TYPE_CHUNK, len(text)), len(text))
                return None

            def verify() -> tuple[bool, str]:
                actual = self._text(control)[0] or ""
                return actual == expected, f"text is now {actual!r}"

            return self._act(
                auto,
                "type_text",
                locator.describe(),
                perform,
                expect=None,
                diff=diff,
                verify=verify,
            )

        return self._run(run)

    def press_keys(
        self, keys: str, *, locator: Locator | None = None, diff: bool = False
    ) -> ActionResult:
        """Send keys (our syntax, e.g. ``ctrl+a Delete``) to the focused element or ``locator``."""
        sequence = to_send_keys(keys)

        def run(auto: Any) -> ActionResult:
            control = self._usable(auto, locator)[1] if locator is not None else None

            def perform() -> None:
                if control is not None:
                    control.SetFocus()
                auto.SendKeys(sequence, 0.005, 0, True)

            label = locator.describe() if locator else "(focused element)"
            return self._act(auto, "press_keys", label, perform, expect=None, diff=diff)

        return self._run(run)

    def select_item(self, locator: Locator, item: str, *, diff: bool = False) -> ActionResult:
        """Select a child item by name (or ``#index``) through SelectionItem, else a click."""

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator)
            children = control.GetChildren()
            names = [c.Name for c in children]
            if item.startswith("#") and item[1:].isdigit() and int(item[1:]) < len(children):
                child = children[int(item[1:])]
            elif item in names:
                child = children[names.index(item)]
            else:
                raise ElementNotFoundError(
                    f"{locator.describe()} has no item {item!r}; items: "
                    + ", ".join(map(repr, names[:30]))
                )

            def perform() -> None:
                pattern = child.GetPattern(_SELECTION_ITEM)
                if pattern is not None:
                    pattern.Select(waitTime=0)
                else:
                    auto.Click(*_center(child, locator), 0)

            def verify() -> tuple[bool, str]:
                pattern = child.GetPattern(_SELECTION_ITEM)
                selected = bool(pattern.IsSelected) if pattern is not None else True
                return selected, f"item {child.Name!r} selected: {selected}"

            return self._act(
                auto,
                f"select_item {child.Name!r}",
                locator.describe(),
                perform,
                expect=None,
                diff=diff,
                verify=verify,
            )

        return self._run(run)

    def drag_and_drop(
        self, source: Locator, target: Locator, *, diff: bool = False
    ) -> ActionResult:
        """Drag with the mouse from ``source`` to ``target``."""

        def run(auto: Any) -> ActionResult:
            src = _center(self._usable(auto, source)[1], source)
            dst = _center(self._usable(auto, target, need_enabled=False)[1], target)
            return self._act(
                auto,
                "drag_and_drop",
                f"{source.describe()} -> {target.describe()}",
                lambda: auto.DragDrop(*src, *dst, 2, 0),
                expect=None,
                diff=diff,
            )

        return self._run(run)

    def set_cell(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """Edit a cell: the Value pattern when writable, else double-click, type, Enter."""
        if locator.row is None or locator.column is None:
            raise UIError(f"set_cell needs row and column (got {locator.describe()})")

        def run(auto: Any) -> ActionResult:
            _node, cell = self._usable(auto, locator)

            def perform() -> str | None:
                value = cell.GetPattern(_VALUE)
                if value is not None and value.IsReadOnly:
                    return (
                        f"{locator.describe()} is read-only (its Value pattern says so); "
                        "nothing typed"
                    )
                if value is not None:
                    value.SetValue(text, waitTime=0)
                    return None
                x, y = _center(cell, locator)
                auto.Click(x, y, 0.05)
                auto.Click(x, y, 0.1)
                auto.SendKeys("{Ctrl}a" + escape_keys(text) + "{Enter}", 0.005, 0, True)
                return None

            def verify() -> tuple[bool, str]:
                _n, fresh, _nodes = self._find(auto, locator)
                actual = self._text(fresh)[0]
                return actual == text, f"cell text is now {actual!r}"

            return self._act(
                auto, "set_cell", locator.describe(), perform, expect=None, diff=diff, verify=verify
            )

        return self._run(run)

    def wait_for(
        self,
        locator: Locator,
        condition: WaitCondition,
        *,
        value: str | None = None,
        timeout: float = 5.0,
    ) -> WaitResult:
        """Wait (polling every 50 ms) until the condition holds."""
        if condition in ("value", "text") and value is None:
            raise UIError(f"wait_for {condition!r} needs a value to wait for")

        def run(auto: Any) -> WaitResult:
            start = time.perf_counter()

            def check() -> tuple[bool, str]:
                try:
                    info = self._info(auto, locator)
                except ElementNotFoundError:
                    return condition == "disappear", "absent"
                actual = {
                    "appear": "visible" if info.visible else "hidden",
                    "disappear": "visible" if info.visible else "hidden",
                    "visible": "visible" if info.visible else "hidden",
                    "enabled": "enabled" if info.enabled else "disabled",
                    "disabled": "enabled" if info.enabled else "disabled",
                    "value": info.value,
                    "text": info.text,
                }[condition]
                ok = {
                    "appear": info.visible,
                    "visible": info.visible,
                    "disappear": not info.visible,
                    "enabled": info.enabled,
                    "disabled": not info.enabled,
                }.get(condition, actual == value)
                return bool(ok), str(actual)

            ok, actual = self._poll(auto, check, timeout)
            return WaitResult(
                success=ok,
                id=locator.describe(),
                condition=condition if value is None else f"{condition} == {value!r}",
                ms=round((time.perf_counter() - start) * 1000, 1),
                actual=actual,
            )

        return self._run(run, timeout + self.timeout * 4)

    def screenshot(
        self, path: str, *, locator: Locator | None = None, window: str | None = None
    ) -> str:
        """Save a PNG of the screen, of one element or of one window (Pillow's ImageGrab)."""
        from PIL import ImageGrab

        box = None
        if locator is None and window is not None:
            found = [w for w in self.list_windows() if window in (w.title, w.id) and w.bounds]
            if not found:
                raise ElementNotFoundError(f"no window with id or title {window!r}")
            x, y, w, h = found[0].bounds or (0, 0, 0, 0)
            box = (x, y, x + w, y + h)
        if locator is not None:
            info = self.get_element(locator)
            if info.bounds is None or info.bounds[2] <= 0:
                raise UIError(f"{locator.describe()} has no area on screen")
            x, y, w, h = info.bounds
            box = (x, y, x + w, y + h)
        ImageGrab.grab(bbox=box, all_screens=True).save(path, "PNG")
        return path
