"""The difference between two tree snapshots: what appeared, disappeared or changed (a change of
order among the same children, as a drag and drop that reorders a list makes, included)."""

from __future__ import annotations

from collections.abc import Sequence

from loopkit_ui.backends.protocol import TreeDiff, TreeNode

__all__ = ["diff_trees"]


def _change(old: TreeNode, new: TreeNode) -> str | None:
    parts = []
    if old.name != new.name:
        parts.append(f"name {old.name!r} -> {new.name!r}")
    if old.text != new.text and new.text != new.name:
        parts.append(f"text {old.text!r} -> {new.text!r}")
    gained = [s for s in new.states if s not in old.states]
    lost = [s for s in old.states if s not in new.states]
    if gained or lost:
        parts.append(" ".join([f"+{s}" for s in gained] + [f"-{s}" for s in lost]))
    if not parts:
        return None
    who = f"#{new.id}" if new.id and "." not in new.id else f"{new.role} {new.name!r}"
    return f"{who}: " + ", ".join(parts)


def _reorders(
    before: Sequence[TreeNode], after: Sequence[TreeNode], pairs: list[tuple[TreeNode, TreeNode]]
) -> list[str]:
    """``#ReorderList: order ['first', 'second'] -> ['second', 'first']`` for every parent whose
    children are the same (by name) in another order."""
    old_parent = {new.key: old.key for old, new in pairs}
    old_children: dict[str, list[str]] = {}
    for node in before:
        if node.parent is not None:
            old_children.setdefault(node.parent, []).append(node.name)
    new_children: dict[str, list[str]] = {}
    for node in after:
        if node.parent is not None:
            new_children.setdefault(node.parent, []).append(node.name)
    parents = {n.key: n for n in after}
    entries = []
    for key, names in new_children.items():
        was = old_children.get(old_parent.get(key, ""))
        if was is None or was == names or sorted(was) != sorted(names):
            continue
        parent = parents[key]
        who = f"#{parent.id}" if parent.id else f"{parent.role} {parent.name!r}"
        entries.append(f"{who}: order {_names(was)} -> {_names(names)}")
    return entries


def _names(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def _signature(node: TreeNode) -> tuple[str, str, str | None, int]:
    return (node.role, node.name, node.id, node.depth)


def diff_trees(before: Sequence[TreeNode], after: Sequence[TreeNode], limit: int = 30) -> TreeDiff:
    """Compare two snapshots; at most ``limit`` entries of each kind.

    Nodes are matched by key first. Toolkits recreate some accessible objects under new keys
    (Qt rebuilds a table's header and cell objects when a row is removed), so unmatched nodes
    are then paired by role, name, id and depth, in tree order: a recreated header is no change.
    """
    old = {n.key: n for n in before}
    new = {n.key: n for n in after}
    pairs = [(old[n.key], n) for n in after if n.key in old]
    gone: dict[tuple[str, str, str | None, int], list[TreeNode]] = {}
    for node in before:
        if node.key not in new:
            gone.setdefault(_signature(node), []).append(node)
    appeared = []
    for node in after:
        if node.key in old:
            continue
        twins = gone.get(_signature(node))
        if twins:
            pairs.append((twins.pop(0), node))
        else:
            appeared.append(node.label())
    order = {n.key: i for i, n in enumerate(before)}
    disappeared = [
        n.label() for n in sorted((n for t in gone.values() for n in t), key=lambda n: order[n.key])
    ]
    changed = [c for a, b in pairs if (c := _change(a, b))]
    changed += _reorders(before, after, pairs)
    truncated = max(len(appeared), len(disappeared), len(changed)) > limit
    return TreeDiff(
        appeared=appeared[:limit],
        disappeared=disappeared[:limit],
        changed=changed[:limit],
        truncated=truncated,
    )
