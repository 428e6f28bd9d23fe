"""The Windows backend beyond one element's patterns: other applications and their windows,
setting a field's text, the element at a point, clicks and drags at coordinates, the wheel and
ScrollItem, window management (Window and Transform patterns) and the clipboard.

Windows only, never imported on Linux: written against the documented API of the
``uiautomation`` package (every call on its dedicated thread, ``waitTime=0`` on actions) and run
by ``.github/workflows/windows-ui.yml``'s conformance suite; not runnable on the Linux build
machine.
"""

from __future__ import annotations

import time
from typing import Any

from loopkit_ui.backends.lookup import window_kind
from loopkit_ui.backends.protocol import (
    ActionResult,
    AppInfo,
    ElementInfo,
    ElementNotFoundError,
    Locator,
    MouseButton,
    ScrollDirection,
    UIError,
    WindowAction,
    WindowInfo,
)
from loopkit_ui.backends.uia_core import _VALUE, UIACore, _center, _role

__all__ = ["UIADesktop"]

_SCROLL, _SCROLL_ITEM, _TRANSFORM, _WINDOW = 10004, 10017, 10016, 10009
_SMALL_DECREMENT, _NO_AMOUNT, _SMALL_INCREMENT = 4, 2, 1
_NORMAL, _MAXIMIZED, _MINIMIZED = 0, 1, 2


