"""Reading the AT-SPI tree fast: one Collection.GetMatches call lists every node, then one
pipelined burst reads role, states, id and name of all of them, and a second burst reads the
children of the containers (and the text of editable fields).

Reading node by node costs about a millisecond a node (one round trip per property); the burst
costs about 0.1 ms a node because the replies stream back while the calls are still being sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.dbus_client import DBusCallError, DBusClient, Method
from loopkit_ui.backends.lookup import normalize_id
from loopkit_ui.backends.protocol import (
    AppNotFoundError,
    ElementInfo,
    ElementVanishedError,
    TreeNode,
)

__all__ = ["AppRef", "RawNode", "TreeReader", "explicit_id", "visible_states"]

# Roles that never have accessible children in Qt (and rarely elsewhere): their GetChildren
# call is skipped. A node that still turns up without a parent is placed by its Parent property.
LEAF_ROLES = frozenset(
    {
        "push button", "toggle button", "check box", "radio button", "label", "static",
        "table cell", "list item", "column header", "row header", "table column header",
        "table row header", "text", "password text", "entry", "separator", "icon", "image",
        "progress bar", "slider", "heading", "paragraph", "link", "check menu item",
        "radio menu item", "tool tip", "tree item",
    }
)  # fmt: skip
TEXT_ROLES = frozenset({"text", "entry", "spin button", "document text"})
DIALOG_ROLES = frozenset({"dialog", "alert", "file chooser", "color chooser", "font chooser"})

# States worth showing to a reader, as flags on top of the role (positive ones when set,
# negative ones when the usual state is missing).
_SHOWN_STATES = ("focused", "selected", "checked", "pressed", "expanded", "modal", "active")


def visible_states(states: frozenset[str]) -> list[str]:
    """The compact state list of a node: ``disabled``/``hidden`` when so, plus notable flags."""
    flags = []
    if "enabled" not in states and "sensitive" not in states:
        flags.append("disabled")
    if "showing" not in states:
        flags.append("hidden")
    if "editable" in states:
        flags.append("editable")
    flags.extend(name for name in _SHOWN_STATES if name in states)
    return flags


def explicit_id(raw: str, role: str = "") -> str | None:
    """Qt reports a generated ``QApplication.Parent.Child`` path when no accessible id was set;
    that is no id (and usually not unique), so it is reported as None; a menu item's is its
    action's object name (see :func:`~loopkit_ui.backends.lookup.normalize_id`)."""
    return normalize_id(raw, role)


@dataclass(frozen=True, slots=True)
class AppRef:
    """An application on the accessibility bus."""

    bus: str
    root: str
    name: str
    pid: int | None


@dataclass(slots=True)
class RawNode:
    """One node as read in a burst."""

    path: str
    role: str
    name: str
    id: str
    states: frozenset[str]
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    text: str | None = None
    depth: int = 0

    def to_tree_node(self) -> TreeNode:
        return TreeNode(
            key=self.path,
            parent=self.parent,
            depth=self.depth,
            role=self.role,
            name=self.name,
            id=explicit_id(self.id, self.role),
            states=visible_states(self.states),
            text=self.text,
        )


class _Templates:
    """Pre-marshalled calls for one application's bus name."""

    def __init__(self, bus: str) -> None:
        self.role = Method(bus, C.ACCESSIBLE, "GetRole")
        self.state = Method(bus, C.ACCESSIBLE, "GetState")
        self.ident = Method(bus, C.ACCESSIBLE, "GetAccessibleId")
        self.name = Method(bus, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Name"))
        self.children = Method(bus, C.ACCESSIBLE, "GetChildren")
        self.parent = Method(bus, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "Parent"))
        self.child_count = Method(bus, C.PROPERTIES, "Get", "ss", (C.ACCESSIBLE, "ChildCount"))
        self.text = Method(bus, C.TEXT, "GetText", "ii", (0, -1))
        self.extents = Method(bus, C.COMPONENT, "GetExtents", "u", (C.COORD_SCREEN,))
        self.interfaces = Method(bus, C.ACCESSIBLE, "GetInterfaces")
        self.value = Method(bus, C.PROPERTIES, "Get", "ss", (C.VALUE, "CurrentValue"))
        self.index = Method(bus, C.ACCESSIBLE, "GetIndexInParent")


