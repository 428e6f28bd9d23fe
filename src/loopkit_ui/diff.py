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


def diff_trees(before: Sequence[TreeNode], after: Sequence[TreeNode], limit: int = 30) -> TreeDiff:
    """Compare two snapshots by node key; at most ``limit`` entries of each kind."""
    old = {n.key: n for n in before}
    new = {n.key: n for n in after}
    appeared = [n.label() for n in after if n.key not in old]
    disappeared = [n.label() for n in before if n.key not in new]
    changed = [c for n in after if n.key in old and (c := _change(old[n.key], n))]
    truncated = max(len(appeared), len(disappeared), len(changed)) > limit
    return TreeDiff(
        appeared=appeared[:limit],
        disappeared=disappeared[:limit],
        changed=changed[:limit],
        truncated=truncated,
    )
