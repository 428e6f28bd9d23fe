"""The parameter and answer types the ``ui_*`` tools share (the SDK turns the ``Annotated``
descriptions into each tool's input schema, and the answer model into its ``outputSchema``),
and the typical times in their descriptions."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from loopkit_ui.answers import ActionAnswer
from loopkit_ui.backends.protocol import Expectation

__all__ = [
    "ACTION_ANSWER",
    "TIMINGS",
    "Action",
    "Appear",
    "CellColumn",
    "CellRow",
    "Column",
    "Diff",
    "Disappear",
    "ExpectTimeout",
    "Row",
    "Target",
    "Window",
    "expectation",
]

# Typical times measured with bench/test_ui_bench.py (Xvfb, 2 shared cores, MCP over stdio);
# they go into the tool descriptions so a model can plan. Keep them in step with the bench.
TIMINGS = {
    "click": "about 30 ms (300 ms when nothing happens)",
    "read": "about 3 ms",
    "tree": "about 10 ms (the first call about 0.5 ms a node)",
    "type": "about 25 ms",
    "set_cell": "about 45 ms",
    "windows": "about 5 ms",
    "screenshot": "about 55 ms",
}

Target = Annotated[
    str,
    Field(
        description="the element: a ref from a snapshot (e12), else its accessible id (tried "
        "first) or its visible name"
    ),
]
Row = Annotated[int | None, Field(description="table row (from 0) when target is a table")]
Column = Annotated[int | None, Field(description="table column (from 0) with row")]
CellRow = Annotated[int, Field(description="the cell's row, from 0 (headers excluded)")]
CellColumn = Annotated[int, Field(description="the cell's column, from 0")]
Window = Annotated[str | None, Field(description="only search this top-level window (id or title)")]
Diff = Annotated[
    bool,
    Field(description="also return the tree diff (appeared/disappeared/changed, max 30 each)"),
]
Appear = Annotated[
    list[str] | None,
    Field(description="ids/names that must appear; the action fails if they do not"),
]
Disappear = Annotated[list[str] | None, Field(description="ids/names that must disappear")]
ExpectTimeout = Annotated[float, Field(gt=0, le=60, description="seconds for appear/disappear")]

Action = Annotated[CallToolResult, ActionAnswer]

# What a target is and how it is found is in the target, row and column parameters'
# descriptions: the tool descriptions do not repeat it (every schema is sent with every request).
ACTION_ANSWER = (
    "Answers success, effect, active_dialog, the windows opened or closed, and snapshot: what "
    "changed since the last look, with refs."
)


def expectation(
    appear: list[str] | None, disappear: list[str] | None, timeout: float
) -> Expectation | None:
    """An action's expectation from the tool's arguments (None when there is none)."""
    if not appear and not disappear:
        return None
    return Expectation(appear=appear or [], disappear=disappear or [], timeout=timeout)