def _is_gone(error: Any) -> bool:
    return isinstance(error, DBusCallError) and (
        "UnknownObject" in error.name
        or "UnknownMethod" in error.name
        or "ServiceUnknown" in error.name
        or "NoReply" in error.name
    )


def _rect(values: Any) -> tuple[int, int, int, int]:
    x, y, w, h = values
    return int(x), int(y), int(w), int(h)


class TreeReader:
    """Bulk and single-element reads of one application's tree."""

    def __init__(self, client: DBusClient, app: AppRef, *, timeout: float = 5.0) -> None:
        self.client = client
        self.app = app
        self.timeout = timeout
        self.t = _Templates(app.bus)

    # -- small helpers -----------------------------------------------------------------------

    def call(
        self,
        path: str,
        interface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
    ) -> tuple[Any, ...]:
        """One call on an object of the application; a vanished object is ElementVanishedError."""
        try:
            return self.client.call(
                self.app.bus, path, interface, member, signature, body, timeout=self.timeout
            )
        except DBusCallError as error:
            if "ServiceUnknown" in error.name or "NoReply" in error.name:
                raise AppNotFoundError(
                    f"application {self.app.name!r} is gone (its bus name {self.app.bus} left)"
                ) from error
            if _is_gone(error):
                raise ElementVanishedError(
                    f"the element vanished (object {path} no longer exists): {error}"
                ) from error
            raise

    def toplevels(self) -> list[str]:
        """Paths of the application's top-level windows."""
        return [path for bus, path in self.call(self.app.root, C.ACCESSIBLE, "GetChildren")[0]]

    # -- bulk read ---------------------------------------------------------------------------

    def read(self, root: str | None = None, *, budget: int = 2000) -> tuple[list[RawNode], bool]:
        """Every node under ``root`` (default: the application), pre-order, at most ``budget``.

        Returns the nodes and whether the budget cut the tree.
        """
        root = root or self.app.root
        refs = self.call(
            root,
            C.COLLECTION,
            "GetMatches",
            C.MATCH_SIGNATURE,
            (C.MATCH_ALL_RULE, 0, budget, True),
        )[0]
        paths = [root] + [path for bus, path in refs if bus == self.app.bus]
        truncated = len(paths) > budget
        paths = paths[:budget]
        t = self.t
        replies = self.client.call_many(
            [(tmpl, path) for path in paths for tmpl in (t.role, t.state, t.ident, t.name)],
            timeout=self.timeout,
        )
        nodes: dict[str, RawNode] = {}
        for index, path in enumerate(paths):
            role, state, ident, name = replies[4 * index : 4 * index + 4]
            if any(isinstance(r, Exception) for r in (role, state, ident, name)):
                continue  # vanished while we read
            nodes[path] = RawNode(
                path, C.role_name(role[0]), name[0], ident[0], C.state_names(state[0])
            )
        if root not in nodes:
            raise ElementVanishedError(f"the tree root {root} vanished while being read")
        self._link(root, nodes)
        return self._preorder(root, nodes), truncated

    def _link(self, root: str, nodes: dict[str, RawNode]) -> None:
        t = self.t
        containers = [n.path for n in nodes.values() if n.role not in LEAF_ROLES]
        texts = [n.path for n in nodes.values() if n.role in TEXT_ROLES]
        requests = [(t.children, p) for p in containers] + [(t.text, p) for p in texts]
        replies = self.client.call_many(requests, timeout=self.timeout)
        for path, reply in zip(containers, replies[: len(containers)], strict=True):
            if isinstance(reply, Exception):
                continue
            node = nodes[path]
            for bus, child in reply[0]:
                if bus == self.app.bus and child in nodes and nodes[child].parent is None:
                    node.children.append(child)
                    nodes[child].parent = path
        for path, reply in zip(texts, replies[len(containers) :], strict=True):
            if not isinstance(reply, Exception):
                nodes[path].text = reply[0]
        orphans = [p for p, n in nodes.items() if n.parent is None and p != root]
        if orphans:
            # A child of a node we took for a leaf: ask each orphan for its parent.
            parents = self.client.call_many([(t.parent, p) for p in orphans], timeout=self.timeout)
            for path, reply in zip(orphans, parents, strict=True):
                parent = reply[0][1] if not isinstance(reply, Exception) else root
                parent = parent if parent in nodes and parent != path else root
                nodes[path].parent = parent
                nodes[parent].children.append(path)

    @staticmethod
    def _preorder(root: str, nodes: dict[str, RawNode]) -> list[RawNode]:
        ordered: list[RawNode] = []
        stack = [(root, 0)]
        seen: set[str] = set()
        while stack:
            path, depth = stack.pop()
            if path in seen:
                continue
            seen.add(path)
            node = nodes[path]
            node.depth = depth
            ordered.append(node)
            stack.extend((child, depth + 1) for child in reversed(node.children))
        return ordered

    # -- one element -------------------------------------------------------------------------

    def element(self, path: str) -> ElementInfo:
        """Read one element live (one burst of eight calls, plus text/value when it has them)."""
        t = self.t
        tmpls = (t.role, t.state, t.ident, t.name, t.child_count, t.extents, t.interfaces)
        replies = self.client.call_many([(tmpl, path) for tmpl in tmpls], timeout=self.timeout)
        role, state, ident, name, count, extents, interfaces = replies
        for reply in (role, state, ident, name):
            if isinstance(reply, Exception):
                if _is_gone(reply):
                    raise ElementVanishedError(
                        f"the element vanished (object {path} no longer exists)"
                    )
                raise reply
        states = C.state_names(state[0])
        ifaces = set(interfaces[0]) if not isinstance(interfaces, Exception) else set()
        role_text = C.role_name(role[0])
        text: str | None = name[0]
        value: str | None = None
        if C.TEXT in ifaces and role_text != "password text":
            text = self.call(path, C.TEXT, "GetText", "ii", (0, -1))[0]
        if C.VALUE in ifaces:
            number = self.call(path, C.PROPERTIES, "Get", "ss", (C.VALUE, "CurrentValue"))[0]
            value = f"{number:g}" if isinstance(number, float) else str(number)
        elif "editable" in states or role_text in TEXT_ROLES:
            value = text
        elif "checkable" in states or role_text in ("check box", "radio button", "toggle button"):
            value = "checked" if "checked" in states else "unchecked"
        elif role_text in ("table cell", "list item", "label", "combo box", "menu item"):
            value = name[0]  # a combo box's name is its current text
        bounds = None if isinstance(extents, Exception) else _rect(extents[0])
        return ElementInfo(
            id=ident[0] or None,
            name=name[0],
            role=role_text,
            states=visible_states(states),
            text=text,
            value=value,
            bounds=bounds,
            child_count=count[0] if not isinstance(count, Exception) else 0,
            enabled="enabled" in states or "sensitive" in states,
            visible="showing" in states,
            focused="focused" in states,
        )

    def states(self, path: str) -> frozenset[str]:
        """The state set of one element."""
        return C.state_names(self.call(path, C.ACCESSIBLE, "GetState")[0])

    def extents(self, path: str) -> tuple[int, int, int, int]:
        """Screen rectangle ``(x, y, w, h)`` of one element."""
        x, y, w, h = self.call(path, C.COMPONENT, "GetExtents", "u", (C.COORD_SCREEN,))[0]
        return x, y, w, h

    def cell(self, table: str, row: int, column: int) -> str:
        """Path of the cell at ``row``/``column`` (data coordinates, headers excluded)."""
        rows = self.call(table, C.PROPERTIES, "Get", "ss", (C.TABLE, "NRows"))[0]
        columns = self.call(table, C.PROPERTIES, "Get", "ss", (C.TABLE, "NColumns"))[0]
        if not (0 <= row < rows and 0 <= column < columns):
            raise IndexError(
                f"cell [{row}, {column}] is outside the table ({rows} rows x {columns} columns;"
                " rows and columns count from 0)"
            )
        return str(self.call(table, C.TABLE, "GetAccessibleAt", "ii", (row, column))[0][1])

    def cell_position(self, table: str, cell: str) -> tuple[int, int] | None:
        """``(row, column)`` of a cell inside ``table``, or None."""
        try:
            index = self.call(cell, C.ACCESSIBLE, "GetIndexInParent")[0]
            row = self.call(table, C.TABLE, "GetRowAtIndex", "i", (index,))[0]
            column = self.call(table, C.TABLE, "GetColumnAtIndex", "i", (index,))[0]
        except (DBusCallError, ElementVanishedError):
            return None
        return (row, column) if row >= 0 and column >= 0 else None
