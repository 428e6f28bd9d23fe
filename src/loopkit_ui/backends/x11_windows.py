"""Window management on X11 without a window manager (python-xlib).

The headless desktop runs no window manager, so nobody answers a toolkit's "minimise me" or
"maximise me" request. This module does what a window manager would, on the app's top-level X
windows: raise and focus, move and resize (ConfigureWindow), minimise (ICCCM ``WM_STATE``
Iconic and unmap; Qt reads ``WM_STATE`` and reports itself minimised), restore (map, ``WM_STATE``
Normal), maximise (the root window's size and ``_NET_WM_STATE_MAXIMIZED_*``, which Qt reads too)
and close (``WM_DELETE_WINDOW``, the message a title bar's close button sends: the app's close
handler runs, as for a user).

Windows are matched to accessible windows by process id (``_NET_WM_PID``) and title.
"""

from __future__ import annotations

import contextlib
from typing import Any

from loopkit_ui.backends.protocol import UIError, WindowAction

__all__ = ["X11Windows"]

Box = tuple[int, int, int, int]

_NORMAL, _ICONIC = 1, 3


class X11Windows:
    """The top-level X windows of one process on one display, and what a WM does to them."""

    def __init__(self, display: str | None) -> None:
        self.display_name = display
        self._display: Any = None
        self._saved: dict[int, Box] = {}  # window id -> geometry before maximise

    def _connect(self) -> Any:
        if self._display is None:
            try:
                from Xlib import display as xdisplay

                self._display = xdisplay.Display(self.display_name)
            except Exception as error:
                raise UIError(
                    f"cannot manage windows: no X display {self.display_name!r} ({error})"
                ) from None
        return self._display

    def close(self) -> None:
        """Close the X connection."""
        if self._display is not None:
            with contextlib.suppress(Exception):
                self._display.close()
            self._display = None

    def _title(self, window: Any) -> str:
        d = self._display
        name = window.get_full_property(d.intern_atom("_NET_WM_NAME"), 0)
        if name is not None and name.value:
            value = name.value
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        legacy = window.get_wm_name()
        return legacy.decode("latin-1") if isinstance(legacy, bytes) else str(legacy or "")

    def _box(self, window: Any) -> Box:
        root = self._display.screen().root
        geometry = window.get_geometry()
        where = root.translate_coords(window, 0, 0)
        return where.x, where.y, geometry.width, geometry.height

    def find(self, pid: int | None, title: str, bounds: Box | None) -> Any:
        """The X window of ``pid`` with this title (or, failing that, these bounds)."""
        d = self._connect()
        root = d.screen().root
        wm_pid = d.intern_atom("_NET_WM_PID")
        by_title, by_box = [], []
        for window in root.query_tree().children:
            try:
                owner = window.get_full_property(wm_pid, 0)
                if pid is not None and (owner is None or int(owner.value[0]) != pid):
                    continue
                if self._title(window) == title and title:
                    by_title.append(window)
                elif bounds is not None and self._box(window) == tuple(bounds):
                    by_box.append(window)
            except Exception:  # a window destroyed while we look
                continue
        # A toolkit may keep unmapped helper windows with the same title: prefer mapped ones.
        found = sorted(by_title or by_box, key=lambda w: w.get_attributes().map_state == 0)
        if not found:
            raise UIError(f"no X window of pid {pid} titled {title!r}; is it still open?")
        return found[0]

    def apply(
        self,
        window: Any,
        action: WindowAction,
        *,
        x: int | None = None,
        y: int | None = None,
        width: int | None = None,
        height: int | None = None,
    ) -> None:
        """Do ``action`` to ``window`` (from :meth:`find`) as a window manager would."""
        from Xlib import X, Xatom
        from Xlib.protocol import event

        d = self._connect()
        atom = d.intern_atom
        if action == "focus":
            window.map()
            window.configure(stack_mode=X.Above)
            window.set_input_focus(X.RevertToParent, X.CurrentTime)
        elif action == "move":
            if x is None or y is None:
                raise UIError("move needs x and y (the window's new top-left corner on screen)")
            window.configure(x=x, y=y)
        elif action == "resize":
            if width is None or height is None or width < 1 or height < 1:
                raise UIError("resize needs width and height (at least 1 pixel each)")
            window.configure(width=width, height=height)
        elif action == "minimize":
            window.change_property(atom("WM_STATE"), atom("WM_STATE"), 32, [_ICONIC, 0])
            window.unmap()
        elif action == "maximize":
            self._saved.setdefault(window.id, self._box(window))
            screen = d.screen()
            window.configure(x=0, y=0, width=screen.width_in_pixels,
                             height=screen.height_in_pixels)  # fmt: skip
            maximized = [atom("_NET_WM_STATE_MAXIMIZED_VERT"), atom("_NET_WM_STATE_MAXIMIZED_HORZ")]
            window.change_property(atom("_NET_WM_STATE"), Xatom.ATOM, 32, maximized)
        elif action == "restore":
            window.change_property(atom("WM_STATE"), atom("WM_STATE"), 32, [_NORMAL, 0])
            window.change_property(atom("_NET_WM_STATE"), Xatom.ATOM, 32, [])
            window.map()
            saved = self._saved.pop(window.id, None)
            if saved is not None:
                window.configure(x=saved[0], y=saved[1], width=saved[2], height=saved[3])
            window.configure(stack_mode=X.Above)
        elif action == "close":
            protocols = atom("WM_PROTOCOLS")
            message = event.ClientMessage(
                window=window,
                client_type=protocols,
                data=(32, [atom("WM_DELETE_WINDOW"), X.CurrentTime, 0, 0, 0]),
            )
            window.send_event(message)
        else:  # pragma: no cover - the tool's schema allows only the actions above
            raise UIError(f"unknown window action {action!r}")
        d.sync()

    def minimized(self, pid: int | None, title: str, bounds: Box | None) -> bool:
        """Whether that window is unmapped (minimised); False when X cannot tell."""
        try:
            return not self.state(self.find(pid, title, bounds))[0]
        except UIError:
            return False
        except Exception:  # a lost X connection: connect again next time
            self.close()
            return False

    def state(self, window: Any) -> tuple[bool, Box]:
        """Whether the window is mapped, and its box on screen."""
        try:
            mapped = window.get_attributes().map_state != 0
            return mapped, self._box(window)
        except Exception:  # closed meanwhile
            return False, (0, 0, 0, 0)
