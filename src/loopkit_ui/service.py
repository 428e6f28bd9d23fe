"""What the MCP server's tools share: the backend, its timeouts, the output folder, the app the
server launched, the screen recorder, and the conversion of answers and errors into tool
results (text for a model, structured content for a program, resource links for files).

Every backend call runs in a worker thread under a deadline, so a UI that stops answering (a
modal dialog, a busy thread) produces a timeout error instead of a hung server.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from mcp_types import CallToolResult, ContentBlock, ResourceLink, TextContent
from pydantic import BaseModel

from loopkit.child_env import child_environment
from loopkit_ui.answers import (
    AppRestarted,
    OutputFile,
    PropertyAnswer,
    RecordingStarted,
    RecordingStopped,
    render_text,
)
from loopkit_ui.backends import create_backend
from loopkit_ui.backends.protocol import (
    AppNotFoundError,
    ElementInfo,
    ElementVanishedError,
    Locator,
    TreeSnapshot,
    UIBackend,
    UIError,
    UITimeoutError,
)
from loopkit_ui.launched_app import LaunchedApp
from loopkit_ui.outputs import OutputFolder
from loopkit_ui.recording import START_WAIT as RECORDING_START_WAIT
from loopkit_ui.recording import RecordingError, ScreenRecorder

__all__ = ["UIService", "answer", "render_tree"]

_T = TypeVar("_T")
_ELEMENT_FIELDS = tuple(ElementInfo.model_fields)


def answer(value: BaseModel | str, *, error: bool = False) -> CallToolResult:
    """A tool result: the text a model reads (compact JSON, or plain text), and for a model
    answer its ``structuredContent`` (every field, nulls included) and, for a file, a resource
    link to it. Flagged as an error when ``error``."""
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(type="text", text=value)], is_error=error)
    content: list[ContentBlock] = [TextContent(type="text", text=render_text(value))]
    if isinstance(value, OutputFile) and value.uri:
        content.append(
            ResourceLink(
                type="resource_link",
                uri=value.uri,
                name=Path(value.path).name,
                mime_type=value.mime_type,
            )
        )
    return CallToolResult(
        content=content, structured_content=value.model_dump(mode="json"), is_error=error
    )


def render_tree(snapshot: TreeSnapshot) -> str:
    """An indented outline of a snapshot: one node a line, ``role 'name' #id [states]``."""
    state = "cut at the node budget" if snapshot.truncated else "complete"
    lines = [
        f"# {snapshot.app}: {len(snapshot.nodes)} nodes (budget {snapshot.node_budget}, "
        f"{state}), read in {snapshot.ms} ms",
        "# role 'name' #id [states] = text",
    ]
    for node in snapshot.nodes:
        line = "  " * node.depth + node.label()
        if node.states:
            line += f" [{', '.join(node.states)}]"
        if node.text is not None and node.text != node.name:
            line += f" = {node.text!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


