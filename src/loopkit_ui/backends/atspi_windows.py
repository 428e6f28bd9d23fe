"""Window management and the clipboard for the AT-SPI backend: the windows are found in the
accessibility tree and handled on X11 (:mod:`.x11_windows`; the headless desktop has no window
manager to ask), the clipboard through ``xclip`` (:mod:`.x11_clipboard`)."""

from __future__ import annotations

from loopkit_ui.backends.atspi_pointer import AtspiPointer
from loopkit_ui.backends.protocol import (
    ActionResult,
    ElementNotFoundError,
    WindowAction,
    WindowInfo,
)
from loopkit_ui.backends.x11_clipboard import XClipboard
from loopkit_ui.backends.x11_windows import X11Windows

__all__ = ["AtspiWindows"]


class AtspiWindows(AtspiPointer):
    """``window_action``, ``get_clipboard`` and ``set_clipboard``."""

    _x11_windows: X11Windows | None = None

    def _window_manager(self) -> X11Windows:
        if self._x11_windows is None:
            self._x11_windows = X11Windows(self.display)
        return self._x11_windows

    def _pick_window(self, window: str | None) -> WindowInfo:
        windows = [info for _, info in self._windows() if info.kind in ("window", "dialog")]
        if window is not None:
            found = [w for w in windows if window in (w.title, w.id)]
            if not found:
                listed = ", ".join(w.label() for w in windows) or "none"
                raise ElementNotFoundError(
                    f"no window with id or title {window!r}; open windows: {listed}"
                )
            return found[0]
        if not windows:
            raise ElementNotFoundError("the app has no open window")
        return next((w for w in windows if w.active), windows[0])

    def list_windows(self) -> list[WindowInfo]:
        """The app's windows; a minimised one (unmapped on X: Qt keeps it showing over
        AT-SPI) says so."""

        def run() -> list[WindowInfo]:
            windows = [info for _, info in self._windows()]
            pid = self._app.pid if self._app is not None else None
            for info in windows:
                if info.kind in ("window", "dialog"):
                    info.minimized = self._window_manager().minimized(pid, info.title, info.bounds)
            return windows

        return self._guarded(run)

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
        """Focus, move, resize, minimise, maximise, restore or close one of the app's windows
        (a minimised window is found by its title too, though it no longer shows)."""

        def run() -> ActionResult:
            manager = self._window_manager()
            pid = self._app.pid if self._app is not None else None
            if action == "restore" and window is not None:
                title, bounds = window, None  # a minimised window is not in the tree's list
                try:
                    info = self._pick_window(window)
                    title, bounds = info.title, info.bounds
                except ElementNotFoundError:
                    pass
            else:
                info = self._pick_window(window)
                title, bounds = info.title, info.bounds
            target = manager.find(pid, title, bounds)
            result = self._act(
                f"window {action}",
                title or "(untitled window)",
                lambda: manager.apply(target, action, x=x, y=y, width=width, height=height),
            )
            mapped, box = manager.state(target)
            if action != "close":
                result.detail = f"{'shown' if mapped else 'minimised'} at {list(box)} (x, y, w, h)"
            return result

        return self._guarded(run)

    def get_clipboard(self) -> str:
        """The clipboard's text ("" when it holds none)."""
        return XClipboard(self.display).read()

    def set_clipboard(self, text: str) -> None:
        """Put ``text`` on the clipboard."""
        XClipboard(self.display).write(text)

    def close(self) -> None:
        """Close the X connection too."""
        super().close()
        if self._x11_windows is not None:
            self._x11_windows.close()
            self._x11_windows = None
