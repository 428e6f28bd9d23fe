"""Element lookup over a tree snapshot, shared by the backends: id first, then name; an
ambiguous match lists its candidates; a miss lists the nearest ids that exist. Also the id and
window-kind rules both backends share."""

from __future__ import annotations

from collections.abc import Sequence

from loopkit_ui.backends.protocol import (
    AmbiguousElementError,
    ElementNotFoundError,
    Locator,
    TreeDiff,
    TreeNode,
    WindowKind,
    nearest,
)

__all__ = [
    "MENU_ITEM_ROLES",
    "changed_content",
    "normalize_id",
    "resolve",
    "top_level_of",
    "window_kind",
    "window_matches",
]

MENU_ITEM_ROLES = frozenset({"menu item", "check menu item", "radio menu item"})
_MENU_ROLES = frozenset({"menu", "popup menu"})
_DIALOG_ROLES = frozenset({"dialog", "alert", "file chooser", "color chooser", "font chooser"})


def normalize_id(raw: str | None, role: str = "") -> str | None:
    """The id to report for an accessible id / AutomationId as Qt gives it.

    Qt reports a widget's ``setAccessibleIdentifier`` as is; for anything else it makes one up
    from the object names (class names where there is none) up the parent chain:
    ``QApplication.InvoiceWindow.QWidget.ItemsTable``. That is no id (and rarely unique), so it
    is reported as None, except for a menu item: a QAction cannot carry an accessible id, so its
    object name, the last part (``QApplication.ItemsContextMenu.DuplicateItemAction``), is its
    id; an action without an object name shows its class name there (``QAction``): no id.
    """
    if not raw or raw == "QApplication":
        return None
    if not raw.startswith("QApplication."):
        return raw
    if role in MENU_ITEM_ROLES:
        last = raw.rsplit(".", 1)[-1]
        is_class_name = last[:1] == "Q" and last[1:2].isupper()
        return None if is_class_name else last
    return None


def window_kind(role: str, *, is_dialog: bool = False) -> WindowKind:
    """The kind of a top-level window by its role: menu, tooltip, dialog, window; a pop-up
    that is none of these (a combo box's drop-down list) is a popup."""
    if role in _MENU_ROLES:
        return "menu"
    if role == "tool tip":
        return "tooltip"
    if is_dialog or role in _DIALOG_ROLES:
        return "dialog"
    return "window"


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


# State flags a press, a hover or a drag leaves behind without anything having taken effect.
_PASSING_STATES = frozenset({"focused", "selected", "active", "pressed", "armed"})


def changed_content(diff: TreeDiff) -> bool:
    """Whether a diff shows more than focus, selection and activation moving: an element that
    appeared, disappeared, was renamed, changed text or order, or changed another state."""
    if diff.appeared or diff.disappeared:
        return True
    for entry in diff.changed:
        parts = entry.split(": ", 1)[-1].split(", ")
        for part in parts:
            flags = part.split()
            if not all(f[:1] in "+-" and f[1:] in _PASSING_STATES for f in flags):
                return True
    return False
