"""The ``ui_*`` tools of the UI-automation MCP server (official ``mcp`` SDK 2.x), over a
:class:`~loopkit_ui.service.UIService`. The command line (stdio or HTTP) is
:mod:`loopkit_ui.server`.

Every tool has a title, annotations (``readOnlyHint`` on reads and assertions, so a client can
approve them without asking), a description on every parameter and an ``outputSchema``: the
JSON schema of its answer model (:mod:`loopkit_ui.answers`), sent as ``structuredContent`` next
to the text. Files the tools write (trees, screenshots, videos) are MCP resources too.

Tool descriptions state typical times measured on the invoice app under Xvfb (see
``docs/ui-server.md`` and ``bench/test_ui_bench.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FileResource
from mcp_types import CallToolResult
from pydantic import Field

from loopkit import __version__
from loopkit_ui.answers import (
    AssertionAnswer,
    PropertyAnswer,
    ScreenshotAnswer,
    TextAnswer,
    TreeAnswer,
    WindowList,
)
from loopkit_ui.app_tools import add_app_tools
from loopkit_ui.assertions import TextMatch, check
from loopkit_ui.backends.protocol import (
    ActionResult,
    ClickMethod,
    ElementInfo,
    Expectation,
    Locator,
    UIError,
    WaitCondition,
    WaitResult,
)
from loopkit_ui.missing_ids import add_missing_id_tools
from loopkit_ui.outputs import PublishedFile
from loopkit_ui.service import UIService, answer, render_tree
from loopkit_ui.strict_arguments import refuse_unknown_arguments
from loopkit_ui.tool_hints import hints

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings

__all__ = ["TIMINGS", "build_server"]

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
    Field(description="the element's accessible id (tried first) or its visible name"),
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

# What each answer is, for the SDK: the second argument of Annotated becomes the outputSchema
# and the structuredContent of every non-error answer is validated against it.
Windows = Annotated[CallToolResult, WindowList]
Tree = Annotated[CallToolResult, TreeAnswer]
Element = Annotated[CallToolResult, ElementInfo]
Text = Annotated[CallToolResult, TextAnswer]
Property = Annotated[CallToolResult, PropertyAnswer]
Action = Annotated[CallToolResult, ActionResult]
Assertion = Annotated[CallToolResult, AssertionAnswer]
Waited = Annotated[CallToolResult, WaitResult]
Screenshot = Annotated[CallToolResult, ScreenshotAnswer]

# What a target is and how it is found is in the target, row and column parameters'
# descriptions: the tool descriptions do not repeat it (every schema is sent with every request).
_ACTION_ANSWER = "Answers success, effect, active_dialog and the windows opened or closed."


def _loc(target: str, row: int | None, column: int | None, window: str | None) -> Locator:
    return Locator(target=target, row=row, column=column, window=window)


def _expect(
    appear: list[str] | None, disappear: list[str] | None, timeout: float
) -> Expectation | None:
    if not appear and not disappear:
        return None
    return Expectation(appear=appear or [], disappear=disappear or [], timeout=timeout)


def _serve_resources(server: MCPServer, service: UIService) -> None:
    """Every file the service publishes becomes a resource of ``server`` (``resources/read``
    serves it; over HTTP behind the same bearer token as the tools)."""

    def publish(file: PublishedFile) -> None:
        server.add_resource(
            FileResource(
                uri=file.uri,
                name=file.name,
                description=file.description,
                mime_type=file.mime_type,
                path=file.path.resolve(),
            )
        )

    for file in service.outputs.published():
        publish(file)
    service.outputs.on_publish = publish


def build_server(
    service: UIService,
    *,
    auth: AuthSettings | None = None,
    token_verifier: TokenVerifier | None = None,
) -> MCPServer:
    """An MCPServer with the ``ui_*`` tools over ``service``; ``auth`` and ``token_verifier``
    (the SDK's hooks) make its HTTP app require a bearer token."""
    server: MCPServer = MCPServer(
        name="loopkit-ui",
        version=__version__,
        auth=auth,
        token_verifier=token_verifier,
        warn_on_duplicate_resources=False,
        instructions=(
            "Drive the desktop application through its accessibility tree like a tester. Use ids "
            "from ui_tree (written to a file: read it). Every action reports windows opened and "
            "closed and the active dialog: answer dialogs before anything else."
        ),
    )
    _serve_resources(server, service)
    add = server.add_tool

    # -- read ----------------------------------------------------------------------------

    async def ui_list_windows() -> Windows:
        return await service.call(lambda: WindowList(windows=service.backend.list_windows()))

    add(
        ui_list_windows,
        title="List windows",
        annotations=hints("List windows", "read"),
        description="List the app's top-level windows, dialogs, open menus, drop-downs and "
        "tooltips (title, id, role, kind, is_dialog, modal, active). Typical time: "
        f"{TIMINGS['windows']}.",
    )

    async def ui_tree(
        window: Window = None,
        node_budget: Annotated[
            int, Field(ge=1, le=20000, description="at most this many nodes")
        ] = 2000,
        format: Annotated[
            Literal["text", "json"],
            Field(description="text: one node a line; json: the snapshot with every field"),
        ] = "text",
    ) -> Tree:
        def run() -> TreeAnswer:
            snapshot = service.backend.snapshot(window=window, node_budget=node_budget)
            suffix = ".txt" if format == "text" else ".json"
            path = service.next_path("tree", suffix)
            body = render_tree(snapshot) if format == "text" else snapshot.model_dump_json()
            path.write_text(body, encoding="utf-8")
            file = service.outputs.publish(path, "an accessibility tree")
            return TreeAnswer(
                path=str(path),
                uri=file.uri,
                mime_type=file.mime_type,
                nodes=len(snapshot.nodes),
                with_ids=sum(1 for n in snapshot.nodes if n.id),
                truncated=snapshot.truncated,
                ms=snapshot.ms,
            )

        return await service.call(run)

    add(
        ui_tree,
        title="Write the accessibility tree",
        annotations=hints("Write the accessibility tree", "read"),
        description="Write the accessibility tree (one node a line: role 'name' #id "
        "[states] = text) to a file; answers its path, resource uri, node count and whether the "
        f"node budget cut it. Read the file for ids. Typical time: {TIMINGS['tree']}.",
    )

    async def ui_get_element(
        target: Target, row: Row = None, column: Column = None, window: Window = None
    ) -> Element:
        return await service.call(
            lambda: service.backend.get_element(_loc(target, row, column, window))
        )

    add(
        ui_get_element,
        title="Read an element",
        annotations=hints("Read an element", "read"),
        description="Read one element live: id, name, role, states, text, value, "
        f"bounds, enabled, visible, window. Typical time: {TIMINGS['read']}.",
    )

    async def ui_get_text(
        target: Target, row: Row = None, column: Column = None, window: Window = None
    ) -> Text:
        def run() -> TextAnswer:
            info = service.backend.get_element(_loc(target, row, column, window))
            return TextAnswer(text=info.text if info.text is not None else info.name)

        return await service.call(run)

    add(
        ui_get_text,
        title="Read an element's text",
        annotations=hints("Read an element's text", "read"),
        description="The text of an element (a label, a field's content, a cell). "
        f"Typical time: {TIMINGS['read']}.",
    )

    async def ui_get_property(
        target: Target,
        property: Annotated[str, Field(description="e.g. value, enabled, bounds, role, states")],
        row: Row = None,
        column: Column = None,
        window: Window = None,
    ) -> Property:
        return await service.call(
            lambda: service.read_property(_loc(target, row, column, window), property)
        )

    add(
        ui_get_property,
        title="Read one property",
        annotations=hints("Read one property", "read"),
        description="One property of an element by name (an element field or a toolkit "
        "attribute), as a typed JSON value: enabled is true/false, bounds [x, y, w, h], states "
        f"a list; null when the element has no such value. Typical time: {TIMINGS['read']}.",
    )

    async def ui_get_cell(table: Target, row: CellRow, column: CellColumn) -> Element:
        return await service.call(
            lambda: service.backend.get_element(_loc(table, row, column, None))
        )

    add(
        ui_get_cell,
        title="Read a table cell",
        annotations=hints("Read a table cell", "read"),
        description="Read the cell at row/column (from 0, headers excluded) of the "
        f"table with this id. Typical time: {TIMINGS['read']}.",
    )

    # -- act -----------------------------------------------------------------------------

    def _clicker(name: str, button: str, count: int) -> None:
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
            expectation = _expect(expect_appear, expect_disappear, expect_timeout)
            return await service.call(
                lambda: service.backend.click(
                    _loc(target, row, column, window),
                    button=button,  # type: ignore[arg-type]
                    count=count,
                    method=method,
                    expect=expectation,
                    diff=diff,
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
            f"{_ACTION_ANSWER} Typical time: {TIMINGS['click']}.",
        )

    _clicker("ui_click", "left", 1)
    _clicker("ui_double_click", "left", 2)
    _clicker("ui_right_click", "right", 1)

    async def ui_hover(
        target: Target, row: Row = None, column: Column = None, window: Window = None
    ) -> Action:
        return await service.call(lambda: service.backend.hover(_loc(target, row, column, window)))

    add(
        ui_hover,
        title="Hover over an element",
        annotations=hints("Hover over an element", "harmless"),
        description=f"Move the mouse over an element. {_ACTION_ANSWER} Typical time: "
        f"{TIMINGS['click']}.",
    )

    async def ui_type_text(
        target: Target,
        text: Annotated[str, Field(description="the text to type, as a user would")],
        clear: Annotated[bool, Field(description="replace the content (default) or append")] = True,
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            lambda: service.backend.type_text(
                _loc(target, None, None, window), text, clear=clear, diff=diff
            )
        )

    add(
        ui_type_text,
        title="Type into a field",
        annotations=hints("Type into a field", "act"),
        description="Focus a text field and type text with the keyboard, then "
        "read it back (success false and detail when the field shows something else). For table "
        f"cells use ui_set_cell. {_ACTION_ANSWER} Typical time: {TIMINGS['type']}.",
    )

    async def ui_press_keys(
        keys: Annotated[str, Field(description="e.g. 'Enter', 'ctrl+s', 'shift+Tab Tab', 'F2'")],
        target: Annotated[str | None, Field(description="focus this element first")] = None,
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        locator = _loc(target, None, None, window) if target else None
        return await service.call(
            lambda: service.backend.press_keys(keys, locator=locator, diff=diff)
        )

    add(
        ui_press_keys,
        title="Press keys",
        annotations=hints("Press keys", "act"),
        description="Press keys or key combinations (space separated) on the "
        f"focused element or on target. {_ACTION_ANSWER} Typical time: {TIMINGS['type']}.",
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
            lambda: service.backend.select_item(_loc(target, None, None, window), item, diff=diff)
        )

    add(
        ui_select_item,
        title="Select an item",
        annotations=hints("Select an item", "act"),
        description="Select an item of a list, tab list or combo box. "
        f"{_ACTION_ANSWER} Typical time: {TIMINGS['click']}.",
    )

    async def ui_drag_and_drop(
        source: Annotated[str, Field(description="the element to drag (id or name)")],
        target: Annotated[str, Field(description="the element to drop it on (id or name)")],
        window: Window = None,
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            lambda: service.backend.drag_and_drop(
                _loc(source, None, None, window), _loc(target, None, None, window), diff=diff
            )
        )

    add(
        ui_drag_and_drop,
        title="Drag and drop",
        annotations=hints("Drag and drop", "act"),
        description="Drag source onto target with the mouse. "
        f"{_ACTION_ANSWER} Typical time: about 150 ms.",
    )

    async def ui_set_cell(
        table: Target,
        row: CellRow,
        column: CellColumn,
        text: Annotated[str, Field(description="the cell's new text")],
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            lambda: service.backend.set_cell(_loc(table, row, column, None), text, diff=diff)
        )

    add(
        ui_set_cell,
        title="Edit a table cell",
        annotations=hints("Edit a table cell", "act"),
        description="Edit a table cell like a user (double-click, type, Enter) and "
        "read it back: success false with detail when the cell did not take the text (e.g. a "
        f"read-only column). {_ACTION_ANSWER} Typical time: {TIMINGS['set_cell']}.",
    )

    # -- assert --------------------------------------------------------------------------

    async def _assert(
        locator: Locator, what: str, expected: str | bool, match: TextMatch
    ) -> CallToolResult:
        if (death := service.app_death()) is not None:
            return answer(f"AppNotFoundError: {death}", error=True)
        try:
            result = await service.run(
                lambda: check(service.backend, locator, what, expected=expected, match=match)  # type: ignore[arg-type]
            )
        except UIError as error:
            return await service.error_answer(error)
        except ValueError as error:  # bad input: answer it
            return answer(f"{type(error).__name__}: {error}", error=True)
        return answer(AssertionAnswer.of(result), error=not result.passed)

    def _asserter(name: str, what: str) -> None:
        async def tool(
            target: Target,
            expected: Annotated[bool, Field(description="true: it should hold; false: not")] = True,
            row: Row = None,
            column: Column = None,
            window: Window = None,
        ) -> Assertion:
            return await _assert(_loc(target, row, column, window), what, expected, "equals")

        tool.__name__ = name
        claim = "exists" if what == "exists" else f"is {what}"
        title = f"Assert an element {claim}"
        add(
            tool,
            name=name,
            title=title,
            annotations=hints(title, "read"),
            description=f"Assert that an element {claim} (or not, with "
            "expected=false). An error answer means the assertion failed; it shows the actual "
            f"state. Typical time: {TIMINGS['read']}.",
        )

    _asserter("ui_assert_exists", "exists")
    _asserter("ui_assert_visible", "visible")
    _asserter("ui_assert_enabled", "enabled")

    def _text_asserter(name: str, what: str) -> None:
        async def tool(
            target: Target,
            expected: Annotated[str, Field(description="the value or text to compare with")],
            match: Annotated[TextMatch, Field(description="equals, contains or regex")] = "equals",
            row: Row = None,
            column: Column = None,
            window: Window = None,
        ) -> Assertion:
            return await _assert(_loc(target, row, column, window), what, expected, match)

        tool.__name__ = name
        title = f"Assert an element's {what}"
        add(
            tool,
            name=name,
            title=title,
            annotations=hints(title, "read"),
            description=f"Assert the {what} of an element (equals, contains or "
            f"regex). An error answer means the assertion failed and shows the actual {what}. "
            f"Typical time: {TIMINGS['read']}.",
        )

    _text_asserter("ui_assert_value", "value")
    _text_asserter("ui_assert_text", "text")

    # -- other ---------------------------------------------------------------------------

    async def ui_wait_for(
        target: Target,
        condition: Annotated[WaitCondition, Field(description="what to wait for")],
        value: Annotated[str | None, Field(description="for value/text conditions")] = None,
        timeout: Annotated[  # noqa: ASYNC109 - a tool argument
            float, Field(gt=0, le=120, description="seconds to wait at most")
        ] = 5.0,
        row: Row = None,
        column: Column = None,
        window: Window = None,
    ) -> Waited:
        locator = _loc(target, row, column, window)
        return await service.call(
            lambda: service.backend.wait_for(locator, condition, value=value, timeout=timeout),
            limit=timeout + service.call_timeout,
        )

    add(
        ui_wait_for,
        title="Wait for an element",
        annotations=hints("Wait for an element", "read"),
        description="Wait until an element appears, disappears, becomes enabled/"
        "disabled/visible, or its value/text equals value. Driven by accessibility events; "
        "answers success false with the actual state on timeout.",
    )

    async def ui_screenshot(
        target: Annotated[str | None, Field(description="only this element")] = None,
        window: Window = None,
    ) -> Screenshot:
        locator = _loc(target, None, None, window) if target else None

        def run() -> ScreenshotAnswer:
            path = service.next_path("screenshot", ".png")  # created 0600, then written into
            try:
                written = service.backend.screenshot(str(path), locator=locator)
            except BaseException:
                path.unlink(missing_ok=True)  # no empty file left by a failed screenshot
                raise
            file = service.outputs.publish(path, "a screenshot")
            return ScreenshotAnswer(path=written, uri=file.uri, mime_type=file.mime_type)

        return await service.call(run)

    add(
        ui_screenshot,
        title="Take a screenshot",
        annotations=hints("Take a screenshot", "read"),
        description="Save a PNG of the screen or of one element to a file; answers its path "
        f"and resource uri. Typical time: {TIMINGS['screenshot']}.",
    )

    add_app_tools(server, service)
    add_missing_id_tools(server, service)
    refuse_unknown_arguments(server)
    return server
