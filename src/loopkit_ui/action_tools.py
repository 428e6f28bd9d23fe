"""The ``ui_*`` tools that act on an element like a user: click, hover, type, set text, press
keys, select, drag and drop, edit a cell. Each answers the backend's action result plus the
snapshot delta (:meth:`UIService.after_action`). Registered by
:func:`loopkit_ui.server_tools.build_server`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Annotated

import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from loopkit_ui.answers import ActionAnswer
from loopkit_ui.backends.protocol import (
    ActionResult,
    ClickMethod,
    Locator,
    MouseButton,
    UIBackend,
)
from loopkit_ui.backends.text_limits import MAX_TYPED, TYPE_CHUNK
from loopkit_ui.service import UIService
from loopkit_ui.tool_hints import hints
from loopkit_ui.tool_types import (
    ACTION_ANSWER,
    TIMINGS,
    Action,
    Appear,
    CellColumn,
    CellRow,
    Column,
    Diff,
    Disappear,
    ExpectTimeout,
    Row,
    Target,
    Window,
    expectation,
)

__all__ = ["acting", "add_action_tools"]

# Seconds of call time a typed character may take beyond the call's own timeout (the app
# takes each keystroke; 10,000 characters type in about 10 s here).
_TYPE_SECONDS_A_CHAR = 0.003


def acting(
    service: UIService,
    target: str,
    row: int | None,
    column: int | None,
    window: str | None,
    act: Callable[[UIBackend, Locator], ActionResult],
) -> Callable[[], ActionAnswer]:
    """A worker-thread job: find the target's backend and locator, act, add the snapshot."""

    def run() -> ActionAnswer:
        backend, locator = service.locate(target, row, column, window)
        return service.after_action(backend, act(backend, locator))

    return run


