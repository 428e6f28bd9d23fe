"""Element lookup over a tree snapshot, shared by the backends: id first, then name; an
ambiguous match lists its candidates; a miss lists the nearest ids that exist."""

from __future__ import annotations

from collections.abc import Sequence

from loopkit_ui.backends.protocol import (
    AmbiguousElementError,
    ElementNotFoundError,
    Locator,
    TreeNode,
    nearest,
)

__all__ = ["resolve", "top_level_of", "window_matches"]


def top_level_of(nodes: Sequence[TreeNode]) -> dict[str, TreeNode]:
    """Map every node key to its top-level window node (depth 1; the app root maps to itself)."""
    result: dict[str, TreeNode] = {}
    current: TreeNode | None = None
    for node in nodes:
        if node.depth <= 1:
            current = node
        if current is not None:
            result[node.key] = current
    return result


def window_matches(window: TreeNode, wanted: str) -> bool:
    """A window is named by its id or its title."""
    return wanted in (window.id, window.name)


def _describe(node: TreeNode, windows: dict[str, TreeNode]) -> str:
    window = windows.get(node.key)
    where = f" in window {window.name!r}" if window is not None and window.key != node.key else ""
    hidden = " (hidden)" if "hidden" in node.states else ""
    return f"{node.label()}{where}{hidden}"


def resolve(nodes: Sequence[TreeNode], locator: Locator) -> TreeNode:
    """The one node ``locator.target`` names (id first, then name), within ``locator.window``."""
    windows = top_level_of(nodes)
    pool: Sequence[TreeNode] = nodes
    scope = ""
    if locator.window:
        tops = [n for n in nodes if n.depth == 1 and window_matches(n, locator.window)]
        if not tops:
            titles = [f"{n.name!r}" + (f" #{n.id}" if n.id else "") for n in nodes if n.depth == 1]
            raise ElementNotFoundError(
                f"no window with id or title {locator.window!r}; open windows: "
                + (", ".join(titles) or "none")
            )
        keys = {t.key for t in tops}
        pool = [n for n in nodes if n.key in windows and windows[n.key].key in keys]
        scope = f" in window {locator.window!r}"
    for attribute, kind in (("id", "id"), ("name", "name")):
        matches = [n for n in pool if getattr(n, attribute) == locator.target]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            listed = [_describe(n, windows) for n in matches[:10]]
            more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
            hint = " pass window=... to choose one," if not locator.window else ""
            raise AmbiguousElementError(
                f"{len(matches)} elements have the {kind} {locator.target!r}{scope}:"
                f"{hint} or use a unique id. Candidates: " + "; ".join(listed) + more,
                candidates=listed,
            )
    ids = [n.id for n in pool if n.id]
    suggestions = nearest(locator.target, ids) or nearest(locator.target, [n.name for n in pool])
    hint = f" Nearest existing: {', '.join(suggestions)}." if suggestions else ""
    raise ElementNotFoundError(
        f"no element with id or name {locator.target!r}{scope} ({len(pool)} elements searched)."
        + hint,
        suggestions=suggestions,
    )
