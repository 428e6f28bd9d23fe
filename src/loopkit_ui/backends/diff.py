"""The difference between two tree snapshots: what appeared, disappeared or changed."""

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
    truncated = max(len(appeared), len(disappeared), len(changed)) > limit
    return TreeDiff(
        appeared=appeared[:limit],
        disappeared=disappeared[:limit],
        changed=changed[:limit],
        truncated=truncated,
    )
