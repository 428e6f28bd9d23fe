"""Window modality on X11: which top-level windows of a process carry ``_NET_WM_STATE_MODAL``.

AT-SPI has a MODAL state, but Qt never sets it: a QMessageBox or QDialog run with ``exec()`` is
listed without it. Qt does tell the window manager, as every X11 toolkit does, by putting
``_NET_WM_STATE_MODAL`` on the window (Qt sets it for window or application modality). This
module reads that property with python-xlib; windows are matched to accessible windows by
process id and geometry.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["X11Modality"]

Box = tuple[int, int, int, int]


class X11Modality:
    """Modal top-level windows of a process on one X display (python-xlib)."""

    def __init__(self, display: str | None) -> None:
        self.display_name = display
        self._display: Any = None
        self._failed = False

    @property
    def available(self) -> bool:
        """Whether the X display can be asked (python-xlib installed, display reachable)."""
        return self._connect() is not None

    def _connect(self) -> Any:
        if self._display is not None or self._failed:
            return self._display
        try:
            from Xlib import display as xdisplay

            self._display = xdisplay.Display(self.display_name)
        except Exception:  # no python-xlib, or no display: fall back to the roles
            self._failed = True
        return self._display

    def modal_boxes(self, pid: int | None) -> list[Box] | None:
        """Screen rectangles ``(x, y, w, h)`` of the modal top-level windows of ``pid``, or None
        when X cannot be asked."""
        display = self._connect()
        if display is None:
            return None
        try:
            return self._boxes(display, pid)
        except Exception:  # a window destroyed while read, a lost connection
            with contextlib.suppress(Exception):
                display.close()
            self._display = None
            return None

    def screen_size(self) -> tuple[int, int] | None:
        """The screen's width and height in pixels, or None when X cannot be asked."""
        display = self._connect()
        if display is None:
            return None
        try:
            screen = display.screen()
            return int(screen.width_in_pixels), int(screen.height_in_pixels)
        except Exception:  # a lost connection
            return None

    @staticmethod
    def _boxes(display: Any, pid: int | None) -> list[Box]:
        atom = display.intern_atom
        state, modal, wm_pid = (
            atom("_NET_WM_STATE"),
            atom("_NET_WM_STATE_MODAL"),
            atom("_NET_WM_PID"),
        )
        root = display.screen().root
        found = []
        for window in root.query_tree().children:
            states = window.get_full_property(state, 0)
            if states is None or modal not in states.value:
                continue
            if pid is not None:
                owner = window.get_full_property(wm_pid, 0)
                if owner is None or int(owner.value[0]) != pid:
                    continue
            geometry = window.get_geometry()
            where = root.translate_coords(window, 0, 0)  # the window's corner on the screen
            found.append((where.x, where.y, geometry.width, geometry.height))
        return found

    def close(self) -> None:
        """Close the X connection."""
        if self._display is not None:
            with contextlib.suppress(Exception):
                self._display.close()
            self._display = None
