"""Popups and short-lived windows over AT-SPI.

Qt leaves popup windows (context menus, combo box drop-downs: ``Qt::Popup``) out of the
application's children (``QAccessibleApplication`` lists the top-level windows that are not
popups), so neither the window list nor a tree read from the application's root sees an open
menu. The popup still says it started showing (a ``showing`` state event) and names the
application as its parent: the event monitor keeps the objects that started showing, and
:class:`PopupFinder` picks those whose parent is the application root but which are not among
its children. A popup that opened before the backend attached (no event) stays unseen.

A window or popup can also open and close again within one action (a dialog that blinks, the
drop-down ``select_item`` opens and closes); Qt may destroy its accessible object as it closes.
:class:`WindowNotes` reads every new top-level object the moment its first event arrives, on a
thread of its own, so the action's report names it like any other window ("title #id").
"""

from __future__ import annotations

import contextlib
import threading

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_events import EventMonitor
from loopkit_ui.backends.atspi_tree import DIALOG_ROLES, TreeReader
from loopkit_ui.backends.lookup import normalize_id
from loopkit_ui.backends.protocol import WindowInfo, WindowKind

__all__ = ["PopupFinder", "WindowNotes"]

_MENU_ROLES = frozenset({"popup menu", "menu"})
_WINDOW_ROLES = frozenset({"frame", "window"})
_OPENING = frozenset({"Window:Activate", "Window:Create"})


def _kind(role: str) -> WindowKind:
    if role in _MENU_ROLES:
        return "menu"
    if role == "tool tip":
        return "tooltip"
    if role in DIALOG_ROLES:
        return "dialog"
    return "window" if role in _WINDOW_ROLES else "popup"


class PopupFinder:
    """The open popups of one application, found among the objects that started showing."""

    def __init__(self, reader: TreeReader, monitor: EventMonitor) -> None:
        self.reader = reader
        self.monitor = monitor
        # path -> "drop-down of #SizeCombo": whose popup it is (read once per popup).
        self._owners: dict[str, str] = {}

    def find(self, toplevels: set[str]) -> list[tuple[str, WindowInfo]]:
        """``(path, info)`` of every popup that shows now."""
        candidates = sorted(self.monitor.shown() - toplevels)
        if not candidates:
            return []
        found, others = self.classify(candidates, showing=True)
        # Not among the application's children: a popup, whatever its role says.
        popups = [
            (path, info.model_copy(update={"kind": "popup"}) if info.kind == "window" else info)
            for path, info in found
        ]
        self.monitor.forget_shown(others)
        for path in others:
            self._owners.pop(path, None)
        return popups

    def classify(
        self, paths: list[str], *, showing: bool
    ) -> tuple[list[tuple[str, WindowInfo]], set[str]]:
        """Which of ``paths`` are top-level objects of the application (its windows, or popups
        it leaves out of its children), described; and the rest (widgets inside windows, or
        gone; with ``showing``, also those that no longer show)."""
        t = self.reader.t
        tmpls = (t.parent, t.role, t.state, t.ident, t.name, t.extents)
        replies = self.reader.client.call_many(
            [(tmpl, path) for path in paths for tmpl in tmpls], timeout=self.reader.timeout
        )
        root = self.reader.app.root
        found: list[tuple[str, WindowInfo]] = []
        others: set[str] = set()
        for i, path in enumerate(paths):
            parent, role, state, ident, name, extents = replies[6 * i : 6 * i + 6]
            if any(isinstance(r, Exception) for r in (parent, role, state, ident, name)):
                others.add(path)  # gone
                continue
            states = C.state_names(state[0])
            if parent[0][1] != root or (showing and "showing" not in states):
                others.add(path)  # a widget inside a window, or a popup that hid again
                continue
            role_text = C.role_name(role[0])
            kind = _kind(role_text)
            title = name[0]
            if kind in ("menu", "popup") and title == self.reader.app.name:
                # Qt names an untitled popup after the application: no title of its own.
                title = ""
            if kind == "popup":
                title = self._owner(path) or title
            found.append(
                (
                    path,
                    WindowInfo(
                        title=title,
                        id=normalize_id(ident[0], role_text),
                        role=role_text,
                        kind=kind,
                        is_dialog=kind == "dialog",
                        active="active" in states,
                        bounds=None if isinstance(extents, Exception) else tuple(extents[0]),
                    ),
                )
            )
        return found, others

    def _owner(self, path: str) -> str:
        """For a drop-down: ``drop-down of #SizeCombo``. Qt's combo box drop-down holds the combo
        box's own list, whose parent is the combo box, not the drop-down."""
        if path in self._owners:
            return self._owners[path]
        label = ""
        try:
            children = self.reader.call(path, C.ACCESSIBLE, "GetChildren")[0]
            if children:
                owner = self.reader.call(
                    children[0][1], C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Parent")
                )[0][1]
                if owner not in (path, self.reader.app.root):
                    label = self._describe(owner)
        except Exception:  # a popup that closes while we look: no owner to name
            label = ""
        self._owners[path] = label
        return label

    def _describe(self, owner: str) -> str:
        info = self.reader.element(owner)
        ident = normalize_id(info.id, info.role)
        who = f"#{ident}" if ident else repr(info.name)
        return f"drop-down of {who}" if info.role == "combo box" else f"popup of {who}"


class WindowNotes:
    """Describes each window or popup of the application as soon as its first event arrives
    (``Window:Activate``, or the ``showing`` state), on its own thread."""

    def __init__(self, finder: PopupFinder) -> None:
        self.finder = finder
        self._notes: dict[str, WindowInfo] = {}
        self._others: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seq = finder.monitor.seq
        self._thread = threading.Thread(target=self._run, name="atspi-window-notes", daemon=True)
        self._thread.start()

    def get(self, path: str) -> WindowInfo | None:
        """What was read of the window or popup at ``path`` while it was open, if anything."""
        with self._lock:
            return self._notes.get(path)

    def _run(self) -> None:
        monitor = self.finder.monitor
        while not self._stop.is_set():
            events = monitor.wait_after(self._seq, timeout=0.5)
            if not events:
                if monitor.closed:  # woken by the monitor's close: stop now, not in 0.5 s
                    return
                continue
            self._seq = events[-1].seq
            with self._lock:
                known = self._notes.keys() | self._others
            paths = sorted(
                {
                    e.path
                    for e in events
                    if (
                        e.kind in _OPENING
                        or (e.kind == "Object:StateChanged" and e.detail == "showing" and e.detail1)
                    )
                    and e.path not in known
                }
            )
            if not paths:
                continue
            with contextlib.suppress(Exception):  # the application left, a call timed out
                found, others = self.finder.classify(paths, showing=False)
                with self._lock:
                    self._notes.update(found)
                    if len(self._others) > 50_000:  # one entry per widget that ever showed
                        self._others.clear()
                    self._others |= others

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        self._thread.join(2.0)
