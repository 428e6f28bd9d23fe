"""How every AT-SPI action runs and is reported (see :class:`AtspiActions`): note the top-level
windows (and, with ``diff``, the tree), deliver the input, wait for the application's
accessibility events to start and then settle (or for the caller's expectation, or a read-back),
then report the windows and popups opened and closed, the active dialog and the diff. Also the
target checks every action shares: enabled, not behind a modal window, on screen."""

from __future__ import annotations

import time
from collections.abc import Callable

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.app_exit import ProcessWatch
from loopkit_ui.backends.atspi_core import AtspiCore
from loopkit_ui.backends.atspi_tree import explicit_id
from loopkit_ui.backends.diff import diff_trees
from loopkit_ui.backends.lookup import window_kind
from loopkit_ui.backends.protocol import (
    ActionResult,
    AppNotFoundError,
    ElementDisabledError,
    ElementNotFoundError,
    ElementVanishedError,
    Expectation,
    Locator,
    TreeNode,
    UIError,
    WindowInfo,
    WindowReport,
)

__all__ = ["AtspiActions"]


class AtspiActions(AtspiCore):
    """The action pattern and the target checks (the public actions are in
    :class:`~loopkit_ui.backends.atspi.AtspiBackend`)."""

    # -- the action pattern ------------------------------------------------------------------

    def _act(
        self,
        action: str,
        label: str,
        perform: Callable[[], str | None],
        *,
        expect: Expectation | None = None,
        diff: bool = False,
        verify: Callable[[], tuple[bool, str]] | None = None,
        verify_timeout: float = 2.0,
    ) -> ActionResult:
        # The clock started when the operation began (lookup included): answers report the
        # whole cost of the call.
        start = self._op_start
        # The same visible-window read as "after" (a hidden top-level window is in neither), and
        # with titles: a window that closes is named as it was, not by its object path.
        before_info = dict(self._op_windows if self._op_windows is not None else self._windows())
        before_nodes = self._diff_tree() if diff else None
        seq = self.monitor.seq
        try:
            refused = perform()
            success, effect, detail = self._confirm(refused, seq, expect, verify, verify_timeout)
            windows = self._windows()
            after_nodes = self._diff_tree() if before_nodes is not None else None
        except (AppNotFoundError, ElementVanishedError):
            # Clicking Quit ends the application: that is the action's effect, not an error.
            ended = self._app_ending()
            if ended is None:
                raise
            return ActionResult(
                success=True,
                id=label,
                action=action,
                ms=round((time.perf_counter() - start) * 1000, 1),
                effect=f"the application exited ({ended})",
                windows=WindowReport(
                    count=0, closed=[self._window_label(w) for w in before_info.values()]
                ),
            )
        after = {path for path, _ in windows}
        titles = {path: self._window_label(info) for path, info in windows}
        opened = [titles[p] for p in after - set(before_info)]
        closed = [self._window_label(before_info[p]) for p in set(before_info) - after]
        # Windows (and popups) that opened and closed again during the action show up only as
        # events; they are named like any other window, never by their object number.
        transient = self._transient(seq, after | set(before_info))
        opened += transient
        closed += transient
        dialogs = [info for _, info in windows if info.is_dialog]
        active = next((d for d in dialogs if d.active), dialogs[-1] if dialogs else None)
        tree_diff = (
            diff_trees(before_nodes, after_nodes)
            if before_nodes is not None and after_nodes is not None
            else None
        )
        return ActionResult(
            success=success,
            id=label,
            action=action,
            ms=round((time.perf_counter() - start) * 1000, 1),
            effect=effect,
            active_dialog=self._window_label(active) if active else None,
            windows=WindowReport(count=len(windows), opened=opened, closed=closed),
            diff=tree_diff,
            detail=detail,
        )

    def _confirm(
        self,
        refused: str | None,
        seq: int,
        expect: Expectation | None,
        verify: Callable[[], tuple[bool, str]] | None,
        verify_timeout: float,
    ) -> tuple[bool, str, str | None]:
        """Wait for the action's effect: ``(success, effect, detail)``."""
        monitor = self.monitor
        if refused is not None:
            # perform() could not carry the action out; the string says why.
            return False, "not carried out", refused
        if expect is not None and (expect.appear or expect.disappear):
            success, effect = self._await_expectation(expect)
            return success, effect, None
        if verify is not None:
            ok: list[tuple[bool, str]] = []

            def check() -> bool:
                ok[:] = [verify()]
                return ok[0][0]

            success = monitor.wait_until(check, timeout=verify_timeout)
            effect = "confirmed by reading back" if success else "not confirmed"
            return success, effect, ok[0][1] if ok else None
        events = monitor.wait_settled(
            seq, first=self.settle_first, quiet=self.settle_quiet, cap=self.settle_cap
        )
        effect = (
            f"{len(events)} accessibility events, then quiet"
            if events
            else f"no accessibility event within {self.settle_first * 1000:.0f} ms "
            "(the action may have had no effect)"
        )
        return True, effect, None

    def _transient(self, seq: int, known: set[str]) -> list[str]:
        """Labels of the windows and popups that opened after ``seq`` and are gone again."""
        labels: dict[str, str] = {}
        shown: set[str] = set()
        for event in self.monitor.since(seq):
            if event.path in known or event.path in labels:
                continue
            if event.kind in ("Window:Activate", "Window:Create"):
                labels[event.path] = self._transient_label(event.path, event.window_title)
            elif event.kind == "Object:StateChanged" and event.detail == "showing":
                if event.detail1:
                    shown.add(event.path)
                elif event.path in shown:
                    # Shown and hidden within the action, like the drop-down select_item opens
                    # and closes: reported when it was a popup (or window) of the application.
                    note = self._notes.get(event.path) if self._notes is not None else None
                    if note is not None:
                        labels[event.path] = note.label()
        return list(labels.values())

    def _transient_label(self, path: str, title: str | None = None) -> str:
        """``title #id`` of a window seen only through its events: as read while it was open
        (window notes, or the tree mirror), else read now, else its event's title; never its
        object number."""
        note = self._notes.get(path) if self._notes is not None else None
        if note is not None:
            return note.label()
        node = self._mirror.nodes.get(path) if self._mirror is not None else None
        if node is not None:
            return WindowInfo(
                title=node.name,
                id=explicit_id(node.id, node.role),
                role=node.role,
                kind=window_kind(node.role),
            ).label()
        try:
            info = self.reader.element(path)
        except UIError:
            return title or "a window (closed before it could be read)"
        return WindowInfo(
            title=info.name or title or "",
            id=explicit_id(info.id or "", info.role),
            role=info.role,
            kind=window_kind(info.role),
        ).label()

    def _app_ending(self) -> str | None:
        """When the application is exiting (its root object is gone): wait for the process to
        end and say how (``exit status 1``); None when the application is still there."""
        app = self._app
        if app is None or app.pid is None:
            return None
        try:
            self.reader.call(app.root, C.ACCESSIBLE, "GetRole")
        except (AppNotFoundError, ElementVanishedError):
            pass
        else:
            if not self._app_gone:
                return None  # an element vanished, not the application
        ended, how = ProcessWatch(app.pid).wait(timeout=5.0)
        if not ended:
            return None
        self._app_gone = True
        return how

    def _await_expectation(self, expect: Expectation) -> tuple[bool, str]:
        missing: list[str] = []

        def present(target: str) -> bool:
            try:
                node = self._find(Locator(target=target))
            except ElementNotFoundError:
                return False
            return "hidden" not in self._tree_node_states(node)

        def check() -> bool:
            missing[:] = [t for t in expect.appear if not present(t)]
            missing.extend(f"{t} (still there)" for t in expect.disappear if present(t))
            return not missing

        if self.monitor.wait_until(check, timeout=expect.timeout):
            return True, "expected elements appeared/disappeared"
        # The mirror follows the app's events; on a loaded desktop one can come late or not at
        # all. Before saying the expectation failed, read the whole tree once more.
        self._tree(fresh=True)
        if check():
            return True, "expected elements appeared/disappeared"
        return False, f"expectation not met after {expect.timeout:g} s: {', '.join(missing)}"

    def _tree_node_states(self, node: TreeNode) -> list[str]:
        from loopkit_ui.backends.atspi_tree import visible_states

        try:
            return visible_states(self.reader.states(node.key))
        except ElementVanishedError:
            return ["hidden"]

    # -- targets -----------------------------------------------------------------------------

    def _target(self, locator: Locator, *, need_enabled: bool = True) -> tuple[TreeNode, str]:
        """Resolve, check it is usable, and return the node and its label for answers."""
        node = self._find(locator)
        try:
            states = self.reader.states(node.key)
        except ElementVanishedError:
            node = self._refind(locator)
            states = self.reader.states(node.key)
        label = locator.describe()
        if need_enabled and "enabled" not in states and "sensitive" not in states:
            raise ElementDisabledError(f"{label} is disabled; it cannot be used now")
        self._check_modal(node, label)
        return node, label

    def _check_modal(self, node: TreeNode, label: str) -> None:
        """Refuse input to a window behind a modal dialog: a user could not do it either, and
        a click there might land on the dialog. Qt reports no "modal" state, so message boxes
        (role alert, always modal in Qt) count as modal, and so does any dialog covering the
        element's centre."""
        windows = self._windows()
        self._op_windows = windows
        dialogs = [(p, w) for p, w in windows if w.is_dialog]
        if not dialogs:
            return
        top = self._window_path_of(node)
        if top is None or any(top == p for p, _ in dialogs):
            return
        point = self._center(node, label)
        for _path, info in reversed(dialogs):
            covered = point is not None and info.bounds is not None and _inside(point, info.bounds)
            if info.modal or info.role == "alert" or covered:
                raise UIError(
                    f"{label} is behind the open dialog {self._window_label(info)!r}; "
                    "answer or close the dialog first"
                )

    def _window_path_of(self, node: TreeNode) -> str | None:
        key = node.parent if node.role == "table cell" and node.parent else node.key
        window = self._window_of(key)
        return window.key if window is not None else None

    def _center(self, node: TreeNode, label: str) -> tuple[int, int] | None:
        try:
            x, y, w, h = self.reader.extents(node.key)
        except (UIError, Exception):
            return None
        if w <= 0 or h <= 0 or x < 0 or y < 0:
            return None
        center = x + w // 2, y + h // 2
        screen = self._x11.screen_size()
        if screen is not None and (center[0] >= screen[0] or center[1] >= screen[1]):
            # Beyond the screen's edge (a window wider than the screen): input would land
            # elsewhere, so the caller uses the element's accessible action or says why not.
            return None
        return center

    def _role_of(self, path: str) -> str | None:
        try:
            return C.role_name(self.reader.call(path, C.ACCESSIBLE, "GetRole")[0])
        except UIError:
            return None

    def _do_action(self, node: TreeNode, label: str, preferred: tuple[str, ...]) -> str:
        count = self.reader.call(node.key, C.PROPERTIES, "Get", "ss", (C.ACTION, "NActions"))[0]
        names = [
            self.reader.call(node.key, C.ACTION, "GetName", "i", (i,))[0] for i in range(count)
        ]
        for wanted in preferred:
            for i, name in enumerate(names):
                if name.lower() == wanted:
                    self.reader.call(node.key, C.ACTION, "DoAction", "i", (i,))
                    return name
        raise UIError(
            f"{label} offers no {'/'.join(preferred)} action (it has: {', '.join(names) or 'none'})"
        )


def _inside(point: tuple[int, int], bounds: tuple[int, int, int, int]) -> bool:
    x, y, w, h = bounds
    return x <= point[0] < x + w and y <= point[1] < y + h
