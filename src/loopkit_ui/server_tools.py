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

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FileResource
from mcp_types import CallToolResult
from pydantic import Field

from loopkit import __version__
from loopkit_ui.action_tools import add_action_tools
from loopkit_ui.answers import (
    AssertionAnswer,
    PropertyAnswer,
    ScreenshotAnswer,
    TextAnswer,
    TreeAnswer,
    WindowList,
)
from loopkit_ui.app_tools import add_app_tools
from loopkit_ui.assertions import AssertionResult, TextMatch, check
from loopkit_ui.backends.protocol import (
    AppNotFoundError,
    ElementInfo,
    UIError,
    WaitCondition,
    WaitResult,
)
from loopkit_ui.desktop_tools import add_desktop_tools
from loopkit_ui.missing_ids import add_missing_id_tools
from loopkit_ui.outputs import PublishedFile
from loopkit_ui.service import UIService, answer, render_tree
from loopkit_ui.snapshot_tools import add_snapshot_tools
from loopkit_ui.strict_arguments import refuse_unknown_arguments
from loopkit_ui.tool_hints import hints
from loopkit_ui.tool_types import TIMINGS, CellColumn, CellRow, Column, Row, Target, Window

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings

__all__ = ["TIMINGS", "build_server"]

# What each answer is, for the SDK: the second argument of Annotated becomes the outputSchema
# and the structuredContent of every non-error answer is validated against it.
Windows = Annotated[CallToolResult, WindowList]
Tree = Annotated[CallToolResult, TreeAnswer]
Element = Annotated[CallToolResult, ElementInfo]
Text = Annotated[CallToolResult, TextAnswer]
Property = Annotated[CallToolResult, PropertyAnswer]
Assertion = Annotated[CallToolResult, AssertionAnswer]
Waited = Annotated[CallToolResult, WaitResult]
Screenshot = Annotated[CallToolResult, ScreenshotAnswer]


def _element(
    service: UIService, target: str, row: int | None, column: int | None, window: str | None
) -> ElementInfo:
    backend, locator = service.locate(target, row, column, window)
    return backend.get_element(locator)


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
            "Drive the desktop application through its accessibility tree like a tester. "
            "ui_snapshot shows the tree with a ref per element (target='e12'); ids from it or "
            "from ui_tree work too. Every action reports windows opened and closed, the active "
            "dialog (answer dialogs before anything else) and what changed, with new refs."
        ),
    )
    _serve_resources(server, service)
    add = server.add_tool

    # -- read ----------------------------------------------------------------------------

    async def ui_list_windows(
        all_apps: Annotated[
            bool,
            Field(
                description="also the windows of the desktop's other apps (a file chooser or "
                "a crash reporter of another process), each with its app"
            ),
        ] = False,
    ) -> Windows:
        def run() -> WindowList:
            if not all_apps:
                return WindowList(windows=service.backend.list_windows())
            try:
                windows = service.backend.list_windows()
            except AppNotFoundError:
                windows = []  # the app died: what else shows (its crash reporter) still counts
            return WindowList(windows=windows + service.backend.other_windows())

        # With all_apps the answer needs no app: after a crash it shows who is left.
        return await service.call(run, needs_app=not all_apps)

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
        return await service.call(lambda: _element(service, target, row, column, window))

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
            info = _element(service, target, row, column, window)
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
            lambda: service.read_property(*service.locate(target, row, column, window), property)
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
        return await service.call(lambda: _element(service, table, row, column, None))

    add(
        ui_get_cell,
        title="Read a table cell",
        annotations=hints("Read a table cell", "read"),
        description="Read the cell at row/column (from 0, headers excluded) of the "
        f"table with this id. Typical time: {TIMINGS['read']}.",
    )

    # -- assert --------------------------------------------------------------------------

    async def _assert(
        place: tuple[str, int | None, int | None, str | None],
        what: str,
        expected: str | bool,
        match: TextMatch,
    ) -> CallToolResult:
        if (death := service.app_death()) is not None:
            return answer(f"AppNotFoundError: {death}", error=True)

        def run() -> AssertionResult:
            # A stale ref is an element that does not exist: the check says so, no error.
            backend, locator = service.locate(*place, strict=False)
            return check(backend, locator, what, expected=expected, match=match)  # type: ignore[arg-type]

        try:
            result = await service.run(run)
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
            return await _assert((target, row, column, window), what, expected, "equals")

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
            return await _assert((target, row, column, window), what, expected, match)

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
        def run() -> WaitResult:
            backend, locator = service.locate(target, row, column, window, strict=False)
            return backend.wait_for(locator, condition, value=value, timeout=timeout)

        return await service.call(run, limit=timeout + service.call_timeout)

    add(
        ui_wait_for,
        title="Wait for an element",
        annotations=hints("Wait for an element", "read"),
        description="Wait until an element appears, disappears, becomes enabled/"
        "disabled/visible, or its value/text equals value. Driven by accessibility events; "
        "answers success false with the actual state on timeout.",
    )

    async def ui_screenshot(
        target: Annotated[
            str | None, Field(description="crop to this element (ref, id or name)")
        ] = None,
        window: Annotated[
            str | None, Field(description="crop to this top-level window (id or title)")
        ] = None,
        image: Annotated[
            bool | None,
            Field(
                description="also answer the PNG itself as image content, for a model that "
                "sees images (default: the server's --screenshot-images)"
            ),
        ] = None,
    ) -> Screenshot:
        def run() -> ScreenshotAnswer:
            path = service.next_path("screenshot", ".png")  # created 0600, then written into
            try:
                if target:
                    backend, locator = service.locate(target, None, None, window)
                    written = backend.screenshot(str(path), locator=locator)
                else:
                    written = service.backend.screenshot(str(path), window=window)
            except BaseException:
                path.unlink(missing_ok=True)  # no empty file left by a failed screenshot
                raise
            file = service.outputs.publish(path, "a screenshot")
            return ScreenshotAnswer(path=written, uri=file.uri, mime_type=file.mime_type)

        # The whole screen needs no app: it shows the desktop as the app died, for one.
        whole = not target and not window
        try:
            shot = await service.run(run)
        except UIError as error:
            return await service.error_answer(error, needs_app=not whole)
        if (death := service.app_death()) is not None and not whole:
            return answer(f"AppNotFoundError: {death}", error=True)
        send = service.screenshot_images if image is None else image
        picture = await anyio.Path(shot.path).read_bytes() if send else None
        return answer(shot, image=picture)

    add(
        ui_screenshot,
        title="Take a screenshot",
        annotations=hints("Take a screenshot", "read"),
        description="Save a PNG of the screen, of one element or of one window to a file; "
        "answers its path and resource uri, and with image=true the picture itself. The whole "
        f"screen works after the app died. Typical time: {TIMINGS['screenshot']}.",
    )

    add_action_tools(server, service)
    add_desktop_tools(server, service)
    add_snapshot_tools(server, service)
    add_app_tools(server, service)
    add_missing_id_tools(server, service)
    refuse_unknown_arguments(server)
    return server
