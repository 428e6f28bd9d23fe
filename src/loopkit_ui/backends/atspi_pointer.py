"""Pointer work beyond an element's centre, over AT-SPI: the element at a screen point, clicks
and drags at coordinates (for custom-drawn widgets the tree does not expose; always inside one
of the app's windows, never elsewhere on the desktop), and scrolling with the wheel, by an
amount or until an element shows."""

from __future__ import annotations

import math
import time

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_actions import AtspiActions
from loopkit_ui.backends.atspi_tree import explicit_id
from loopkit_ui.backends.protocol import (
    ActionResult,
    ElementInfo,
    Locator,
    MouseButton,
    ScrollDirection,
    UIError,
    WindowInfo,
)

__all__ = ["AtspiPointer"]

_NULL = "/org/a11y/atspi/null"
_WHEEL = {"up": 4, "down": 5, "left": 6, "right": 7}
_MAX_NOTCHES = 400  # scroll_into_view gives up after this many wheel notches
_SCROLLERS = frozenset(
    {"table", "tree table", "list", "list box", "tree", "scroll pane", "viewport", "document text",
     "text", "page tab list"}
)  # fmt: skip


def _inside(point: tuple[int, int], bounds: tuple[int, int, int, int] | None) -> bool:
    if bounds is None:
        return False
    x, y, w, h = bounds
    return x <= point[0] < x + w and y <= point[1] < y + h


