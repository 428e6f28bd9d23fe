"""The Windows backend's core: UI Automation through the ``uiautomation`` package.

Windows only, never imported on Linux: it cannot run on the Linux build machine, so it is
written against the package's documented API and kept honest by the conformance suite, which
``.github/workflows/windows-ui.yml`` runs on windows-latest.

- All UIA calls run on one dedicated thread (:mod:`.uia_thread`); a wedged call times out.
- ``waitTime=0`` on every action (the package sleeps 0.5 s after each by default).
- Patterns before the mouse: Invoke / Toggle / SelectionItem / Value first, synthesized input
  only when no pattern fits (double/right clicks, hover, drag, keys).
- Trees are read in bulk with a UIA cache request (one cross-process call for the subtree).
- Effects are confirmed by polling cached snapshots until the tree settles (UIA events from
  Python COM are not used), or by the caller's expectation.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

from loopkit_ui.backends.diff import diff_trees
from loopkit_ui.backends.lookup import resolve, top_level_of, window_kind
from loopkit_ui.backends.protocol import (
    ActionResult,
    AppInfo,
    AppNotFoundError,
    ElementDisabledError,
    ElementInfo,
    ElementNotFoundError,
    Expectation,
    Locator,
    StaleRefError,
    TreeNode,
    TreeSnapshot,
    UIError,
    WindowInfo,
    WindowReport,
)
from loopkit_ui.backends.uia_keys import escape_keys, to_send_keys
from loopkit_ui.backends.uia_thread import AutomationThread

__all__ = ["UIACore", "escape_keys", "to_send_keys"]

_T = TypeVar("_T")

# UIA property and pattern ids (UIAutomationClient.h)
_RUNTIME_ID, _BOUNDS, _PROCESS_ID, _CONTROL_TYPE = 30000, 30001, 30002, 30003
_HAS_FOCUS, _IS_ENABLED, _AUTOMATION_ID, _IS_OFFSCREEN, _NAME = 30008, 30010, 30011, 30022, 30005
_TREE_SCOPE_CHILDREN, _TREE_SCOPE_SUBTREE = 2, 7
_INVOKE, _VALUE, _GRID, _SELECTION_ITEM, _TOGGLE, _WINDOW = 10000, 10002, 10006, 10010, 10015, 10009
_IS_DIALOG = 30174
_EDIT_TYPE = 50004


def _role(control_type: int) -> str:
    import uiautomation as auto

    name = auto.ControlTypeNames.get(control_type, "CustomControl").removesuffix("Control")
    # "DataItem" -> "data item"
    return "".join(" " + c.lower() if c.isupper() else c for c in name).strip()


def _command_lines() -> dict[int, str]:
    """Command lines of running processes (psutil when installed, else PowerShell CIM)."""
    try:
        import psutil

        return {p.pid: " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])}
    except ImportError:
        pass
    script = (
        'Get-CimInstance Win32_Process | ForEach-Object { "$($_.ProcessId)`t$($_.CommandLine)" }'
    )
    try:
        out = subprocess.run(
            ["powershell", "-NoProfile", "-Command", script],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = (line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    return {int(pid): cmd for pid, cmd in lines if pid.strip().isdigit()}


class UIACore:
    """Plumbing, application, bulk reads, lookup, windows and the action pattern."""

    name = "uia"

    def __init__(
        self,
        *,
        app_name: str | None = None,
        pid: int | None = None,
        timeout: float = 5.0,
        attach_timeout: float = 3.0,
        settle_first: float = 0.3,
        settle_quiet: float = 0.06,
        settle_cap: float = 2.0,
        **_ignored: Any,
    ) -> None:
        self.app_name = app_name
        self.pid = pid
        self.timeout = timeout
        self.attach_timeout = attach_timeout
        self.settle_first = settle_first
        self.settle_quiet = settle_quiet
        self.settle_cap = settle_cap
        self._thread = AutomationThread()
        self._app: AppInfo | None = None
        self._elements: dict[str, Any] = {}  # node key -> IUIAutomationElement (thread-bound)
        self._generation = -1
        # During an action: every top-level window a read saw (key -> label), so a window that
        # opened and closed again between "before" and "after" is still reported.
        self._seen_windows: dict[str, str] | None = None

    # -- plumbing ----------------------------------------------------------------------------

    def _run(self, fn: Callable[[Any], _T], timeout: float | None = None) -> _T:
        return self._thread.run(fn, timeout or self.timeout * 4)

    def close(self) -> None:
        """Stop the automation thread."""
        self._thread.close()

    def _app_windows(self, auto: Any) -> list[Any]:
        uia = auto._AutomationClient.instance().IUIAutomation
        root = uia.GetRootElement()
        assert self._app is not None and self._app.pid is not None
        condition = uia.CreatePropertyCondition(_PROCESS_ID, self._app.pid)
        found = root.FindAll(_TREE_SCOPE_CHILDREN, condition)
        return [found.GetElement(i) for i in range(found.Length if found else 0)]

    def attach(self) -> AppInfo:
        """Find the application by pid, window title, process name or command-line word."""
        return self._run(self._attach, self.attach_timeout + self.timeout * 4)

    def _attach(self, auto: Any) -> AppInfo:
        app = self._app
        current = app is not None and self._generation == self._thread.generation
        if current and app is not None and app.pid is not None and self._alive(auto, app.pid):
            return app
        self._elements.clear()
        deadline = time.monotonic() + self.attach_timeout
        while True:
            windows: dict[int, str] = {}
            for control in auto.GetRootControl().GetChildren():
                windows.setdefault(control.ProcessId, control.Name)
            match = self._match(windows)
            if match is not None:
                self._app = AppInfo(name=windows[match], pid=match, toolkit="UIA")
                self._generation = self._thread.generation
                return self._app
            if time.monotonic() >= deadline:
                wanted = f"pid {self.pid}" if self.pid is not None else repr(self.app_name)
                running = ", ".join(f"{t!r} (pid {p})" for p, t in windows.items() if t)
                raise AppNotFoundError(
                    f"application {wanted} is not running (no top-level window). "
                    f"Windows: {running or 'none'}"
                )
            time.sleep(0.1)

    @staticmethod
    def _alive(auto: Any, pid: int) -> bool:
        return any(c.ProcessId == pid for c in auto.GetRootControl().GetChildren())

    def _match(self, windows: dict[int, str]) -> int | None:
        if self.pid is not None:
            return self.pid if self.pid in windows else None
        if not self.app_name:
            return next(iter(windows), None) if len(windows) == 1 else None
        wanted = self.app_name.casefold()
        by_title = [p for p, title in windows.items() if title.casefold() == wanted]
        if by_title:
            return by_title[0]
        commands = _command_lines()
        for pid in windows:
            words = commands.get(pid, "").replace("\\", "/").split()
            names = {os.path.basename(w).removesuffix(".py").removesuffix(".exe") for w in words}
            if self.app_name in names or self.app_name in words:
                return pid
        return None

    # -- bulk read ---------------------------------------------------------------------------

    def _read(
        self, auto: Any, window: str | None = None, budget: int = 5000
    ) -> tuple[list[TreeNode], bool]:
        """One cache request per top-level window: the whole subtree in one cross-process call."""
        uia = auto._AutomationClient.instance().IUIAutomation
        request = uia.CreateCacheRequest()
        for prop in (
            _NAME,
            _AUTOMATION_ID,
            _CONTROL_TYPE,
            _IS_ENABLED,
            _IS_OFFSCREEN,
            _HAS_FOCUS,
            _RUNTIME_ID,
        ):
            request.AddProperty(prop)
        request.TreeScope = _TREE_SCOPE_SUBTREE
        request.TreeFilter = uia.ControlViewCondition
        assert self._app is not None
        app_key = f"app:{self._app.pid}"
        nodes = [
            TreeNode(key=app_key, parent=None, depth=0, role="application", name=self._app.name)
        ]
        self._elements.clear()
        truncated = False
        for top in self._app_windows(auto):
            cached = top.BuildUpdatedCache(request)
            if window and window not in (cached.CachedName, cached.CachedAutomationId):
                continue
            stack: list[tuple[Any, str, int]] = [(cached, app_key, 1)]
            while stack:
                element, parent, depth = stack.pop()
                if len(nodes) >= budget:
                    truncated = True
                    break
                key = ".".join(str(n) for n in element.GetCachedPropertyValue(_RUNTIME_ID))
                states = []
                if not element.CachedIsEnabled:
                    states.append("disabled")
                if element.CachedIsOffscreen:
                    states.append("hidden")
                if element.CachedHasKeyboardFocus:
                    states.append("focused")
                node = TreeNode(
                    key=key,
                    parent=parent,
                    depth=depth,
                    role=_role(element.CachedControlType),
                    name=element.CachedName or "",
                    id=element.CachedAutomationId or None,
                    states=states,
                )
                nodes.append(node)
                if depth == 1 and self._seen_windows is not None:
                    self._seen_windows.setdefault(
                        key, node.name + (f" #{node.id}" if node.id else "")
                    )
                self._elements[key] = element
                children = element.GetCachedChildren()
                count = children.Length if children else 0
                for i in reversed(range(count)):
                    stack.append((children.GetElement(i), key, depth + 1))
        if window and len(nodes) == 1:
            raise ElementNotFoundError(f"no window with id or title {window!r}")
        return (nodes[1:] if window else nodes), truncated

    def snapshot(self, *, window: str | None = None, node_budget: int = 2000) -> TreeSnapshot:
        """The application's tree (or one window's) in one cached read per window."""

        def run(auto: Any) -> TreeSnapshot:
            start = time.perf_counter()
            self._attach(auto)
            nodes, truncated = self._read(auto, window, node_budget)
            assert self._app is not None
            return TreeSnapshot(
                app=self._app.name,
                nodes=nodes,
                truncated=truncated,
                node_budget=node_budget,
                ms=round((time.perf_counter() - start) * 1000, 1),
            )

        return self._run(run)

    def _find(self, auto: Any, locator: Locator) -> tuple[TreeNode, Any, list[TreeNode]]:
        """Resolve a locator on a fresh snapshot: the node, its control, and the snapshot."""
        self._attach(auto)
        nodes, _ = self._read(auto)
        if locator.key is not None:  # a snapshot ref: that element, or gone
            found = [n for n in nodes if n.key == locator.key]
            if not found:
                raise StaleRefError(
                    f"{locator.describe()} is stale: its element is gone from the app. Use a "
                    "ref from the latest snapshot (ui_snapshot), or the element's id or name"
                )
            node = found[0]
        else:
            node = resolve(nodes, locator)
        control = auto.Control.CreateControlFromElement(self._elements[node.key])
        if locator.row is None and locator.column is None:
            return node, control, nodes
        if locator.row is None or locator.column is None:
            raise UIError(f"{locator.describe()}: give both row and column for a table cell")
        grid = control.GetPattern(_GRID)
        if grid is None:
            raise UIError(
                f"{locator.target!r} is a {node.role}, not a table; row/column need a table"
            )
        if not (0 <= locator.row < grid.RowCount and 0 <= locator.column < grid.ColumnCount):
            raise ElementNotFoundError(
                f"{locator.target!r}: cell [{locator.row}, {locator.column}] is outside the "
                f"table ({grid.RowCount} rows x {grid.ColumnCount} columns; "
                "rows and columns count from 0)"
            )
        cell = grid.GetItem(locator.row, locator.column)
        cell_node = TreeNode(
            key=".".join(map(str, cell.GetRuntimeId())),
            parent=node.key,
            depth=node.depth + 1,
            role=_role(cell.ControlType),
            name=cell.Name,
        )
        return cell_node, cell, nodes

    @staticmethod
    def _text(control: Any) -> tuple[str | None, str | None]:
        value_pattern = control.GetPattern(_VALUE)
        if value_pattern is not None:
            value = value_pattern.Value
            return value, value
        toggle = control.GetPattern(_TOGGLE)
        if toggle is not None:
            return control.Name, "checked" if toggle.ToggleState == 1 else "unchecked"
        return control.Name, control.Name

    def _info(self, auto: Any, locator: Locator) -> ElementInfo:
        node, control, nodes = self._find(auto, locator)
        rect = control.BoundingRectangle
        text, value = self._text(control)
        window_key = node.parent if locator.row is not None else node.key
        top = top_level_of(nodes).get(window_key or "")
        return ElementInfo(
            id=control.AutomationId or None,
            name=control.Name,
            role=_role(control.ControlType),
            states=node.states,
            text=text,
            value=value,
            bounds=(rect.left, rect.top, rect.width(), rect.height()),
            child_count=len(control.GetChildren()),
            enabled=bool(control.IsEnabled),
            visible=not control.IsOffscreen,
            focused=bool(control.HasKeyboardFocus),
            row=locator.row,
            column=locator.column,
            window=top.name if top else None,
        )

    def get_element(self, locator: Locator) -> ElementInfo:
        """Read one element live."""
        return self._run(lambda auto: self._info(auto, locator))

    def get_property(self, locator: Locator, name: str) -> str | None:
        """An ElementInfo field by name."""
        data = self.get_element(locator).model_dump()
        if name not in data:
            raise UIError(
                f"unknown property {name!r} of {locator.describe()}; available: "
                + ", ".join(sorted(data))
            )
        return None if data[name] is None else str(data[name])

    def _windows(self, auto: Any) -> list[tuple[str, WindowInfo]]:
        result = []
        for element in self._app_windows(auto):
            control = auto.Control.CreateControlFromElement(element)
            pattern = control.GetPattern(_WINDOW)
            modal = bool(pattern.IsModal) if pattern is not None else False
            minimized = pattern is not None and pattern.WindowVisualState == 2
            try:
                # UIA_IsDialogPropertyId (Windows 10 1809+); absent on older systems.
                dialog = modal or bool(control.GetPropertyValue(_IS_DIALOG))
            except Exception:
                dialog = modal
            rect = control.BoundingRectangle
            role = _role(control.ControlType)
            info = WindowInfo(
                title=control.Name,
                id=control.AutomationId or None,
                role=role,
                # Windows lists a context menu (MenuControl) and a tooltip as top-level windows
                # of the process; their kind comes from that role (not run here: Windows only).
                kind=window_kind(role, is_dialog=dialog),
                is_dialog=dialog,
                modal=modal,
                minimized=minimized,
                active=control.NativeWindowHandle == auto.GetForegroundWindow(),
                bounds=(rect.left, rect.top, rect.width(), rect.height()),
            )
            result.append((".".join(map(str, control.GetRuntimeId())), info))
        return result

    def list_windows(self) -> list[WindowInfo]:
        """The application's top-level windows, dialogs included."""

        def run(auto: Any) -> list[WindowInfo]:
            self._attach(auto)
            return [info for _, info in self._windows(auto)]

        return self._run(run)

    # -- the action pattern ------------------------------------------------------------------

    def _act(
        self,
        auto: Any,
        action: str,
        label: str,
        perform: Callable[[], str | None],
        *,
        expect: Expectation | None,
        diff: bool,
        verify: Callable[[], tuple[bool, str]] | None = None,
    ) -> ActionResult:
        start = time.perf_counter()
        before_windows = {key: info for key, info in self._windows(auto)}
        before = self._read(auto)[0] if diff else None
        signature = self._signature(auto)
        seen: dict[str, str] = {}
        self._seen_windows = seen
        try:
            refused = perform()
            success, effect, detail = True, "", None
            if refused is not None:
                success, effect, detail = False, "not carried out", refused
            elif expect is not None and (expect.appear or expect.disappear):
                success, effect = self._await(auto, expect)
            elif verify is not None:
                success, detail = self._poll(auto, verify, 2.0)
                effect = "confirmed by reading back" if success else "not confirmed"
            else:
                changed = self._settle(auto, signature)
                effect = (
                    "the tree changed, then settled"
                    if changed
                    else f"no change within {self.settle_first * 1000:.0f} ms "
                    "(the action may have had no effect)"
                )
            windows = self._windows(auto)
        finally:
            self._seen_windows = None
        after = dict(windows)
        label_of = {
            **{k: _label(i) for k, i in before_windows.items()},
            **{k: _label(i) for k, i in after.items()},
        }
        # Seen by a read during the action, but neither before nor after it: opened and closed.
        transient = [v for k, v in seen.items() if k not in before_windows and k not in after]
        dialogs = [info for _, info in windows if info.is_dialog]
        active = next((d for d in dialogs if d.active), dialogs[-1] if dialogs else None)
        return ActionResult(
            success=success,
            id=label,
            action=action,
            ms=round((time.perf_counter() - start) * 1000, 1),
            effect=effect,
            active_dialog=_label(active) if active else None,
            windows=WindowReport(
                count=len(windows),
                opened=[label_of[k] for k in after if k not in before_windows] + transient,
                closed=[label_of[k] for k in before_windows if k not in after] + transient,
            ),
            diff=diff_trees(before, self._read(auto)[0]) if before is not None else None,
            detail=detail,
        )

    def _signature(self, auto: Any) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        return tuple((n.key, n.name, tuple(n.states)) for n in self._read(auto)[0])

    def _settle(self, auto: Any, before: object) -> bool:
        """Poll until the tree differs from ``before`` and then stays the same for
        ``settle_quiet`` s; False when nothing changed within ``settle_first`` s."""
        start = time.monotonic()
        last = before
        changed_at: float | None = None
        while time.monotonic() - start < self.settle_cap:
            time.sleep(0.02)
            now = self._signature(auto)
            if now != last:
                changed_at, last = time.monotonic(), now
            elif changed_at is not None and time.monotonic() - changed_at >= self.settle_quiet:
                return True
            elif changed_at is None and time.monotonic() - start >= self.settle_first:
                return False
        return changed_at is not None

    def _poll(
        self, auto: Any, check: Callable[[], tuple[bool, str]], timeout: float
    ) -> tuple[bool, str]:
        deadline = time.monotonic() + timeout
        while True:
            ok, detail = check()
            if ok or time.monotonic() >= deadline:
                return ok, detail
            time.sleep(0.03)

    def _await(self, auto: Any, expect: Expectation) -> tuple[bool, str]:
        def check() -> tuple[bool, str]:
            nodes = self._read(auto)[0]
            missing = [t for t in expect.appear if not _present(nodes, t)]
            missing += [f"{t} (still there)" for t in expect.disappear if _present(nodes, t)]
            return not missing, ", ".join(missing)

        ok, missing = self._poll(auto, check, expect.timeout)
        return ok, (
            "expected elements appeared/disappeared"
            if ok
            else f"expectation not met after {expect.timeout:g} s: {missing}"
        )

    def _usable(
        self, auto: Any, locator: Locator, need_enabled: bool = True
    ) -> tuple[TreeNode, Any]:
        node, control, nodes = self._find(auto, locator)
        if need_enabled and not control.IsEnabled:
            raise ElementDisabledError(f"{locator.describe()} is disabled; it cannot be used now")
        windows = self._windows(auto)
        window_key = node.parent if locator.row is not None else node.key
        top = top_level_of(nodes).get(window_key or "")
        modal = [(k, w) for k, w in windows if w.modal or w.is_dialog]
        if modal and top is not None and all(top.key != k for k, _ in modal):
            raise UIError(
                f"{locator.describe()} is behind the open dialog {_label(modal[-1][1])!r}; "
                "answer or close the dialog first"
            )
        return node, control


def _label(info: WindowInfo) -> str:
    return info.title + (f" #{info.id}" if info.id else "")


def _present(nodes: list[TreeNode], target: str) -> bool:
    try:
        node = resolve(nodes, Locator(target=target))
    except ElementNotFoundError:
        return False
    return "hidden" not in node.states


def _center(control: Any, locator: Locator) -> tuple[int, int]:
    rect = control.BoundingRectangle
    if rect.width() <= 0 or rect.height() <= 0:
        raise UIError(f"{locator.describe()} is not on screen; it cannot be clicked")
    return rect.left + rect.width() // 2, rect.top + rect.height() // 2
