"""``ui_missing_ids``: the controls of the live tree that have no accessible id, and a ready task
text for the agent that adds them in the source (a subagent with file tools only).

Which nodes are controls: the roles a user works with or reads (buttons, fields, labels, tables,
lists, menus, windows; AT-SPI's and UI Automation's names), a container (panel, group, pane,
filler) only when it has a name, since an unnamed one is a layout or a toolkit's own part. Items
inside a control (table cells and headers, list and tree items, a text field's scroll bars) are
addressed through their control (table id + row + column, item name) and are not listed.
Registered by :func:`loopkit_ui.server_tools.build_server`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from loopkit_ui.backends.lookup import MENU_ITEM_ROLES
from loopkit_ui.backends.protocol import TreeNode, TreeSnapshot
from loopkit_ui.service import UIService
from loopkit_ui.tool_hints import hints

__all__ = [
    "MAX_ELEMENTS",
    "MissingId",
    "MissingIdsAnswer",
    "add_missing_id_tools",
    "find_missing_ids",
    "id_task",
]

#: The most controls one task names (the id fixer's limit a run).
MAX_ELEMENTS = 50

_CONTROL_ROLES = frozenset(
    {
        # AT-SPI (Qt, GTK)
        "push button", "toggle button", "check box", "radio button", "combo box", "text",
        "password text", "entry", "spin button", "slider", "label", "list", "list box", "table",
        "tree", "tree table", "page tab list", "progress bar", "menu bar", "tool bar",
        "status bar", "dial", "date editor", "link", "image", "heading", "frame", "dialog",
        "alert", "menu", "popup menu", *MENU_ITEM_ROLES,
        # UI Automation (Windows)
        "button", "edit", "data grid", "tab", "hyperlink", "spinner", "split button",
        "document", "calendar", "window",
    }
)  # fmt: skip
# Counted only with a name: unnamed, they are layouts and a toolkit's inner parts.
_CONTAINER_ROLES = frozenset({"panel", "filler", "grouping", "pane", "group", "scroll pane"})
# Their children are parts of them (cells, items, scroll bars, an editor's viewport); a tool
# bar's buttons and a menu bar's menus are controls of their own.
_COMPOSITE_ROLES = frozenset(
    {
        "text", "password text", "entry", "edit", "document", "table", "tree", "tree table",
        "list", "list box", "data grid", "combo box", "spin button", "spinner", "slider",
        "page tab list", "tab", "scroll bar",
    }
)  # fmt: skip

Limit = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_ELEMENTS,
        description=f"name at most this many controls in the task (1 to {MAX_ELEMENTS}, the id "
        "fixer's limit a run)",
    ),
]


class MissingId(BaseModel):
    """One control without an accessible id, as the live tree shows it."""

    role: str
    name: str = Field(description="its accessible name (a label's or button's text)")
    text: str | None = Field(default=None, description="its text content, if any")
    window: str = Field(description="the title of its top-level window")
    parent: str = Field(description="its parent: role 'name' #id")
    parent_id: str | None = Field(description="the id of its nearest ancestor that has one")
    index: int = Field(description="its position among its parent's children, from 0")
    path: str = Field(
        description="from its top-level window down to it: '#id' for an element with an id, "
        "else role 'name'"
    )
    states: list[str] = Field(default_factory=list, description="e.g. hidden, disabled")

    def describe(self) -> str:
        """One line for the task text."""
        text = f" = {self.text!r}" if self.text else ""
        states = f" [{', '.join(self.states)}]" if self.states else ""
        inside = f", inside #{self.parent_id}" if self.parent_id else ""
        return (
            f"{self.role} {self.name!r}{text}{states}: child {self.index} of {self.parent}"
            f"{inside}; path {self.path}"
        )


class MissingIdsAnswer(BaseModel):
    """The answer of ``ui_missing_ids``."""

    count: int = Field(description="controls without an id in the tree")
    elements: list[MissingId] = Field(description="the first of them (at most limit), in order")
    checked: int = Field(description="nodes of the tree that were looked at")
    truncated: bool = Field(description="true when the node budget cut the tree")
    task: str = Field(description="the ready task text for the id fixer; empty when none")

    def render(self) -> str:
        if not self.count:
            cut = " (the tree was cut by the node budget)" if self.truncated else ""
            return f"Every control has an id ({self.checked} nodes checked{cut})."
        return (
            f"{self.count} control(s) without an id ({self.checked} nodes checked). "
            f"The task for the id fixer (hand it over as it is):\n\n{self.task}"
        )


def _label(node: TreeNode) -> str:
    return node.label()


def _step(node: TreeNode) -> str:
    return f"#{node.id}" if node.id else f"{node.role} {node.name!r}"


def _is_control(node: TreeNode) -> bool:
    if node.role in _CONTAINER_ROLES:
        return bool(node.name)
    return node.role in _CONTROL_ROLES


def find_missing_ids(nodes: Sequence[TreeNode]) -> list[MissingId]:
    """The controls of ``nodes`` (a snapshot, in pre-order) without an id, in tree order."""
    by_key = {n.key: n for n in nodes}
    index: dict[str, int] = {}  # a node's position among its parent's children
    counts: dict[str, int] = {}
    for node in nodes:
        if node.parent is not None:
            index[node.key] = counts.get(node.parent, 0)
            counts[node.parent] = index[node.key] + 1
    found: list[MissingId] = []
    for node in nodes:
        if node.id or node.depth == 0 or node.parent is None or not _is_control(node):
            continue
        chain: list[TreeNode] = []
        ancestor = by_key.get(node.parent)
        while ancestor is not None and ancestor.depth > 0:
            chain.append(ancestor)
            ancestor = by_key.get(ancestor.parent) if ancestor.parent else None
        if any(a.role in _COMPOSITE_ROLES for a in chain):
            continue  # a part of a control (an editor's scroll bar, a table's header)
        parent = by_key[node.parent]
        window = chain[-1] if chain else node
        found.append(
            MissingId(
                role=node.role,
                name=node.name,
                text=node.text or None,
                window=window.name,
                parent=_label(parent) if parent.depth > 0 else "the application",
                parent_id=next((a.id for a in chain if a.id), None),
                index=index[node.key],
                path=" / ".join(_step(n) for n in [*reversed(chain), node]),
                states=node.states,
            )
        )
    return found


def id_task(elements: Sequence[MissingId], count: int) -> str:
    """The task text for the id fixer: which controls, the naming rule, nothing else changed."""
    if not elements:
        return ""
    more = (
        f" These are the first {len(elements)} of {count}; the rest wait for the next run."
        if count > len(elements)
        else ""
    )
    listed = "\n".join(f"{i}. {e.describe()}" for i, e in enumerate(elements, 1))
    return (
        f"Add an accessible id to each of these {len(elements)} controls of the app: the live "
        f"accessibility tree shows them without one.{more}\n\n"
        f"{listed}\n\n"
        "For each control:\n"
        "- Find where it is created in the source: search for its name or text, its parent and "
        "the id of the nearest ancestor that has one.\n"
        "- Give it an id named from area, control type and purpose, in the style of the app's "
        "existing ids (PascalCase, e.g. CustomerSaveButton: area Customer, purpose Save, "
        "type Button); unique in the app, never one that exists already.\n"
        "- Set it the way the code around it sets ids and as the project's coding rules say "
        "(Qt: setAccessibleIdentifier, plus setObjectName with the same id where the rules ask "
        "for it; Windows: the AutomationId).\n"
        "- Change nothing else: only add the lines that set the ids; no other line changed, "
        "moved or reformatted, no behaviour changed. Write each file once with all its ids.\n"
        f"- At most {MAX_ELEMENTS} controls a run: do only the ones listed.\n\n"
        "Answer with one line per control: the control, the id you gave it, the file it is set "
        "in; and say which controls you could not find."
    )


def missing_ids(snapshot: TreeSnapshot, limit: int = MAX_ELEMENTS) -> MissingIdsAnswer:
    """The answer for ``snapshot``: the first ``limit`` controls without an id and their task."""
    if not 1 <= limit <= MAX_ELEMENTS:
        raise ValueError(f"limit must be 1 to {MAX_ELEMENTS}, got {limit}")
    found = find_missing_ids(snapshot.nodes)
    listed = found[:limit]
    return MissingIdsAnswer(
        count=len(found),
        elements=listed,
        checked=len(snapshot.nodes),
        truncated=snapshot.truncated,
        task=id_task(listed, len(found)),
    )


Missing = Annotated[CallToolResult, MissingIdsAnswer]


def add_missing_id_tools(server: MCPServer, service: UIService) -> None:
    """Register ``ui_missing_ids`` on ``server``."""

    async def ui_missing_ids(
        window: Annotated[
            str | None, Field(description="only this top-level window (id or title)")
        ] = None,
        limit: Limit = MAX_ELEMENTS,
        node_budget: Annotated[
            int, Field(ge=1, le=20000, description="at most this many nodes (default 2,000)")
        ] = 2000,
    ) -> Missing:
        def run() -> MissingIdsAnswer:
            snapshot = service.backend.snapshot(window=window, node_budget=node_budget)
            return missing_ids(snapshot, limit)

        return await service.call(run)

    server.add_tool(
        ui_missing_ids,
        title="List controls without an id",
        annotations=hints("List controls without an id", "read"),
        description="List the controls of the live tree that have no accessible id "
        "(AutomationId): role, name, text, window, parent and the id of the nearest ancestor "
        "with one, position among the parent's children, path; with a ready task text for the "
        "id fixer (a subagent with file tools), which adds the ids in the source. Table cells, "
        "list items and the inner parts of a control are not listed (they are reached through "
        "their control). Typical time: about 5 ms (the first call of a session reads the whole "
        "tree: about 130 ms on the invoice app).",
    )
