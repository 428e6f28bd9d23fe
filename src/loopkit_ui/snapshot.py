"""Compact snapshots with refs, as Playwright MCP's ``browser_snapshot`` gives them.

A snapshot is an outline of the app's tree, one element a line, each with a ref handle::

    - window 'Invoice Editor' #InvoiceWindow [ref=e1]
      - push button 'Add item' #AddItemButton [ref=e2]
      - table 'Items' #ItemsTable [ref=e3]
        - table cell 'Consulting' [ref=e7]

A model acts on an element by its ref (``target="e7"``) even when it has no id and no unique
name. A ref stays valid until its element disappears; a stale ref is refused with a clear
error. After every action the server answers what changed since the model's last look, in the
same form (a delta): ``+`` appeared (with the new refs), ``~`` changed, ``-`` gone.

Snapshots are bounded: unnamed layout containers are left out (their children move up), a
container shows at most ``max_children`` children, the outline at most ``max_depth`` levels and
``max_lines`` lines; every cut is said in a note with what to do instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from loopkit_ui.backends.protocol import TreeNode

__all__ = [
    "RefEntry",
    "RefTable",
    "SnapshotLimits",
    "View",
    "parse_ref",
    "render_delta",
    "render_outline",
]

_REF = re.compile(r"^\[?(?:ref=)?(e[0-9]{1,9})\]?$")
# Roles that are only layout when they have neither a name nor an id.
_LAYOUT_ROLES = frozenset(
    {"filler", "panel", "pane", "group", "grouping", "scroll pane", "viewport", "section",
     "custom", "unknown", "redundant object", "layered pane", "split pane", "internal frame"}
)  # fmt: skip
# States worth a flag in the outline (disabled/hidden/focused/... as in ui_tree).
_HIDDEN = "hidden"


def parse_ref(target: str) -> str | None:
    """``"e12"``, ``"ref=e12"`` or ``"[ref=e12]"`` → ``"e12"``; anything else None."""
    match = _REF.match(target.strip())
    return match.group(1) if match else None


@dataclass
class RefEntry:
    """What a ref names: the app (its name in the server), the backend's element key, and how
    the element looked when the ref was given out (for messages)."""

    ref: str
    app: str
    key: str
    label: str
    gone: bool = False


class RefTable:
    """Refs ``e1``, ``e2``, ... handed out in snapshots, for the server's whole life (numbers
    are never reused, so an old ref can never name another element)."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], RefEntry] = {}
        self._by_ref: dict[str, RefEntry] = {}
        self._next = 1

    def __len__(self) -> int:
        return len(self._by_ref)

    def ref_for(self, app: str, node: TreeNode) -> str:
        """The ref of ``node`` (a new one the first time it is shown)."""
        entry = self._by_key.get((app, node.key))
        if entry is None or entry.gone:
            entry = RefEntry(f"e{self._next}", app, node.key, node.label())
            self._next += 1
            self._by_key[(app, node.key)] = entry
            self._by_ref[entry.ref] = entry
        return entry.ref

    def known(self, app: str, key: str) -> str | None:
        """The ref already given to this element, if any."""
        entry = self._by_key.get((app, key))
        return entry.ref if entry is not None and not entry.gone else None

    def lookup(self, ref: str) -> RefEntry | None:
        """The entry of a ref handed out by this table (gone ones included), else None."""
        return self._by_ref.get(ref)

    def gone(self, app: str, keys: Sequence[str]) -> None:
        """These elements disappeared: their refs become stale."""
        for key in keys:
            entry = self._by_key.pop((app, key), None)
            if entry is not None:
                entry.gone = True

    def moved(self, app: str, old: str, new: str) -> None:
        """The toolkit recreated an element under a new key (Qt does for table cells when a row
        goes): its ref follows it."""
        entry = self._by_key.pop((app, old), None)
        if entry is not None and (app, new) not in self._by_key:
            entry.key = new
            self._by_key[(app, new)] = entry


