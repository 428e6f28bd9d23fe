"""The ``ui_*`` tools around the application rather than inside it: recording the screen
(``ui_start_recording``, ``ui_stop_recording``) and starting the launched app again
(``ui_restart_app``). Registered by :func:`loopkit_ui.server_tools.build_server`."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from loopkit_ui.answers import AppRestarted, RecordingStarted, RecordingStopped
from loopkit_ui.backends.protocol import UIError
from loopkit_ui.recording import DEFAULT_FPS, MAX_SECONDS
from loopkit_ui.service import UIService, answer
from loopkit_ui.tool_hints import hints

__all__ = ["add_app_tools"]

Started = Annotated[CallToolResult, RecordingStarted]
Stopped = Annotated[CallToolResult, RecordingStopped]
Restarted = Annotated[CallToolResult, AppRestarted]


def add_app_tools(server: MCPServer, service: UIService) -> None:
    """The tools around the app rather than in it: video recording and restarting the app."""

    async def ui_start_recording(
        max_seconds: Annotated[
            float,
            Field(gt=0, le=MAX_SECONDS, description="stop by itself after this many seconds"),
        ] = 300.0,
        fps: Annotated[int, Field(ge=1, le=30, description="frames a second")] = DEFAULT_FPS,
    ) -> Started:
        try:
            started = await service.start_recording(fps=fps, max_seconds=max_seconds)
        except UIError as error:
            return answer(f"{type(error).__name__}: {error}", error=True)
        return answer(started)

    server.add_tool(
        ui_start_recording,
        title="Start recording the screen",
        annotations=hints("Start recording the screen", "harmless"),
        description="Start a video (MP4) of the desktop the app is on, written to the "
        "server's output folder; one recording at a time. It ends with ui_stop_recording, at "
        "max_seconds, at the size limit, or when the server stops; the file is finalized in "
        "every case.",
    )

    async def ui_stop_recording() -> Stopped:
        try:
            stopped = await service.run(service.stop_recording, limit=40.0)
        except UIError as error:
            return answer(f"{type(error).__name__}: {error}", error=True)
        return answer(stopped, error=stopped.ended == "failed")

    server.add_tool(
        ui_stop_recording,
        title="Stop recording the screen",
        annotations=hints("Stop recording the screen", "harmless"),
        description="Stop the running recording cleanly and answer with the video's path, "
        "its resource uri, length and size (ended: stopped, or limit when it had reached its "
        "limit and stopped by itself).",
    )

    async def ui_restart_app() -> Restarted:
        return await service.call(service.restart_app, needs_app=False)

    server.add_tool(
        ui_restart_app,
        title="Restart the app",
        annotations=hints("Restart the app", "restart"),
        description="End the app the server started with --launch (if it still runs) and "
        "start it again; answers the new pid, how the previous one ended and the file its "
        "output goes to. The app's unsaved state is lost.",
    )
