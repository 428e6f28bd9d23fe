"""The ``ui_*`` tools beyond one element: coordinates (for custom-drawn widgets the tree does
not expose), scrolling, the app's windows, the clipboard, and more than one app. Registered by
:func:`loopkit_ui.server_tools.build_server`."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from loopkit_ui.action_tools import acting
from loopkit_ui.answers import ActionAnswer, AppList, ClipboardAnswer
from loopkit_ui.backends.protocol import (
    ElementNotFoundError,
    MouseButton,
    ScrollDirection,
    UIBackend,
    WindowAction,
    WindowInfo,
)
from loopkit_ui.service import UIService
from loopkit_ui.tool_hints import hints
from loopkit_ui.tool_types import ACTION_ANSWER, Action, Diff, Target

__all__ = ["add_desktop_tools", "window_origin"]

Apps = Annotated[CallToolResult, AppList]
Clipboard = Annotated[CallToolResult, ClipboardAnswer]

X = Annotated[int, Field(ge=0, description="pixels from the window's left edge")]
Y = Annotated[int, Field(ge=0, description="pixels from the window's top edge")]
InWindow = Annotated[
    str | None,
    Field(
        description="the window (id or title) the coordinates are in, as on its screenshot "
        "(ui_screenshot window=...); default: the active window"
    ),
]


def window_origin(backend: UIBackend, window: str | None) -> tuple[WindowInfo, int, int]:
    """The window coordinates are relative to (the active one by default), and its corner."""
    windows = [w for w in backend.list_windows() if w.bounds is not None]
    if window is not None:
        found = [w for w in windows if window in (w.title, w.id)]
        if not found:
            listed = ", ".join(w.label() for w in windows) or "none"
            raise ElementNotFoundError(f"no window with id or title {window!r}; open: {listed}")
        chosen = found[0]
    else:
        plain = [w for w in windows if w.kind in ("window", "dialog")] or windows
        if not plain:
            raise ElementNotFoundError("the app has no open window")
        chosen = next((w for w in plain if w.active), plain[0])
    assert chosen.bounds is not None
    return chosen, chosen.bounds[0], chosen.bounds[1]


def add_desktop_tools(server: MCPServer, service: UIService) -> None:
    """Add the coordinate, scrolling, window, clipboard and app tools to ``server``."""
    add = server.add_tool

    # -- coordinates -------------------------------------------------------------------------

    async def ui_click_at(
        x: X,
        y: Y,
        window: InWindow = None,
        button: Annotated[MouseButton, Field(description="left, right or middle")] = "left",
        count: Annotated[int, Field(ge=1, le=2, description="2: a double-click")] = 1,
        diff: Diff = False,
    ) -> Action:
        def run() -> ActionAnswer:
            backend = service.backend
            _info, left, top = window_origin(backend, window)
            result = backend.click_at(left + x, top + y, button=button, count=count, diff=diff)
            return service.after_action(backend, result)

        return await service.call(run)

    add(
        ui_click_at,
        title="Click at a point",
        annotations=hints("Click at a point", "act"),
        description="Click (or double-click) at x, y inside one of the app's windows, for "
        "custom-drawn widgets the tree does not expose; a point outside the app's windows is "
        "refused. The answer's detail names the element found there. Prefer refs or ids. "
        f"{ACTION_ANSWER}",
    )

    async def ui_drag_at(
        x: X,
        y: Y,
        to_x: Annotated[int, Field(ge=0, description="where to drop, from the window's left")],
        to_y: Annotated[int, Field(ge=0, description="where to drop, from the window's top")],
        window: InWindow = None,
        diff: Diff = False,
    ) -> Action:
        def run() -> ActionAnswer:
            backend = service.backend
            _info, left, top = window_origin(backend, window)
            result = backend.drag_at(left + x, top + y, left + to_x, top + to_y, diff=diff)
            return service.after_action(backend, result)

        return await service.call(run)

    add(
        ui_drag_at,
        title="Drag between points",
        annotations=hints("Drag between points", "act"),
        description="Press at x, y, move to to_x, to_y and release, inside the app's windows "
        f"(coordinates from the window's corner). {ACTION_ANSWER}",
    )

    # -- scrolling ---------------------------------------------------------------------------

    async def ui_scroll(
        target: Target,
        direction: Annotated[
            ScrollDirection, Field(description="up, down, left or right")
        ] = "down",
        amount: Annotated[int, Field(ge=1, le=100, description="wheel notches (3 rows each)")] = 3,
        diff: Diff = False,
    ) -> Action:
        return await service.call(
            acting(
                service,
                target,
                None,
                None,
                None,
                lambda b, loc: b.scroll(loc, direction=direction, amount=amount, diff=diff),
            )
        )

    add(
        ui_scroll,
        title="Scroll",
        annotations=hints("Scroll", "act"),
        description="Turn the mouse wheel over an element (a table, a list, a scroll area) by "
        f"amount notches. {ACTION_ANSWER}",
    )

    async def ui_scroll_into_view(target: Target) -> Action:
        return await service.call(
            acting(service, target, None, None, None, lambda b, loc: b.scroll_into_view(loc)),
            limit=service.call_timeout * 2,
        )

    add(
        ui_scroll_into_view,
        title="Scroll an element into view",
        annotations=hints("Scroll an element into view", "harmless"),
        description="Scroll the element's table, list or scroll area with the wheel until the "
        f"element shows (e.g. a table cell far down). {ACTION_ANSWER}",
    )

    # -- windows -----------------------------------------------------------------------------

    async def ui_window(
        action: Annotated[
            WindowAction,
            Field(description="focus, move, resize, minimize, maximize, restore or close"),
        ],
        window: Annotated[
            str | None, Field(description="the window (id or title); default: the active one")
        ] = None,
        x: Annotated[int | None, Field(description="move: the new left edge on screen")] = None,
        y: Annotated[int | None, Field(description="move: the new top edge on screen")] = None,
        width: Annotated[int | None, Field(ge=1, description="resize: the new width")] = None,
        height: Annotated[int | None, Field(ge=1, description="resize: the new height")] = None,
    ) -> Action:
        def run() -> ActionAnswer:
            backend = service.backend
            result = backend.window_action(window, action, x=x, y=y, width=width, height=height)
            return service.after_action(backend, result)

        return await service.call(run)

    add(
        ui_window,
        title="Manage a window",
        annotations=hints("Manage a window", "act"),
        description="Focus, move, resize, minimise, maximise, restore or close one of the "
        "app's top-level windows (close sends the window's close request, as its title bar "
        f"button does: the app may ask to save). {ACTION_ANSWER}",
    )

    # -- the clipboard -----------------------------------------------------------------------

    async def ui_get_clipboard() -> Clipboard:
        return await service.call(
            lambda: ClipboardAnswer(text=service.backend.get_clipboard()), needs_app=False
        )

    add(
        ui_get_clipboard,
        title="Read the clipboard",
        annotations=hints("Read the clipboard", "read"),
        description="The clipboard's text (empty when it holds none), e.g. after the app's Copy.",
    )

    async def ui_set_clipboard(
        text: Annotated[str, Field(description="the text to put on the clipboard")],
    ) -> Clipboard:
        def run() -> ClipboardAnswer:
            service.backend.set_clipboard(text)
            return ClipboardAnswer(text=text)

        return await service.call(run, needs_app=False)

    add(
        ui_set_clipboard,
        title="Write the clipboard",
        annotations=hints("Write the clipboard", "harmless"),
        description="Put text on the clipboard (then paste it in the app with ui_press_keys "
        "ctrl+v, to test pasting).",
    )

    # -- more than one app -------------------------------------------------------------------

    async def ui_list_apps() -> Apps:
        return await service.call(service.apps, needs_app=False)

    add(
        ui_list_apps,
        title="List the apps",
        annotations=hints("List the apps", "read"),
        description="The accessible applications on the desktop (name, pid), the ones this "
        "server is attached to, the current one (the tools work on it; refs name their own "
        "app) and the ones ui_launch_app can start.",
    )

    async def ui_attach_app(
        app_name: Annotated[
            str | None,
            Field(description="accessible name or a word of its command line (as --app-name)"),
        ] = None,
        pid: Annotated[int | None, Field(description="or its process id")] = None,
    ) -> Apps:
        return await service.call(lambda: service.attach_app(app_name, pid), needs_app=False)

    add(
        ui_attach_app,
        title="Attach to another app",
        annotations=hints("Attach to another app", "read"),
        description="Attach to another running app on the desktop (by name or pid) and make "
        "it the current one; attaching to one attached before switches back to it.",
    )

    async def ui_launch_app(
        app: Annotated[str, Field(description="one of the server's --launchable names")],
    ) -> Apps:
        return await service.call(
            lambda: service.launch_app(app), needs_app=False, limit=service.call_timeout * 2
        )

    add(
        ui_launch_app,
        title="Launch another app",
        annotations=hints("Launch another app", "restart"),
        description="Start an app the server was allowed to launch (--launchable NAME=COMMAND) "
        "on the same desktop, attach to it and make it current; it ends with the server.",
    )