class UIADesktop(UIACore):
    """The protocol's methods beyond :class:`~loopkit_ui.backends.uia.UIABackend`'s actions."""

    # -- applications ------------------------------------------------------------------------

    def list_applications(self) -> list[AppInfo]:
        """One entry a process that has a top-level window (named after its first window)."""

        def run(auto: Any) -> list[AppInfo]:
            apps: dict[int, str] = {}
            for control in auto.GetRootControl().GetChildren():
                apps.setdefault(control.ProcessId, control.Name)
            return [AppInfo(name=name, pid=pid, toolkit="UIA") for pid, name in apps.items()]

        return self._run(run)

    def other_windows(self) -> list[WindowInfo]:
        """The top-level windows of other processes, each with its app (its first window's
        name)."""

        def run(auto: Any) -> list[WindowInfo]:
            self._attach(auto)
            assert self._app is not None
            names: dict[int, str] = {}
            found = []
            for control in auto.GetRootControl().GetChildren():
                names.setdefault(control.ProcessId, control.Name)
                if control.ProcessId == self._app.pid or control.IsOffscreen:
                    continue
                rect = control.BoundingRectangle
                role = _role(control.ControlType)
                found.append(
                    WindowInfo(
                        title=control.Name,
                        id=control.AutomationId or None,
                        role=role,
                        kind=window_kind(role),
                        is_dialog=window_kind(role) == "dialog",
                        bounds=(rect.left, rect.top, rect.width(), rect.height()),
                        app=names[control.ProcessId] or f"pid {control.ProcessId}",
                    )
                )
            return found

        return self._run(run)

    # -- text --------------------------------------------------------------------------------

    def set_text(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """The Value pattern's SetValue: the whole text at once."""

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator)
            value = control.GetPattern(_VALUE)
            if value is None or value.IsReadOnly:
                raise UIError(f"{locator.describe()} has no writable Value pattern: not a field")

            def verify() -> tuple[bool, str]:
                actual = self._text(control)[0] or ""
                return actual == text, f"text is now {len(actual):,} characters long"

            def perform() -> None:  # SetValue answers a bool: not a refusal
                value.SetValue(text, waitTime=0)

            return self._act(
                auto, "set_text", locator.describe(), perform, expect=None, diff=diff,
                verify=verify,
            )  # fmt: skip

        return self._run(run)

    # -- coordinates -------------------------------------------------------------------------

    def _window_at(self, auto: Any, x: int, y: int) -> WindowInfo:
        windows = self._windows(auto)
        for _key, info in reversed(windows):
            if info.bounds is not None:
                left, top, width, height = info.bounds
                if left <= x < left + width and top <= y < top + height:
                    return info
        listed = "; ".join(f"{w.label()} at {list(w.bounds or ())}" for _, w in windows)
        raise UIError(
            f"({x}, {y}) is outside every window of the app: coordinates must fall inside one "
            f"of its windows (screen x, y, width, height): {listed or 'none'}"
        )

    def _info_at(self, auto: Any, x: int, y: int) -> ElementInfo:
        window = self._window_at(auto, x, y)
        control = auto.ControlFromPoint(x, y)
        rect = control.BoundingRectangle
        return ElementInfo(
            id=control.AutomationId or None,
            name=control.Name,
            role=_role(control.ControlType),
            bounds=(rect.left, rect.top, rect.width(), rect.height()),
            enabled=bool(control.IsEnabled),
            visible=not control.IsOffscreen,
            window=window.title,
        )

    def element_at(self, x: int, y: int) -> ElementInfo | None:
        """The element of the app at the screen point, or None outside its windows."""

        def run(auto: Any) -> ElementInfo | None:
            self._attach(auto)
            try:
                return self._info_at(auto, x, y)
            except UIError:
                return None

        return self._run(run)

    def click_at(
        self, x: int, y: int, *, button: MouseButton = "left", count: int = 1, diff: bool = False
    ) -> ActionResult:
        """Click at a screen point inside one of the app's windows (the mouse)."""

        def run(auto: Any) -> ActionResult:
            self._attach(auto)
            there = self._info_at(auto, x, y)
            clicker = {"left": auto.Click, "right": auto.RightClick, "middle": auto.MiddleClick}

            def perform() -> None:
                for i in range(count):
                    clicker[button](x, y, 0.05 if i + 1 < count else 0)

            name = "double_click" if count == 2 else f"{button}_click".replace("left_", "")
            result = self._act(auto, f"{name}_at", f"({x}, {y})", perform, expect=None, diff=diff)
            result.detail = f"the element there: {there.label()} in window {there.window!r}"
            return result

        return self._run(run)

    def drag_at(self, x: int, y: int, to_x: int, to_y: int, *, diff: bool = False) -> ActionResult:
        """Drag with the mouse between two points inside the app's windows."""

        def run(auto: Any) -> ActionResult:
            self._attach(auto)
            start, end = self._info_at(auto, x, y), self._info_at(auto, to_x, to_y)

            def perform() -> None:
                auto.DragDrop(x, y, to_x, to_y, 2, 0)

            result = self._act(
                auto, "drag_at", f"({x}, {y}) -> ({to_x}, {to_y})", perform, expect=None,
                diff=diff,
            )  # fmt: skip
            result.detail = f"from {start.label()} to {end.label()}"
            return result

        return self._run(run)

    # -- scrolling ---------------------------------------------------------------------------

    def scroll(
        self,
        locator: Locator,
        *,
        direction: ScrollDirection = "down",
        amount: int = 3,
        diff: bool = False,
    ) -> ActionResult:
        """The Scroll pattern by small increments (what a wheel notch does), else the wheel."""
        if not 1 <= amount <= 100:
            raise UIError(f"amount must be 1 to 100 wheel notches, got {amount}")

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator, need_enabled=False)
            pattern = control.GetPattern(_SCROLL)

            def perform() -> None:
                if pattern is not None:
                    step = _SMALL_DECREMENT if direction in ("up", "left") else _SMALL_INCREMENT
                    horizontal = step if direction in ("left", "right") else _NO_AMOUNT
                    vertical = step if direction in ("up", "down") else _NO_AMOUNT
                    for _ in range(amount * 3):  # a notch scrolls three lines
                        pattern.Scroll(horizontal, vertical, waitTime=0)
                    return
                auto.MoveTo(*_center(control, locator), waitTime=0)
                wheel = auto.WheelUp if direction in ("up", "left") else auto.WheelDown
                wheel(amount, 0.02, 0)

            return self._act(
                auto, f"scroll {direction} {amount}", locator.describe(), perform,
                expect=None, diff=diff,
            )  # fmt: skip

        return self._run(run)

    def scroll_into_view(self, locator: Locator) -> ActionResult:
        """The ScrollItem pattern's ScrollIntoView."""

        def run(auto: Any) -> ActionResult:
            _node, control = self._usable(auto, locator, need_enabled=False)
            pattern = control.GetPattern(_SCROLL_ITEM)
            if pattern is None:
                raise UIError(f"{locator.describe()} cannot be scrolled into view (no ScrollItem)")

            def verify() -> tuple[bool, str]:
                shown = not control.IsOffscreen
                return shown, f"{locator.describe()} shows: {shown}"

            def perform() -> None:  # ScrollIntoView answers a bool: not a refusal
                pattern.ScrollIntoView(waitTime=0)

            return self._act(
                auto, "scroll_into_view", locator.describe(), perform, expect=None, diff=False,
                verify=verify,
            )  # fmt: skip

        return self._run(run)

    # -- windows -----------------------------------------------------------------------------

    def window_action(
        self,
        window: str | None,
        action: WindowAction,
        *,
        x: int | None = None,
        y: int | None = None,
        width: int | None = None,
        height: int | None = None,
    ) -> ActionResult:
        """The Window pattern (states, close) and the Transform pattern (move, resize)."""

        def run(auto: Any) -> ActionResult:
            self._attach(auto)
            controls = [auto.Control.CreateControlFromElement(e) for e in self._app_windows(auto)]
            if window is not None:
                found = [c for c in controls if window in (c.Name, c.AutomationId)]
            else:
                foreground = auto.GetForegroundWindow()
                found = [c for c in controls if c.NativeWindowHandle == foreground] or controls
            if not found:
                names = ", ".join(repr(c.Name) for c in controls) or "none"
                raise ElementNotFoundError(f"no window with id or title {window!r}; open: {names}")
            control = found[0]
            states = control.GetPattern(_WINDOW)
            transform = control.GetPattern(_TRANSFORM)

            def perform() -> str | None:
                if action == "focus":
                    auto.SetForegroundWindow(control.NativeWindowHandle)
                    control.SetFocus()
                elif action in ("move", "resize"):
                    if transform is None:
                        return f"window {control.Name!r} cannot be moved or resized"
                    if action == "move":
                        if x is None or y is None:
                            return "move needs x and y"
                        transform.Move(x, y, waitTime=0)
                    else:
                        if width is None or height is None:
                            return "resize needs width and height"
                        transform.Resize(width, height, waitTime=0)
                elif states is None:
                    return f"window {control.Name!r} has no Window pattern"
                elif action == "close":
                    states.Close(waitTime=0)
                else:
                    state = {"minimize": _MINIMIZED, "maximize": _MAXIMIZED, "restore": _NORMAL}
                    states.SetWindowVisualState(state[action], waitTime=0)
                return None

            result = self._act(
                auto, f"window {action}", control.Name, perform, expect=None, diff=False
            )
            if action != "close":
                time.sleep(0.05)
                rect = control.BoundingRectangle
                result.detail = f"at {[rect.left, rect.top, rect.width(), rect.height()]}"
            return result

        return self._run(run)

    # -- the clipboard -----------------------------------------------------------------------

    def get_clipboard(self) -> str:
        """The clipboard's text (``uiautomation.GetClipboardText``)."""
        return self._run(lambda auto: str(auto.GetClipboardText() or ""))

    def set_clipboard(self, text: str) -> None:
        """Put ``text`` on the clipboard (``uiautomation.SetClipboardText``)."""
        self._run(lambda auto: auto.SetClipboardText(text))
