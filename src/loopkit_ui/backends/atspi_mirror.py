"""A mirror of one application's accessibility tree, kept current by its events.

Reading the whole tree costs a bulk read (a few hundred D-Bus calls for a few hundred nodes);
an action usually changes a handful of nodes. The mirror reads the tree once, then applies the
application's accessibility events: each names the object that changed and how (its name, a
state, its children, a table's rows or selection), and only those objects are read again. The
lookup index, ``ui_tree`` and the action diff all read the mirror, so their cost follows what
changed, not the size of the tree.

When the events cannot be trusted to be complete (the event history overflowed, an object they
name cannot be placed, a read finds objects gone that no event announced), the mirror reads the
whole tree again: it is never knowingly stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_events import AppEvent, EventMonitor
from loopkit_ui.backends.atspi_tree import TEXT_ROLES, RawNode, TreeReader
from loopkit_ui.backends.protocol import TreeNode

__all__ = ["SyncReport", "TreeMirror"]

# Events that never change what a tree node shows (role, name, id, states, text, children).
_IGNORED = frozenset(
    {
        "Object:BoundsChanged", "Object:TextCaretMoved", "Object:TextSelectionChanged",
        "Object:LinkSelected", "Object:AttributesChanged", "Object:TextAttributesChanged",
        "Object:Announcement", "Object:TextBoundsChanged",
    }
)  # fmt: skip
# Events that say a container's children changed: list them again.
_STRUCTURE = frozenset(
    {
        "Object:ChildrenChanged", "Object:RowInserted", "Object:RowDeleted",
        "Object:RowReordered", "Object:ColumnInserted", "Object:ColumnDeleted",
        "Object:ColumnReordered", "Object:ModelChanged", "Object:VisibleDataChanged",
    }
)  # fmt: skip
# Events that change the states of a container's children (Qt announces one cell of a selected
# row, not the row's other cells).
_CHILD_STATES = frozenset({"Object:SelectionChanged", "Object:ActiveDescendantChanged"})
_NAME_PROPERTIES = frozenset({"accessible-name", "accessible-description", "accessible-value"})
# A node's showing/visible state is inherited: its descendants change with it, unannounced.
_INHERITED_STATES = frozenset({"showing", "visible"})
_PARENT_WALK = 6  # how far up an unknown object is followed to a known ancestor
# A selection change in a container with more children re-reads only the children it touched.
_FEW_CHILDREN = 60
_SELECTION_STATES = frozenset({"selected", "focused", "active", "checked"})
_TABLE_ROLES = frozenset({"table", "tree table"})
_ROW_STARTS = frozenset({"table row header", "row header", "table row"})
# Focus moves announce the node that gains it, not always the one that loses it (a window that
# loses activation takes the "focused" state from its focus widget silently).
_FOCUS_EVENTS = frozenset({"Focus:Focus", "Window:Activate", "Window:Deactivate"})


@dataclass
class SyncReport:
    """What the last :meth:`TreeMirror.sync` did (for tests and benchmarks)."""

    full: bool = False
    events: int = 0
    calls: int = 0
    reason: str = ""


@dataclass
class _Plan:
    """What a batch of events asks to read again."""

    relist: set[str] = field(default_factory=set)
    child_states: set[str] = field(default_factory=set)
    # Children an event named (a cell that gained "selected", an active descendant): with the
    # children marked selected or focused before, they are what a selection change touches.
    seeds: set[str] = field(default_factory=set)
    subtree_states: set[str] = field(default_factory=set)
    everything: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    states: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)


_NO_NODE = RawNode("", "", "", "", frozenset())


class _Resync(Exception):
    """The events do not explain what a read found: read the whole tree."""


class TreeMirror:
    """The tree of one application, read once and then kept current by its events."""

    def __init__(self, reader: TreeReader, monitor: EventMonitor, *, budget: int = 5000) -> None:
        self.reader = reader
        self.monitor = monitor
        self.budget = budget
        self.nodes: dict[str, RawNode] = {}
        self.complete = False  # the last full read saw every node (no budget cut)
        self.version = 0  # moves on every change: callers cache what they derive from it
        self.last = SyncReport()
        self.verified = False  # read in full, and no event since
        self._cursor = 0
        self._tree_nodes: dict[str, TreeNode] = {}
        self._order: tuple[int, list[TreeNode]] | None = None

    @property
    def root(self) -> str:
        """The application's root object."""
        return self.reader.app.root

    def invalidate(self) -> None:
        """Forget everything: the next :meth:`sync` reads the whole tree."""
        self.nodes = {}

    # -- bringing the mirror up to date -------------------------------------------------------

    def sync(self, *, full: bool = False) -> SyncReport:
        """Apply the events since the last sync (or read everything when ``full``)."""
        if full or not self.nodes:
            return self._full("first read" if not self.nodes else "asked")
        events = self.monitor.since(self._cursor)
        if not events:
            self.last = SyncReport()
            return self.last
        self.verified = False
        if events[0].seq != self._cursor + 1:
            return self._full("event history overflowed")
        # Events that arrive while we read are after the cursor: the next sync applies them.
        self._cursor = events[-1].seq
        plan = self._plan(events)
        report = SyncReport(events=len(events))
        try:
            report.calls = self._apply(plan)
        except _Resync as why:
            return self._full(str(why))
        if len(self.nodes) > self.budget:
            return self._full("the tree outgrew the budget")
        self.last = report
        return report

    def _full(self, reason: str) -> SyncReport:
        self._cursor = self.monitor.seq
        raw, truncated = self.reader.read(budget=self.budget)
        self.nodes = {node.path: node for node in raw}
        self.complete = not truncated
        self.verified = True
        self._changed()
        self.last = SyncReport(full=True, calls=4 * len(raw), reason=reason)
        return self.last

    def _changed(self, paths: Iterable[str] | None = None) -> None:
        self.version += 1
        if paths is None:
            self._tree_nodes.clear()
        else:
            for path in paths:
                self._tree_nodes.pop(path, None)

    def _plan(self, events: Sequence[AppEvent]) -> _Plan:
        plan = _Plan()
        nodes = self.nodes
        windows = focus = False
        for event in events:
            kind, path, detail = event.kind, event.path, event.detail
            if kind in _IGNORED:
                continue
            windows = windows or kind.startswith("Window:")
            focus = focus or kind in _FOCUS_EVENTS or detail == "focused"
            if path not in nodes:
                plan.unknown.add(path)
                continue
            if kind.startswith("Window:"):
                plan.relist.add(self.root)
                plan.states.add(path)
            elif kind in _STRUCTURE:
                plan.relist.add(path)
            elif kind in _CHILD_STATES:
                plan.child_states.add(path)
                plan.states.add(path)
                target = event.data
                if isinstance(target, tuple) and len(target) == 2 and isinstance(target[1], str):
                    plan.seeds.add(target[1])  # the new active descendant (bus, path)
            elif kind == "Object:StateChanged":
                plan.seeds.add(path)
                if detail in _INHERITED_STATES:
                    plan.subtree_states.add(path)
                elif detail == "defunct":
                    plan.relist.add(nodes[path].parent or self.root)
                else:
                    plan.states.add(path)
            elif kind == "Focus:Focus":
                plan.states.add(path)
            elif kind == "Object:TextChanged" or (
                kind == "Object:PropertyChange" and detail in _NAME_PROPERTIES
            ):
                plan.names.add(path)
            else:  # anything else (a role, a parent, an event we do not know): all of it
                plan.everything.add(path)
                plan.relist.add(path)
        if windows:
            # Windows change each other's "active" state; read all of theirs.
            plan.states.update(nodes[self.root].children if self.root in nodes else ())
        if focus:
            plan.states.update(path for path, node in nodes.items() if "focused" in node.states)
        return plan

    # -- applying a plan ---------------------------------------------------------------------

    def _apply(self, plan: _Plan) -> int:
        calls = 0
        if plan.unknown:
            calls += self._place_unknown(plan)
        fresh: list[tuple[str, str]] = []
        if plan.relist:
            calls += self._relist(plan, fresh)
        if fresh:
            calls += self._read_fresh(fresh)
        calls += self._refresh(plan, {path for path, _ in fresh})
        return calls

    def _place_unknown(self, plan: _Plan) -> int:
        """Objects the mirror does not know (created since, or never listed): list the children
        of their nearest known ancestor again, which reads them if they exist."""
        t, calls = self.reader.t, 0
        pending = sorted(plan.unknown)
        for _ in range(_PARENT_WALK):
            if not pending:
                return calls
            replies = self.reader.client.call_many(
                [(t.parent, path) for path in pending], timeout=self.reader.timeout
            )
            calls += len(pending)
            up = []
            for reply in replies:
                if isinstance(reply, Exception):
                    continue  # the object is gone again: whatever it changed, it took along
                _bus, parent = reply[0]
                if parent in self.nodes:
                    plan.relist.add(parent)
                elif parent and parent != "/org/a11y/atspi/null":
                    up.append(parent)
            pending = sorted(set(up))
        if pending:
            raise _Resync(f"{len(pending)} objects of the events could not be placed")
        return calls

    def _depth(self, path: str) -> int:
        depth, node = 0, self.nodes.get(path)
        while node is not None and node.parent is not None and depth < 10_000:
            depth += 1
            node = self.nodes.get(node.parent)
        return depth

    def _relist(self, plan: _Plan, fresh: list[tuple[str, str]]) -> int:
        """List the children of every container in ``plan.relist`` again: drop the ones gone,
        note the new ones (read afterwards) and the ones moved here from elsewhere."""
        t = self.reader.t
        containers = sorted((p for p in plan.relist if p in self.nodes), key=self._depth)
        replies = self.reader.client.call_many(
            [(t.children, path) for path in containers], timeout=self.reader.timeout
        )
        bus = self.reader.app.bus
        for path, reply in zip(containers, replies, strict=True):
            node = self.nodes.get(path)
            if node is None:
                continue  # a container above it was listed first and dropped it
            if isinstance(reply, Exception):
                raise _Resync(f"listing the children of {path} failed: {reply}")
            children = [child for owner, child in reply[0] if owner == bus and child != path]
            listed = set(children)
            for old in node.children:
                if old not in listed:
                    self._drop(old)
            for child in children:
                known = self.nodes.get(child)
                if known is None:
                    fresh.append((child, path))
                elif known.parent != path:
                    # Moved here from elsewhere: take it out of its old parent's list.
                    old_parent = self.nodes.get(known.parent or "")
                    if old_parent is not None and child in old_parent.children:
                        old_parent.children.remove(child)
                    known.parent = path
                    self._changed([child])
                # A child still listed keeps what was read of it: its own events announce its
                # changes (tests/ui/test_atspi_backend.py compares the mirror with a full read
                # after rows are added and a list reordered); re-reading every child of a 95-row
                # table cost two calls a cell on every action that added or removed a row.
            if node.children != children:
                node.children = children
                self._changed([path])
        return len(containers)

    def _drop(self, path: str) -> None:
        stack = [path]
        dropped = []
        while stack:
            current = self.nodes.pop(stack.pop(), None)
            if current is not None:
                dropped.append(current.path)
                stack.extend(current.children)
        self._changed(dropped)

    def _read_fresh(self, roots: list[tuple[str, str]]) -> int:
        """Read new subtrees level by level, one pipelined burst a level."""
        t, client, calls = self.reader.t, self.reader.client, 0
        methods = (t.role, t.state, t.ident, t.name, t.children)
        bus = self.reader.app.bus
        level, texts = roots, []
        while level:
            replies = client.call_many(
                [(m, path) for path, _ in level for m in methods], timeout=self.reader.timeout
            )
            calls += len(replies)
            below: list[tuple[str, str]] = []
            for i, (path, parent) in enumerate(level):
                role, state, ident, name, children = replies[5 * i : 5 * i + 5]
                if any(isinstance(r, Exception) for r in (role, state, ident, name)):
                    # Gone already: the parent's list is stale; its next event fixes it.
                    owner = self.nodes.get(parent)
                    if owner is not None and path in owner.children:
                        owner.children.remove(path)
                    continue
                node = RawNode(path, C.role_name(role[0]), name[0], ident[0],
                               C.state_names(state[0]), parent=parent)  # fmt: skip
                if not isinstance(children, Exception):
                    node.children = [
                        child
                        for owner, child in children[0]
                        if owner == bus and child not in self.nodes and child != path
                    ]
                    below.extend((child, path) for child in node.children)
                self.nodes[path] = node
                if node.role in TEXT_ROLES:
                    texts.append(path)
            if len(self.nodes) > 2 * self.budget:
                raise _Resync("new subtrees outgrew the budget")
            level = below
        self._changed([path for path, _ in roots])
        if texts:
            calls += self._read_texts(texts)
        return calls

    def _read_texts(self, paths: list[str]) -> int:
        replies = self.reader.client.call_many(
            [(self.reader.t.text, path) for path in paths], timeout=self.reader.timeout
        )
        for path, reply in zip(paths, replies, strict=True):
            node = self.nodes.get(path)
            if node is not None and not isinstance(reply, Exception) and node.text != reply[0]:
                node.text = reply[0]
                self._changed([path])
        return len(paths)

    def _touched_children(self, container: RawNode, seeds: set[str]) -> list[str]:
        """The children whose states a selection change in ``container`` may have changed.

        A few children: all of them. A big table or list (a 95-row table has 475): the ones the
        events named and the ones marked selected, focused or active before, each with the
        rest of its table row (Qt announces one cell of a row it selects), instead of
        re-reading every child on every selection change."""
        children = container.children
        if len(children) <= _FEW_CHILDREN:
            return children
        nodes = self.nodes
        hit = [
            i
            for i, child in enumerate(children)
            if child in seeds or (child in nodes and nodes[child].states & _SELECTION_STATES)
        ]
        if container.role not in _TABLE_ROLES:
            return [children[i] for i in hit]
        picked: set[int] = set()
        for index in hit:
            start = index
            while start > 0 and nodes.get(children[start], _NO_NODE).role not in _ROW_STARTS:
                start -= 1
            end = index + 1
            while end < len(children) and nodes.get(children[end], _NO_NODE).role not in (
                _ROW_STARTS
            ):
                end += 1
            picked.update(range(start, end))
        return [children[i] for i in sorted(picked)]

    def _refresh(self, plan: _Plan, fresh: set[str]) -> int:
        """One burst re-reading the properties the plan names, for nodes read before."""
        t = self.reader.t
        states = set(plan.states)
        for container in plan.child_states:
            node = self.nodes.get(container)
            if node is not None:
                states.update(self._touched_children(node, plan.seeds))
        for top in plan.subtree_states:
            stack = [top]
            while stack:
                node = self.nodes.get(stack.pop())
                if node is not None:
                    states.add(node.path)
                    stack.extend(node.children)
        everything = {p for p in plan.everything if p in self.nodes and p not in fresh}
        names = {p for p in plan.names | everything if p in self.nodes and p not in fresh}
        states = {p for p in states | everything if p in self.nodes and p not in fresh}
        requests = [(t.role, p) for p in sorted(everything)] + [
            (t.ident, p) for p in sorted(everything)
        ]
        requests += [(t.name, p) for p in sorted(names)]
        requests += [(t.text, p) for p in sorted(names) if self.nodes[p].role in TEXT_ROLES]
        requests += [(t.state, p) for p in sorted(states)]
        if not requests:
            return 0
        replies = self.reader.client.call_many(requests, timeout=self.reader.timeout)
        gone = []
        for (method, path), reply in zip(requests, replies, strict=True):
            node = self.nodes.get(path)
            if node is None:
                continue
            if isinstance(reply, Exception):
                gone.append(path)
                continue
            value = reply[0]
            if method is t.state:
                changed = _set(node, "states", C.state_names(value))
            elif method is t.name:
                changed = _set(node, "name", value)
            elif method is t.text:
                changed = _set(node, "text", value)
            elif method is t.role:
                changed = _set(node, "role", C.role_name(value))
            else:
                changed = _set(node, "id", value)
            if changed:
                self._changed([path])
        if gone:
            # Objects gone that no event announced yet: do not guess, read everything.
            raise _Resync(f"{len(set(gone))} objects vanished without an event")
        return len(requests)

    # -- reading the mirror ------------------------------------------------------------------

    def tree(
        self, root: str | None = None, budget: int | None = None
    ) -> tuple[list[TreeNode], bool]:
        """The nodes under ``root`` (default: the application) in tree order, at most
        ``budget``; and whether the budget cut them."""
        root = root or self.root
        whole = root == self.root and (budget is None or budget > len(self.nodes))
        if whole and self._order is not None and self._order[0] == self.version:
            return self._order[1], not self.complete
        limit = budget if budget is not None and not whole else len(self.nodes) + 1
        ordered: list[TreeNode] = []
        stack = [(root, 0)]
        seen: set[str] = set()
        while stack:
            path, depth = stack.pop()
            node = self.nodes.get(path)
            if node is None or path in seen:
                continue
            if len(ordered) >= limit:
                return ordered, True
            seen.add(path)
            ordered.append(self._tree_node(node, depth))
            stack.extend((child, depth + 1) for child in reversed(node.children))
        if whole:
            self._order = (self.version, ordered)
        return ordered, root == self.root and not self.complete

    def window_of(self, path: str) -> TreeNode | None:
        """The top-level window holding ``path`` (the application root for itself)."""
        node = self.nodes.get(path)
        while node is not None and node.parent not in (None, self.root):
            node = self.nodes.get(node.parent or "")
        if node is None:
            return None
        return self._tree_node(node, 0 if node.path == self.root else 1)

    def _tree_node(self, node: RawNode, depth: int) -> TreeNode:
        cached = self._tree_nodes.get(node.path)
        if cached is None or cached.depth != depth or cached.parent != node.parent:
            node.depth = depth
            cached = node.to_tree_node()
            self._tree_nodes[node.path] = cached
        return cached


def _set(node: RawNode, attribute: str, value: object) -> bool:
    if getattr(node, attribute) == value:
        return False
    setattr(node, attribute, value)
    return True