class UIService:
    """The backend plus everything the tools need around it.

    ``display``: the X display a recording grabs (the server passes its ``DISPLAY``).
    ``recorder_preexec``: run in ffmpeg's child process before it starts (the server's
    parent-death signal, so a recording ends with a killed server)."""

    def __init__(
        self,
        backend: UIBackend | None = None,
        *,
        backend_name: str | None = None,
        app_name: str | None = None,
        pid: int | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        call_timeout: float = 20.0,
        launch: Sequence[str] | None = None,
        launch_cwd: str | None = None,
        attach_timeout: float | None = None,
        launch_env_passthrough: Sequence[str] = (),
        display: str | None = None,
        recorder_preexec: Callable[[], None] | None = None,
    ) -> None:
        # Trees, screenshots, videos and the launched app's output show what the app shows:
        # folders 0700, files 0600.
        self.outputs = OutputFolder(Path(output_dir) if output_dir else None)
        self.launched: LaunchedApp | None = None
        if launch:
            # The application gets loopkit's allowlisted environment (display, D-Bus, AT-SPI,
            # Qt, locale, ...) plus the passthrough, never a key the server's environment holds.
            env = child_environment(launch_env_passthrough)
            self.launched = LaunchedApp(launch, cwd=launch_cwd, env=env, outputs=self.outputs)
            pid = self.launched.start()
        # Each accessibility call gets at most half the tool call's time, so a hung application
        # yields a precise "did not answer" error well before the call's own deadline.
        self._backend_name = backend_name
        self._backend_config: dict[str, Any] = {"timeout": min(5.0, call_timeout / 2)}
        if app_name:
            self._backend_config["app_name"] = app_name
        if attach_timeout is not None:
            self._backend_config["attach_timeout"] = attach_timeout
        self.backend = backend or self._new_backend(pid)
        self.call_timeout = call_timeout
        self.recorder = ScreenRecorder(display=display, preexec=recorder_preexec)

    def _new_backend(self, pid: int | None) -> UIBackend:
        config = dict(self._backend_config)
        if pid is not None:
            config["pid"] = pid
        return create_backend(self._backend_name, **config)

    @property
    def output_dir(self) -> Path:
        """The private folder the tools write into."""
        return self.outputs.path

    def next_path(self, kind: str, suffix: str) -> Path:
        """A new, empty 0600 file in the output folder (see :meth:`OutputFolder.new_file`)."""
        return self.outputs.new_file(kind, suffix)

    async def run(self, fn: Callable[[], _T], *, limit: float | None = None) -> _T:
        """Run a blocking backend call in a worker thread, bounded by ``limit`` seconds."""
        limit = limit or self.call_timeout
        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except TimeoutError as error:
            raise UITimeoutError(
                f"the call did not finish within {limit:g} s; the application may be blocked "
                "(a modal dialog, a busy UI thread). Take a screenshot or list the windows."
            ) from error

    async def call(
        self, fn: Callable[[], BaseModel], *, limit: float | None = None, needs_app: bool = True
    ) -> CallToolResult:
        """Run ``fn`` and answer with its result, or with its error as an error answer. When
        the app the server launched has ended, a call that ``needs_app`` answers how it ended
        and what it printed last (the accessibility error would only say it is missing)."""
        if needs_app and (death := self.app_death()) is not None:
            return answer(f"AppNotFoundError: {death}", error=True)
        try:
            return answer(await self.run(fn, limit=limit))
        except UIError as error:
            return await self.error_answer(error, needs_app=needs_app)
        except ValueError as error:  # pydantic validation of locators and arguments
            return answer(f"invalid arguments: {error}", error=True)

    async def error_answer(self, error: UIError, *, needs_app: bool = True) -> CallToolResult:
        """The error answer for ``error``; when the launched app has ended, with how it ended
        and its last output."""
        message = f"{type(error).__name__}: {error}"
        if not needs_app or self.launched is None:
            return answer(message, error=True)
        if isinstance(error, AppNotFoundError | ElementVanishedError):
            # The app left the bus: if it is dying, its exit status is a moment away.
            await anyio.to_thread.run_sync(self.launched.wait_ended, 1.0)
        if (death := self.app_death()) is not None:
            return answer(f"{message}\n{death}", error=True)
        return answer(message, error=True)

    def app_death(self) -> str | None:
        """None unless the app this server launched has ended: then how, and its last output."""
        return None if self.launched is None else self.launched.death_report()

    # -- what the tools do beyond one backend call -------------------------------------------

    def read_property(self, locator: Locator, name: str) -> PropertyAnswer:
        """One property as a typed JSON value: an element field keeps its type (a boolean, a
        number, a list of states, ``[x, y, w, h]``); a toolkit attribute is a string; a value
        the element does not have is None."""
        if name in _ELEMENT_FIELDS:
            info = self.backend.get_element(locator)
            return PropertyAnswer(property=name, value=info.model_dump(mode="json")[name])
        return PropertyAnswer(property=name, value=self.backend.get_property(locator, name))

    def restart_app(self) -> AppRestarted:
        """End the launched app if it runs, start it again, and attach to the new process."""
        if self.launched is None:
            raise UIError(
                "this server did not start the app (it attaches to one started elsewhere); "
                "ui_restart_app works when the server runs with --launch"
            )
        previous = self.launched.restart()
        old, self.backend = self.backend, self._new_backend(self.launched.pid)
        old.close()
        assert self.launched.log_path is not None
        return AppRestarted(
            pid=self.launched.pid,
            command=self.launched.argv,
            output_log=str(self.launched.log_path),
            previous_exit=previous,
        )

    async def start_recording(self, *, fps: int, max_seconds: float) -> RecordingStarted:
        """Start recording the screen into a new file of the output folder. ffmpeg is started
        from the event loop's thread (the main thread), so its parent-death signal is tied to
        the server's life, not to a worker thread's."""
        path = self.next_path("recording", ".mp4")
        try:
            recording = self.recorder.start(path, fps=fps, max_seconds=max_seconds)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        # Answer once ffmpeg has written the file's header: a recording stopped or killed
        # before that leaves no playable file. An ffmpeg that cannot start ends meanwhile.
        deadline = time.monotonic() + RECORDING_START_WAIT
        while not recording.begun() and recording.process.poll() is None:
            if time.monotonic() > deadline:
                self.recorder.close()
                path.unlink(missing_ok=True)
                raise RecordingError(
                    f"ffmpeg wrote nothing in {RECORDING_START_WAIT:g} s; is the display "
                    f"{recording.display} alive?"
                )
            await anyio.sleep(0.05)
        self.recorder.check_started(recording)
        return RecordingStarted(
            path=str(path),
            display=recording.display,
            fps=fps,
            max_seconds=max_seconds,
            max_bytes=recording.max_bytes,
        )

    def stop_recording(self) -> RecordingStopped:
        """Stop the running recording (the file is finalized) and publish the video."""
        finished = self.recorder.stop()
        uri = ""  # an empty file is no resource
        if finished.size_bytes:
            uri = self.outputs.publish(finished.path, "a video of the desktop").uri
        return RecordingStopped(
            path=str(finished.path),
            uri=uri,
            mime_type="video/mp4",
            seconds=finished.seconds,
            size_bytes=finished.size_bytes,
            ended=finished.ended,
            detail=finished.detail,
        )

    def close(self) -> None:
        """Finish a running recording, close the backend and end an application we launched."""
        self.recorder.close()
        self.backend.close()
        if self.launched is not None:
            self.launched.stop()

    @staticmethod
    def parse_launch(command: str | None) -> list[str] | None:
        """Split a ``--launch`` command line (shell quoting) into argv."""
        return shlex.split(command) if command else None