@dataclass(frozen=True)
class SnapshotLimits:
    """How much one snapshot may show."""

    max_lines: int = 400
    max_depth: int = 14
    max_children: int = 40


@dataclass
class View:
    """What the model was last shown of one app: the nodes (for the next delta)."""

    nodes: list[TreeNode]
    keys: dict[str, TreeNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.keys:
            self.keys = {n.key: n for n in self.nodes}


def _shown(node: TreeNode) -> bool:
    """Whether an outline lists the node: not the app root, not an unnamed layout container."""
    if node.depth == 0:
        return False
    if node.id or node.name or (node.text not in (None, "")):
        return True
    return node.role not in _LAYOUT_ROLES


def _short(node: TreeNode) -> str:
    text = f"{node.role} {node.name!r}" if node.name else node.role
    return f"{text} #{node.id}" if node.id else text


def _line(node: TreeNode, ref: str) -> str:
    text = _short(node)
    flags = [s for s in node.states if s != "editable"]
    if flags:
        text += f" [{', '.join(flags)}]"
    if node.text is not None and node.text != node.name:
        shown = node.text if len(node.text) <= 80 else node.text[:77] + "..."
        text += f" = {shown!r}"
    return f"{text} [ref={ref}]"


@dataclass
class _Outline:
    lines: list[str]
    shown: int
    notes: list[str]
    truncated: bool


def _outline(
    nodes: Sequence[TreeNode],
    refs: RefTable,
    app: str,
    limits: SnapshotLimits,
    *,
    marker: str = "-",
    base_depth: int | None = None,
) -> _Outline:
    """The outline of ``nodes`` (pre-order, a whole tree or subtrees), cut by ``limits``."""
    lines: list[str] = []
    notes: list[str] = []
    # For each node key: its outline depth (shown ancestors), or the depth its children get.
    level: dict[str, int] = {}
    shown_children: dict[str, int] = {}
    skipped_children: dict[str, tuple[TreeNode, int]] = {}
    cut_deep = 0
    cut_lines = 0
    top = min((n.depth for n in nodes), default=0) if base_depth is None else base_depth
    # Keys left out with their whole subtree, and why: "children", "deep" or "lines".
    hidden: dict[str, str] = {}
    for node in nodes:
        parent_level = level.get(node.parent or "", 0) if node.depth > top else 0
        if node.parent in hidden:
            cause = hidden[node.parent]
            hidden[node.key] = cause
            if _shown(node) and cause == "deep":
                cut_deep += 1
            elif _shown(node) and cause == "lines":
                cut_lines += 1
            continue
        if not _shown(node):
            level[node.key] = parent_level
            continue
        owner = node.parent or ""
        count = shown_children.get(owner, 0)
        if count >= limits.max_children:
            held = skipped_children.get(owner)
            skipped_children[owner] = (held[0] if held else node, (held[1] if held else 0) + 1)
            hidden[node.key] = "children"
            continue
        if parent_level >= limits.max_depth:
            cut_deep += 1
            hidden[node.key] = "deep"
            continue
        if len(lines) >= limits.max_lines:
            cut_lines += 1
            hidden[node.key] = "lines"
            continue
        shown_children[owner] = count + 1
        level[node.key] = parent_level + 1
        lines.append("  " * parent_level + f"{marker} " + _line(node, refs.ref_for(app, node)))
    by_key = {n.key: n for n in nodes}
    for owner, (first, more) in skipped_children.items():
        parent = by_key.get(owner)
        who = parent.label() if parent is not None else "a container"
        notes.append(
            f"{more} more children of {who} not shown (from {first.label()} on): read cells "
            "with ui_get_cell, or snapshot that element alone (ui_snapshot target=its ref)"
        )
    if cut_deep:
        notes.append(
            f"{cut_deep} elements deeper than {limits.max_depth} levels not shown: snapshot a "
            "deeper element alone (ui_snapshot target=its ref)"
        )
    if cut_lines:
        notes.append(
            f"cut at {limits.max_lines} lines ({cut_lines} more elements): narrow it with "
            "window= or target=, or raise max_lines"
        )
    truncated = bool(cut_deep or cut_lines or skipped_children)
    return _Outline(lines, len(lines), notes, truncated)


def render_outline(
    nodes: Sequence[TreeNode], refs: RefTable, app: str, limits: SnapshotLimits
) -> tuple[list[str], list[str], bool]:
    """``(lines, notes, truncated)``: the outline of a snapshot's nodes with refs."""
    outline = _outline(nodes, refs, app, limits)
    return outline.lines, outline.notes, outline.truncated


def _signature(node: TreeNode) -> tuple[str, str, str | None]:
    return (node.role, node.name, node.id)


def _change(old: TreeNode, new: TreeNode) -> str | None:
    parts = []
    if old.name != new.name:
        parts.append(f"name was {old.name!r}")
    if old.text != new.text and new.text != new.name:
        parts.append(f"text was {old.text!r}")
    gained = [s for s in new.states if s not in old.states]
    lost = [s for s in old.states if s not in new.states]
    if gained or lost:
        parts.append(" ".join([f"+{s}" for s in gained] + [f"-{s}" for s in lost]))
    return ", ".join(parts) if parts else None


def render_delta(
    before: View, after: Sequence[TreeNode], refs: RefTable, app: str, limits: SnapshotLimits
) -> tuple[list[str], list[str], bool]:
    """What changed between the last view and ``after``: ``+`` lines for elements that
    appeared (whole subtrees, with refs), ``~`` for changed ones, ``-`` for gone ones (their
    refs are stale from now on). Returns ``(lines, notes, truncated)``."""
    old = before.keys
    new = {n.key: n for n in after}
    gone = [n for n in before.nodes if n.key not in new]
    twins: dict[tuple[str, str, str | None], list[TreeNode]] = {}
    for node in gone:
        twins.setdefault(_signature(node), []).append(node)
    appeared_keys: set[str] = set()
    changed: list[tuple[TreeNode, str]] = []
    for node in after:
        previous = old.get(node.key)
        if previous is None:
            pair = twins.get(_signature(node))
            if pair:
                # The same element under a new key (Qt recreates cells): its ref moves along.
                previous = pair.pop(0)
                refs.moved(app, previous.key, node.key)
            else:
                appeared_keys.add(node.key)
                continue
        what = _change(previous, node)
        if what is not None and _shown(node):
            changed.append((node, what))
    really_gone = [n for t in twins.values() for n in t]
    lines: list[str] = []
    notes: list[str] = []
    # Appeared subtrees: a node whose parent also appeared belongs to its parent's subtree.
    roots = [n for n in after if n.key in appeared_keys and n.parent not in appeared_keys]
    subtree: list[TreeNode] = []
    if roots:
        root_keys = {r.key for r in roots}
        inside: set[str] = set()
        for node in after:
            if node.key in root_keys or (node.parent in inside and node.key in appeared_keys):
                inside.add(node.key)
                subtree.append(node)
    budget = limits.max_lines
    if subtree:
        outline = _outline(
            subtree, refs, app, SnapshotLimits(budget, limits.max_depth, limits.max_children),
            marker="+",
        )  # fmt: skip
        lines += outline.lines
        notes += outline.notes
    for node, what in changed:
        if len(lines) >= budget:
            notes.append(f"{len(changed)} changed elements in all; not all shown")
            break
        lines.append(f"~ {_line(node, refs.ref_for(app, node))} ({what})")
    shown_gone = [n for n in really_gone if refs.known(app, n.key) is not None]
    for node in shown_gone:
        if len(lines) >= budget:
            notes.append(f"{len(shown_gone)} elements with refs gone in all; not all shown")
            break
        lines.append(f"- {_short(node)} [ref={refs.known(app, node.key)}] (gone)")
    refs.gone(app, [n.key for n in really_gone])
    truncated = bool(notes)
    return lines, notes, truncated