class AtspiPointer(AtspiActions):
    """Coordinates and the wheel (see the module docstring)."""

    # -- the element at a point --------------------------------------------------------------

    def _window_at(self, x: int, y: int) -> tuple[str, WindowInfo]:
        """The app's top-level window (or popup) under the point: popups and dialogs first,
        as they lie on top. Refuses a point outside every window of the app."""
        windows = self._windows()
        for path, info in reversed(windows):
            if _inside((x, y), info.bounds):
                return path, info
        listed = "; ".join(f"{w.label()} at {list(w.bounds or ())}" for _, w in windows) or "none"
        raise UIError(
            f"({x}, {y}) is outside every window of the app: coordinates must fall inside one "
            f"of its windows (screen x, y, width, height): {listed}"
        )

    def _path_at(self, x: int, y: int) -> tuple[str, WindowInfo]:
        window, info = self._window_at(x, y)
        path = window
        for _ in range(64):  # a deep tree is at most this deep
            try:
                reply = self.reader.call(
                    path, C.COMPONENT, "GetAccessibleAtPoint", "iiu", (x, y, C.COORD_SCREEN)
                )[0]
            except UIError:
                break
            child = reply[1]
            if not child or child in (_NULL, path):
                break
            path = child
        return path, info

    def _info_at(self, x: int, y: int) -> ElementInfo:
        path, window = self._path_at(x, y)
        info = self.reader.element(path)
        info.id = explicit_id(info.id or "", info.role)
        info.window = window.title or window.label()
        return info

    def element_at(self, x: int, y: int) -> ElementInfo | None:
        """The deepest element of the app at the screen point, or None outside its windows."""

        def run() -> ElementInfo | None:
            try:
                return self._info_at(x, y)
            except UIError:
                return None

        return self._guarded(run)

    def click_at(
        self, x: int, y: int, *, button: MouseButton = "left", count: int = 1, diff: bool = False
    ) -> ActionResult:
        """Click at a screen point inside one of the app's windows; the answer names the
        element found there (``detail``)."""
        if count not in (1, 2):
            raise UIError(f"count must be 1 or 2, got {count}")

        def run() -> ActionResult:
            there = self._info_at(x, y)
            name = {"left": "click", "right": "right_click", "middle": "middle_click"}[button]
            name = "double_click" if count == 2 else name
            result = self._act(
                f"{name}_at",
                f"({x}, {y})",
                lambda: self.input.click(x, y, button=button, count=count),
                diff=diff,
            )
            result.detail = f"the element there: {there.label()} in window {there.window!r}"
            return result

        return self._guarded(run)

    def drag_at(self, x: int, y: int, to_x: int, to_y: int, *, diff: bool = False) -> ActionResult:
        """Press at one point, move in steps, release at the other (both inside app windows)."""

        def run() -> ActionResult:
            start, end = self._info_at(x, y), self._info_at(to_x, to_y)

            def perform() -> None:
                self.input.press(x, y)
                for i in range(1, 6):
                    time.sleep(0.02)  # Qt starts a drag after separate motion events
                    self.input.move(x + (to_x - x) * i // 5, y + (to_y - y) * i // 5)
                time.sleep(0.02)
                self.input.release(to_x, to_y)

            result = self._act("drag_at", f"({x}, {y}) -> ({to_x}, {to_y})", perform, diff=diff)
            result.detail = f"from {start.label()} to {end.label()}"
            return result

        return self._guarded(run)

    # -- the wheel ---------------------------------------------------------------------------

    def _wheel(self, x: int, y: int, direction: ScrollDirection, notches: int) -> None:
        for _ in range(notches):
            self.input.wheel(x, y, _WHEEL[direction])

    def scroll(
        self,
        locator: Locator,
        *,
        direction: ScrollDirection = "down",
        amount: int = 3,
        diff: bool = False,
    ) -> ActionResult:
        """Turn the wheel ``amount`` notches over the element (each notch is what one turn of
        a mouse wheel scrolls: three lines or rows in Qt)."""
        if not 1 <= amount <= 100:
            raise UIError(f"amount must be 1 to 100 wheel notches, got {amount}")

        def run() -> ActionResult:
            node, label = self._target(locator, need_enabled=False)
            point = self._center(node, label)
            if point is None:
                raise UIError(f"{label} is not on screen; scroll its container instead")
            return self._act(
                f"scroll {direction} {amount}",
                label,
                lambda: self._wheel(*point, direction, amount),
                diff=diff,
            )

        return self._guarded(run)

    def _scroller(self, key: str) -> tuple[str, tuple[int, int, int, int]] | None:
        """The nearest ancestor that scrolls (a table, a list, a scroll area) and its extents."""
        node = self.mirror.nodes.get(key)
        parent = node.parent if node is not None else None
        while parent is not None:
            above = self.mirror.nodes.get(parent)
            if above is None:
                return None
            if above.role in _SCROLLERS:
                return parent, self.reader.extents(parent)
            parent = above.parent
        return None

    def scroll_into_view(self, locator: Locator) -> ActionResult:
        """Turn the wheel over the element's scrolling container until the element lies inside
        it; answers success false when it never does."""

        def run() -> ActionResult:
            node, label = self._target(locator, need_enabled=False)
            key = node.key
            container: tuple[str, tuple[int, int, int, int]] | None
            if node.role == "table cell" and node.parent is not None:
                container = (node.parent, self.reader.extents(node.parent))  # the table
            else:
                container = self._scroller(key)
            if container is None:
                raise UIError(f"{label} is in no scrolling container (table, list, scroll area)")
            _path, (cx, cy, cw, ch) = container
            centre = (cx + cw // 2, cy + ch // 2)
            outcome: list[str] = []

            def perform() -> str | None:
                turned = 0
                while turned < _MAX_NOTCHES:
                    x, y, w, h = self.reader.extents(key)
                    states = self.reader.states(key)
                    vertical: ScrollDirection | None = (
                        "up" if y < cy else "down" if y + h > cy + ch else None
                    )
                    horizontal: ScrollDirection | None = (
                        "left" if x < cx else "right" if x + w > cx + cw else None
                    )
                    if vertical is None and horizontal is None and "showing" in states:
                        outcome.append(f"{label} shows after {turned} wheel notches")
                        return None
                    direction: ScrollDirection = vertical or horizontal or "down"
                    gap = (cy - y if direction == "up" else y + h - cy - ch) if vertical else (
                        cx - x if direction == "left" else x + w - cx - cw)  # fmt: skip
                    notches = max(1, min(10, math.ceil(max(gap, 1) / max(3 * h, 1))))
                    seq = self.monitor.seq
                    self._wheel(*centre, direction, notches)
                    turned += notches
                    self.monitor.wait_settled(seq, first=0.2, quiet=self.settle_quiet, cap=0.5)
                return f"{label} did not come into view after {turned} wheel notches"

            result = self._act("scroll_into_view", label, perform)
            if outcome:
                result.detail = outcome[0]
            return result

        return self._guarded(run)
