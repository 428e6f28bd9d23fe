"""The annotations every ``ui_*`` tool carries (MCP ``ToolAnnotations``): what a client may
approve without asking (``readOnlyHint``), what may lose data (``destructiveHint``), what can be
repeated safely (``idempotentHint``). None is open-world: every tool works on one local app."""

from __future__ import annotations

from typing import Literal

from mcp_types import ToolAnnotations

__all__ = ["ToolKind", "hints"]

ToolKind = Literal["read", "act", "harmless", "restart"]


def hints(title: str, kind: ToolKind) -> ToolAnnotations:
    """The tool's annotations. read: changes nothing in the app (it may write a file into the
    server's own output folder), so a client may approve it without asking. act: input to the
    app, which may delete or overwrite data. harmless: changes something outside the app's data
    (the pointer, a recording). restart: ends the app and starts it again. Never open-world:
    every tool works on one local application."""
    return ToolAnnotations(
        title=title,
        read_only_hint=kind == "read",
        destructive_hint=kind in ("act", "restart"),
        idempotent_hint=kind == "read",
        open_world_hint=False,
    )
