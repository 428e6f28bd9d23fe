"""The AT-SPI backend's core: the bus connection, finding the application, the tree mirror
(with the open popups), top-level windows and the read operations. The action pattern lives in
``atspi_actions.py`` on top of this, the actions in ``atspi.py``."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_events import EventMonitor, register_listeners
from loopkit_ui.backends.atspi_input import InputSynth
from loopkit_ui.backends.atspi_mirror import TreeMirror
from loopkit_ui.backends.atspi_popups import PopupFinder, WindowNotes
from loopkit_ui.backends.atspi_tree import DIALOG_ROLES, AppRef, TreeReader, explicit_id
from loopkit_ui.backends.atspi_x11 import X11Modality
from loopkit_ui.backends.dbus_client import DBusCallError, DBusClient, DBusTimeout, Method
from loopkit_ui.backends.lookup import resolve, top_level_of, window_kind
from loopkit_ui.backends.protocol import (
    AppInfo,
    AppNotFoundError,
    ElementInfo,
    ElementNotFoundError,
    ElementVanishedError,
    Locator,
    StaleRefError,
    TreeNode,
    TreeSnapshot,
    UIError,
    UITimeoutError,
    WindowInfo,
)
from loopkit_ui.headless_desktop import pid_alive

__all__ = ["AtspiCore", "a11y_bus_address"]

_T = TypeVar("_T")


def a11y_bus_address(env: dict[str, str] | None = None) -> str:
    """The accessibility bus address: ``AT_SPI_BUS_ADDRESS``, else asked from the session bus."""
    env = dict(os.environ) if env is None else env
    if env.get("AT_SPI_BUS_ADDRESS"):
        return env["AT_SPI_BUS_ADDRESS"]
    session = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not session:
        raise AppNotFoundError(
            "no accessibility bus: neither AT_SPI_BUS_ADDRESS nor DBUS_SESSION_BUS_ADDRESS is set "
            "(run inside a desktop session, e.g. python -m loopkit_ui.session -- ...)"
        )
    client = DBusClient(session)
    try:
        return str(client.call("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")[0])
    except (DBusCallError, DBusTimeout) as error:
        raise AppNotFoundError(f"the session bus has no accessibility bus: {error}") from error
    finally:
        client.close()


def _cmdline(pid: int | None) -> list[str]:
    if pid is None:
        return []
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _matches_process(wanted: str, name: str, pid: int | None) -> bool:
    """An app matches by accessible name, or by a word of its command line
    (``python -m invoice_app`` matches ``invoice_app``; ``/x/mini_app.py`` matches ``mini_app``)."""
    if wanted.casefold() == name.casefold():
        return True
    for token in _cmdline(pid):
        base = os.path.basename(token)
        if wanted in (token, base, base.removesuffix(".py")):
            return True
    return False


class AtspiCore:
    """Connection, application, index and reads (see :class:`AtspiBackend`)."""

    name = "atspi"

    def __init__(
        self,
        *,
        app_name: str | None = None,
        pid: int | None = None,
        bus_address: str | None = None,
        timeout: float = 5.0,
        attach_timeout: float = 3.0,
        settle_first: float = 0.3,
        settle_quiet: float = 0.015,
        settle_cap: float = 2.0,
        display: str | None = None,
    ) -> None:
        self.app_name = app_name
        self.pid = pid
        self.timeout = timeout
        self.attach_timeout = attach_timeout
        self.settle_first = settle_first
        self.settle_quiet = settle_quiet
        self.settle_cap = settle_cap
        self.display = display or os.environ.get("DISPLAY")
        self._bus_address = bus_address
        self._client: DBusClient | None = None
        self._app: AppRef | None = None
        self._app_gone = False
        self._reader: TreeReader | None = None
        self._monitor: EventMonitor | None = None
        self._popups: PopupFinder | None = None
        self._notes: WindowNotes | None = None
        self._x11 = X11Modality(self.display)
        self._input: InputSynth | None = None
        self._mirror: TreeMirror | None = None
        # One operation at a time: actions must not interleave (their event windows overlap).
        self._lock = threading.RLock()
        self._op_start = time.perf_counter()
        self._op_windows: list[tuple[str, WindowInfo]] | None = None

    # -- connection and application ----------------------------------------------------------

    def _connect(self) -> DBusClient:
        if self._client is None or self._client.closed:
            address = self._bus_address or a11y_bus_address()
            try:
                client = DBusClient(address, connect_timeout=self.timeout)
            except OSError as error:
                raise AppNotFoundError(
                    f"cannot connect to the accessibility bus {address!r}: {error}"
                ) from error
            register_listeners(client, self.timeout)
            client.add_match(
                "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'",
                timeout=self.timeout,
            )
            client.subscribe(
                lambda m: m.member == "NameOwnerChanged" and m.sender == "org.freedesktop.DBus",
                self._on_owner_changed,
            )
            self._client = client
            self._input = InputSynth(client, timeout=self.timeout)
        return self._client

    def _on_owner_changed(self, message: Any) -> None:
        name, _old, new = message.body
        if self._app is not None and name == self._app.bus and not new:
            self._app_gone = True

    def _applications(self) -> list[AppRef]:
        client = self._connect()
        refs = client.call(
            C.REGISTRY, C.REGISTRY_ROOT, C.ACCESSIBLE, "GetChildren", timeout=self.timeout
        )[0]
        apps = []
        for bus, root in refs:
            try:
                name = client.call(
                    bus, root, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Name"), timeout=1.0
                )[0]
                pid = client.call(
                    "org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus",
                    "GetConnectionUnixProcessID",
                    "s",
                    (bus,),
                    timeout=1.0,
                )[0]
            except (DBusCallError, DBusTimeout):
                continue  # an application that is exiting
            apps.append(AppRef(bus, root, name, pid))
        return apps

    def _select(self, apps: list[AppRef]) -> AppRef | None:
        if self.pid is not None:
            found = [a for a in apps if a.pid == self.pid]
        elif self.app_name:
            found = [a for a in apps if _matches_process(self.app_name, a.name, a.pid)]
        else:
            found = apps
        if len(found) > 1:
            listed = ", ".join(f"{a.name!r} (pid {a.pid})" for a in found)
            wanted = self.app_name or "any application"
            raise AppNotFoundError(
                f"{len(found)} running applications match {wanted!r}: {listed}; "
                "give a pid or a more specific app name"
            )
        return found[0] if found else None

    def warm_up(self) -> None:
        """Connect to the accessibility bus and wake its registry now (the bus starts the
        registry daemon on first use), so the first call does not pay for either. Errors are
        left for that call to meet."""
        with contextlib.suppress(Exception), self._lock:
            client = self._connect()
            client.call(
                C.REGISTRY, C.REGISTRY_ROOT, C.ACCESSIBLE, "GetChildren", timeout=self.timeout
            )

    def attach(self) -> AppInfo:
        """Find the application (waiting up to ``attach_timeout`` for it to register)."""
        with self._lock:
            app = self._ensure_app()
            return AppInfo(name=app.name, pid=app.pid, toolkit="Qt" if app.bus else None)

    def _ensure_app(self) -> AppRef:
        if self._app is not None and not self._app_gone:
            return self._app
        self._detach()
        deadline = time.monotonic() + self.attach_timeout
        while True:
            apps = self._applications()
            app = self._select(apps)
            if app is not None:
                break
            # A process that no longer exists will not register: fail now, not at the deadline.
            if time.monotonic() >= deadline or (self.pid is not None and not pid_alive(self.pid)):
                wanted = f"pid {self.pid}" if self.pid is not None else repr(self.app_name)
                running = ", ".join(f"{a.name!r} (pid {a.pid})" for a in apps) or "none"
                raise AppNotFoundError(
                    f"application {wanted} is not running (or exposes no accessibility tree; "
                    f"Qt needs QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1). Running applications: {running}"
                )
            time.sleep(0.1)
        client = self._connect()
        self._app = app
        self._app_gone = False
        self._reader = TreeReader(client, app, timeout=self.timeout)
        self._monitor = EventMonitor(client, app.bus)
        self._mirror = TreeMirror(self._reader, self._monitor)
        self._popups = PopupFinder(self._reader, self._monitor)
        self._notes = WindowNotes(self._popups)
        return app

    def _detach(self) -> None:
        if self._monitor is not None:
            self._monitor.close()
        if self._notes is not None:
            self._notes.close()
        self._app = self._reader = self._monitor = self._mirror = None
        self._popups = self._notes = None

    def close(self) -> None:
        """Drop the application and close the bus connection."""
        with self._lock:
            self._detach()
            if self._client is not None:
                self._client.close()
                self._client = None
            self._x11.close()

    def _guarded(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` under the operation lock with the application attached; bus timeouts
        become UITimeoutError, and a vanished application AppNotFoundError."""
        with self._lock:
            self._op_start = time.perf_counter()
            self._op_windows = None
            self._ensure_app()
            try:
                return fn()
            except AppNotFoundError:
                # Its bus name may not have been announced as gone yet: look it up again
                # on the next call (it may have restarted).
                self._app_gone = True
                raise
            except DBusTimeout as error:
                raise UITimeoutError(
                    f"the application did not answer in time ({error}); a modal dialog or a busy "
                    "UI thread may be blocking it"
                ) from error
            except DBusCallError as error:
                if "ServiceUnknown" in error.name or self._app_gone:
                    raise AppNotFoundError(f"the application is gone: {error}") from error
                raise UIError(f"accessibility call failed: {error}") from error

    @property
    def reader(self) -> TreeReader:
        assert self._reader is not None
        return self._reader

    @property
    def monitor(self) -> EventMonitor:
        assert self._monitor is not None
        return self._monitor

    @property
    def mirror(self) -> TreeMirror:
        assert self._mirror is not None
        return self._mirror

    @property
    def input(self) -> InputSynth:
        assert self._input is not None
        return self._input

    # -- the tree: a mirror kept current by events, for lookups, snapshots and diffs ----------

    def _read_nodes(
        self, root: str | None = None, budget: int = 5000
    ) -> tuple[list[TreeNode], bool]:
        """A direct bulk read, bypassing the mirror (used when the mirror is cut by its budget)."""
        raw, truncated = self.reader.read(root, budget=budget)
        nodes = [n.to_tree_node() for n in raw]
        if root is None and not truncated:
            return self._with_popups(nodes, budget)
        return nodes, truncated

    def _with_popups(self, nodes: list[TreeNode], budget: int) -> tuple[list[TreeNode], bool]:
        """The application's tree with its open popups added as top-level windows (Qt leaves
        them out of the application's children, so the mirror has none: each open popup is read
        directly, a few nodes). A node the tree already has is not repeated: a combo box's
        drop-down holds the combo box's own list. ``nodes`` is not changed."""
        toplevels = {n.key for n in nodes if n.depth == 1}
        popups = self._popup_windows(toplevels)
        if not popups:
            return nodes, False
        nodes = list(nodes)  # the mirror's list is shared: never append to it
        seen = {n.key for n in nodes}
        for path, _info in popups:
            if len(nodes) >= budget:
                return nodes, True
            try:
                raw, truncated = self.reader.read(path, budget=budget - len(nodes))
            except ElementVanishedError:
                continue  # it closed while we read
            skipped: set[str] = set()
            for item in raw:
                if item.path in seen or item.parent in skipped:
                    skipped.add(item.path)
                    continue
                seen.add(item.path)
                node = item.to_tree_node()
                node.depth += 1
                if node.key == path:
                    node.parent = nodes[0].key
                nodes.append(node)
            if truncated:
                return nodes, True
        return nodes, False

    def _popup_windows(self, toplevels: set[str]) -> list[tuple[str, WindowInfo]]:
        return self._popups.find(toplevels) if self._popups is not None else []

    def _tree(self, *, fresh: bool = False) -> list[TreeNode]:
        """The application's nodes in tree order, current as of the events seen so far, with
        the open popups (menus, drop-downs) after its windows."""
        self.mirror.sync(full=fresh)
        return self._with_popups(self.mirror.tree()[0], self.mirror.budget)[0]

    def _diff_tree(self) -> list[TreeNode]:
        """The whole tree for a before/after diff (a direct read when the mirror is partial)."""
        nodes = self._tree()
        return nodes if self.mirror.complete else self._read_nodes()[0]

    def _find(self, locator: Locator) -> TreeNode:
        """The node a locator names (table cells resolved through the Table interface)."""
        if locator.key is not None:
            node = self._by_key(locator)
        else:
            try:
                node = resolve(self._tree(), locator)
            except ElementNotFoundError:
                if self.mirror.verified:
                    raise  # read in full and nothing happened since: reading again finds the same
                node = resolve(self._tree(fresh=True), locator)
        if locator.row is None and locator.column is None:
            return node
        if locator.row is None or locator.column is None:
            raise UIError(f"{locator.describe()}: give both row and column for a table cell")
        if node.role not in ("table", "tree table"):
            raise UIError(
                f"{locator.target!r} is a {node.role}, not a table; row/column need a table"
            )
        try:
            path = self.reader.cell(node.key, locator.row, locator.column)
        except IndexError as error:
            raise ElementNotFoundError(f"{locator.target!r}: {error}") from error
        return TreeNode(key=path, parent=node.key, depth=node.depth + 1, role="table cell")

    def _by_key(self, locator: Locator) -> TreeNode:
        """The node of a snapshot ref: the mirror is never knowingly stale, so a key it lacks
        names an element that is gone."""
        key = locator.key
        node = next((n for n in self._tree() if n.key == key), None)
        if node is None:
            raise StaleRefError(
                f"{locator.describe()} is stale: its element is gone from the app (it "
                "disappeared or its window closed). Use a ref from the latest snapshot "
                "(ui_snapshot), or the element's id or name"
            )
        return node

    def _window_of(self, key: str) -> TreeNode | None:
        if self._mirror is None:
            return None
        window = self._mirror.window_of(key)
        if window is None and key not in self._mirror.nodes:
            window = top_level_of(self._tree()).get(key)  # an element of an open popup
        return window

    # -- windows -----------------------------------------------------------------------------

    def _windows(self) -> list[tuple[str, WindowInfo]]:
        """The visible top-level windows, then the open popups (menus, drop-downs)."""
        reader = self.reader
        paths = reader.toplevels()
        t = reader.t
        tmpls = (t.role, t.state, t.ident, t.name, t.extents)
        replies = reader.client.call_many(
            [(tmpl, p) for p in paths for tmpl in tmpls], timeout=self.timeout
        )
        windows = []
        for i, path in enumerate(paths):
            role, state, ident, name, extents = replies[5 * i : 5 * i + 5]
            if any(isinstance(r, Exception) for r in (role, state, ident, name)):
                continue
            states = C.state_names(state[0])
            if "visible" not in states and "showing" not in states:
                continue
            role_text = C.role_name(role[0])
            is_dialog = role_text in DIALOG_ROLES or "modal" in states
            windows.append(
                (
                    path,
                    WindowInfo(
                        title=name[0],
                        id=explicit_id(ident[0], role_text),
                        role=role_text,
                        kind=window_kind(role_text, is_dialog=is_dialog),
                        is_dialog=is_dialog,
                        modal="modal" in states,
                        active="active" in states,
                        bounds=None if isinstance(extents, Exception) else tuple(extents[0]),
                    ),
                )
            )
        self._mark_modal([info for _, info in windows])
        return windows + self._popup_windows(set(paths))

    def _mark_modal(self, windows: list[WindowInfo]) -> None:
        """Qt sets no MODAL state over AT-SPI; it does put ``_NET_WM_STATE_MODAL`` on a modal
        window for the window manager: read there. Without X (no python-xlib), a message box
        (role alert, modal whenever Qt runs one with exec()) counts as modal."""
        dialogs = [w for w in windows if w.is_dialog and not w.modal]
        if not dialogs:
            return
        boxes = self._x11.modal_boxes(self._app.pid if self._app else None)
        for info in dialogs:
            if boxes is None:
                info.modal = info.role == "alert"
            else:
                info.modal = info.bounds is not None and tuple(info.bounds) in boxes

    @staticmethod
    def _window_label(info: WindowInfo) -> str:
        return info.label()

    def list_windows(self) -> list[WindowInfo]:
        """The application's visible top-level windows, dialogs included."""
        return self._guarded(lambda: [info for _, info in self._windows()])

    def list_applications(self) -> list[AppInfo]:
        """Every application registered on the accessibility bus."""
        with self._lock:
            return [AppInfo(name=a.name, pid=a.pid) for a in self._applications()]

    def other_windows(self) -> list[WindowInfo]:
        """The showing top-level windows of the bus's other applications, with their app."""
        with self._lock:
            mine = self._app.bus if self._app is not None else None
            others = [a for a in self._applications() if a.bus != mine]
            if not others:
                return []
            client = self._connect()
            listed = client.call_many(
                [(Method(a.bus, C.ACCESSIBLE, "GetChildren"), a.root) for a in others],
                timeout=self.timeout,
            )
            found: list[WindowInfo] = []
            for app, reply in zip(others, listed, strict=True):
                if isinstance(reply, Exception):
                    continue  # the app is exiting
                reader = TreeReader(client, app, timeout=self.timeout)
                for path in [p for bus, p in reply[0] if bus == app.bus]:
                    try:
                        info = reader.element(path)
                    except (UIError, DBusCallError, DBusTimeout):
                        continue
                    if not info.visible:
                        continue
                    dialog = info.role in DIALOG_ROLES
                    found.append(
                        WindowInfo(
                            title=info.name,
                            id=explicit_id(info.id or "", info.role),
                            role=info.role,
                            kind=window_kind(info.role, is_dialog=dialog),
                            is_dialog=dialog,
                            active="active" in info.states,
                            bounds=info.bounds,
                            app=app.name or f"pid {app.pid}",
                        )
                    )
            return found

    # -- reads -------------------------------------------------------------------------------

    def get_element(self, locator: Locator) -> ElementInfo:
        """Read one element live."""
        return self._guarded(lambda: self._element(locator))

    def _element(self, locator: Locator) -> ElementInfo:
        node = self._find(locator)
        try:
            info = self.reader.element(node.key)
        except ElementVanishedError:
            node = self._refind(locator)
            info = self.reader.element(node.key)
        info.id = explicit_id(info.id or "", info.role)
        if locator.row is not None:
            info.row, info.column = locator.row, locator.column
        window = self._window_of(
            node.parent if locator.row is not None and node.parent else node.key
        )
        info.window = window.name if window is not None else None
        return info

    def _refind(self, locator: Locator) -> TreeNode:
        self.mirror.sync(full=True)
        return self._find(locator)

    def get_property(self, locator: Locator, name: str) -> str | None:
        """An ElementInfo field, or a toolkit attribute (``GetAttributes``) by name."""

        def read() -> str | None:
            info = self._element(locator)
            data = info.model_dump()
            if name in data:
                value = data[name]
                return None if value is None else str(value)
            node = self._find(locator)
            attributes = self.reader.call(node.key, C.ACCESSIBLE, "GetAttributes")[0]
            if name in attributes:
                return str(attributes[name])
            raise UIError(
                f"unknown property {name!r} of {locator.describe()}; available: "
                + ", ".join(sorted([*data, *attributes]))
            )

        return self._guarded(read)

    def snapshot(self, *, window: str | None = None, node_budget: int = 2000) -> TreeSnapshot:
        """The tree of the application (or of one top-level window), from the mirror the
        accessibility events keep current (a direct bulk read when it is cut by its budget)."""
        if node_budget < 1:
            raise UIError(f"node_budget must be at least 1, got {node_budget}")

        def read() -> TreeSnapshot:
            start = time.perf_counter()
            root = None
            if window:
                matches = [p for p, w in self._windows() if window in (w.title, w.id)]
                if not matches:
                    titles = [self._window_label(w) for _, w in self._windows()]
                    raise ElementNotFoundError(
                        f"no window with id or title {window!r}; open windows: {titles}"
                    )
                root = matches[0]
            mirror = self.mirror
            mirror.sync()
            if mirror.complete and (root is None or root in mirror.nodes):
                nodes, truncated = mirror.tree(root, node_budget)
                if root is None and not truncated:
                    nodes, truncated = self._with_popups(nodes, node_budget)
            else:
                nodes, truncated = self._read_nodes(root, node_budget)
            app = self._app.name if self._app else "?"
            return TreeSnapshot(
                app=app,
                nodes=nodes,
                truncated=truncated,
                node_budget=node_budget,
                ms=round((time.perf_counter() - start) * 1000, 1),
            )

        return self._guarded(read)