def add_action_tools(server: MCPServer, service: UIService) -> None:
    """Add the element actions to ``server``."""
    add = server.add_tool

    def _clicker(name: str, button: MouseButton, count: int) -> None:
        async def tool(
            target: Target,
            row: Row = None,
            column: Column = None,
            window: Window = None,
            method: Annotated[
                ClickMethod,
                Field(
                    description="auto: synthesized mouse input, the accessible action when "
                    "off screen; input; action (Qt's Press, ~100 ms slower)"
                ),
            ] = "auto",
            diff: Diff = False,
            expect_appear: Appear = None,
            expect_disappear: Disappear = None,
            expect_timeout: ExpectTimeout = 3.0,
        ) -> Action:
            expect = expectation(expect_appear, expect_disappear, expect_timeout)
            return await service.call(
                acting(
                    service,
                    target,
                    row,
                    column,
                    window,
                    lambda b, loc: b.click(
                        loc,
                        button=button,
                        count=count,
                        method=method,
                        expect=expect,
                        diff=diff,
                    ),
                ),
                limit=service.call_timeout + expect_timeout,
            )

        tool.__name__ = name
        what = {
            "ui_click": "Click",
            "ui_double_click": "Double-click",
            "ui_right_click": "Right-click",
        }[name]
        add(
            tool,
            name=name,
            title=f"{what} an element",
            annotations=hints(f"{what} an element", "act"),
            description=f"{what} an element like a user and wait for the "
            f"effect (accessibility events, or expect_appear/expect_disappear). "
            f"{ACTION_ANSWER} Typical time: {TIMINGS['click']}.",
        )

    _clicker("ui_click", "left", 1)
    _clicker("ui_double_click", "left", 2)
    _clicker("ui_right_click", "right", 1)

    async def ui_hover(
        target: Target, row: Row = None, column: Column = None, window: Window = None
    ) -> Action:
        return await service.call(
            acting(service, target, row, column, window, lambda b, loc: b.hover(loc))
        )

    add(
        ui_hover,
        title="Hover over an element",
        annotations=hints("Hover over an element", "harmless"),
        description="Move the mouse over an element; an element with a tooltip is answered "
        f"once the tooltip shows (up to 2 s). {ACTION_ANSWER} Typical time: {TIMINGS['click']}.",
    )

    async def ui_type_text(
        target: Target,
        text: Annotated[
            str, Field(description=f"the text to type, as a user would (at most {MAX_TYPED:,})")
        ],
        ctx: Context,
        clear: Annotated[bool, Field(description="replace the content (default) or append")] = True,
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        cancel = threading.Event()

        def progress(typed: int, total: int) -> None:
            # Between chunks, from the worker thread: a client that asked for progress sees it.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(ctx.report_progress, typed, total, "characters typed")

        return await service.call(
            acting(
                service,
                target,
                None,
                None,
                window,
                lambda b, loc: b.type_text(
                    loc,
                    text,
                    clear=clear,
                    diff=diff,
                    cancel=cancel,
                    progress=progress,
                ),
            ),
            limit=service.call_timeout + len(text) * _TYPE_SECONDS_A_CHAR,
            cancel=cancel,
        )

    add(
        ui_type_text,
        title="Type into a field",
        annotations=hints("Type into a field", "act"),
        description="Focus a text field and type text with the keyboard, then "
        "read it back (success false and detail when the field shows something else). Long "
        f"texts go in chunks of {TYPE_CHUNK} characters, each waited for (progress "
        f"notifications); above {MAX_TYPED:,} use ui_set_text. For table cells use "
        f"ui_set_cell. {ACTION_ANSWER} Typical time: {TIMINGS['type']}.",
    )

    async def ui_set_text(
        target: Target,
        text: Annotated[str, Field(description="the field's whole new text (any length)")],
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            acting(
                service, target, None, None, window, lambda b, loc: b.set_text(loc, text, diff=diff)
            )
        )

    add(
        ui_set_text,
        title="Set a field's text",
        annotations=hints("Set a field's text", "act"),
        description="Replace a text field's whole content at once through the accessibility "
        "API (no keystrokes: for long texts, or when key handlers do not matter), then read it "
        f"back. To test typing itself use ui_type_text. {ACTION_ANSWER}",
    )

    async def ui_press_keys(
        keys: Annotated[str, Field(description="e.g. 'Enter', 'ctrl+s', 'shift+Tab Tab', 'F2'")],
        target: Annotated[
            str | None, Field(description="focus this element first (ref, id or name)")
        ] = None,
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        def run() -> ActionAnswer:
            if target:
                backend, locator = service.locate(target, None, None, window)
                result = backend.press_keys(keys, locator=locator, diff=diff)
            else:
                backend = service.backend
                result = backend.press_keys(keys, locator=None, diff=diff)
            return service.after_action(backend, result)

        return await service.call(run)

    add(
        ui_press_keys,
        title="Press keys",
        annotations=hints("Press keys", "act"),
        description="Press keys or key combinations (space separated) on the "
        f"focused element or on target. {ACTION_ANSWER} Typical time: {TIMINGS['type']}.",
    )

    async def ui_select_item(
        target: Target,
        item: Annotated[
            str,
            Field(
                description="the item's name, or '#N' for the item at index N counting from 0; "
                "on a table '#N' is data row N (headers excluded, as row counts everywhere)"
            ),
        ],
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            acting(
                service,
                target,
                None,
                None,
                window,
                lambda b, loc: b.select_item(loc, item, diff=diff),
            )
        )

    add(
        ui_select_item,
        title="Select an item",
        annotations=hints("Select an item", "act"),
        description="Select an item of a list, tab list or combo box. "
        f"{ACTION_ANSWER} Typical time: {TIMINGS['click']}.",
    )

    async def ui_drag_and_drop(
        source: Annotated[str, Field(description="the element to drag (ref, id or name)")],
        target: Annotated[str, Field(description="the element to drop it on (ref, id or name)")],
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        def run() -> ActionAnswer:
            backend, start = service.locate(source, None, None, window)
            _, end = service.locate(target, None, None, window)
            return service.after_action(backend, backend.drag_and_drop(start, end, diff=diff))

        return await service.call(run)

    add(
        ui_drag_and_drop,
        title="Drag and drop",
        annotations=hints("Drag and drop", "act"),
        description=f"Drag source onto target with the mouse. {ACTION_ANSWER} Typical time: "
        "about 150 ms.",
    )

    async def ui_set_cell(
        table: Target,
        row: CellRow,
        column: CellColumn,
        text: Annotated[str, Field(description="the cell's new text")],
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            acting(
                service, table, row, column, None, lambda b, loc: b.set_cell(loc, text, diff=diff)
            )
        )

    add(
        ui_set_cell,
        title="Edit a table cell",
        annotations=hints("Edit a table cell", "act"),
        description="Edit a table cell like a user (double-click, type, Enter) and "
        "read it back: success false with detail when the cell did not take the text (e.g. a "
        f"read-only column). {ACTION_ANSWER} Typical time: {TIMINGS['set_cell']}.",
    )
