"""What the MCP server's tools share: the backend, its timeouts, the output folder, the app the
server launched, the screen recorder, and the conversion of answers and errors into tool
results (text for a model, structured content for a program, resource links for files).

Every backend call runs in a worker thread under a deadline, so a UI that stops answering (a
modal dialog, a busy thread) produces a timeout error instead of a hung server.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp_types import CallToolResult, ContentBlock, ImageContent, ResourceLink, TextContent
from pydantic import BaseModel

from loopkit.child_env import child_environment
from loopkit_ui.answers import (
    ActionAnswer,
    AppList,
    AppRestarted,
    OutputFile,
    PropertyAnswer,
    RecordingStarted,
    RecordingStopped,
    render_text,
)
from loopkit_ui.backends import create_backend
from loopkit_ui.backends.protocol import (
    ActionResult,
    AppNotFoundError,
    ElementInfo,
    ElementVanishedError,
    Locator,
    StaleRefError,
    TreeNode,
    TreeSnapshot,
    UIBackend,
    UIError,
    UITimeoutError,
)
from loopkit_ui.launched_app import LaunchedApp
from loopkit_ui.outputs import OutputFolder
from loopkit_ui.recording import START_WAIT as RECORDING_START_WAIT
from loopkit_ui.recording import RecordingError, ScreenRecorder
from loopkit_ui.snapshot import (
    RefTable,
    SnapshotLimits,
    View,
    parse_ref,
    render_delta,
    render_outline,
)

__all__ = ["AppSlot", "SnapshotMode", "UIService", "answer", "render_tree"]

#: What an action's answer carries of the tree: what changed since the model last looked
#: (incremental), the whole outline each time (full), or nothing (none).
SnapshotMode = Literal["incremental", "full", "none"]
# An action answer's outline: the first one whole, so smaller than ui_snapshot's.
_ACTION_LIMITS = SnapshotLimits(max_lines=150, max_depth=14, max_children=25)
_DELTA_LIMITS = SnapshotLimits(max_lines=60, max_depth=14, max_children=25)


@dataclass
class AppSlot:
    """One application the server is attached to: its backend, the process when the server
    launched it, and what the model was last shown of its tree (for the next delta)."""

    name: str
    backend: UIBackend
    launched: LaunchedApp | None = None
    view: View | None = None


_T = TypeVar("_T")
_ELEMENT_FIELDS = tuple(ElementInfo.model_fields)


def answer(
    value: BaseModel | str, *, error: bool = False, image: bytes | None = None
) -> CallToolResult:
    """A tool result: the text a model reads (compact JSON, or plain text), and for a model
    answer its ``structuredContent`` (every field, nulls included) and, for a file, a resource
    link to it (and with ``image``, the PNG itself as image content, for vision models).
    Flagged as an error when ``error``."""
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
    if image is not None:
        import base64

        content.append(
            ImageContent(type="image", data=base64.b64encode(image).decode(), mime_type="image/png")
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
    """The backends plus everything the tools need around them.

    ``display``: the X display a recording grabs (the server passes its ``DISPLAY``).
    ``recorder_preexec``: run in ffmpeg's child process before it starts (the server's
    parent-death signal, so a recording ends with a killed server).
    ``snapshots``: what action answers carry of the tree (see :data:`SnapshotMode`).
    ``screenshot_images``: ``ui_screenshot`` answers the PNG as image content by default.
    ``launchable``: the commands ``ui_launch_app`` may start, by name (nothing else)."""

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
        snapshots: SnapshotMode = "incremental",
        screenshot_images: bool = False,
        launchable: dict[str, list[str]] | None = None,
    ) -> None:
        # Trees, screenshots, videos and the launched app's output show what the app shows:
        # folders 0700, files 0600.
        self.outputs = OutputFolder(Path(output_dir) if output_dir else None)
        self._passthrough = tuple(launch_env_passthrough)
        self._launch_cwd = launch_cwd
        launched: LaunchedApp | None = None
        if launch:
            launched = self._launcher(launch, launch_cwd)
            pid = launched.start()
        # Each accessibility call gets at most half the tool call's time, so a hung application
        # yields a precise "did not answer" error well before the call's own deadline.
        self._backend_name = backend_name
        self._backend_config: dict[str, Any] = {"timeout": min(5.0, call_timeout / 2)}
        if attach_timeout is not None:
            self._backend_config["attach_timeout"] = attach_timeout
        self._app_name = app_name
        first = backend or self._new_backend(pid, app_name)
        name = app_name or (Path(launch[0]).name if launch else None) or "app"
        if launch and len(launch) > 2 and launch[1] == "-m":
            name = app_name or launch[2]
        self.slots: dict[str, AppSlot] = {name: AppSlot(name, first, launched)}
        self.current = name
        self.call_timeout = call_timeout
        self.recorder = ScreenRecorder(display=display, preexec=recorder_preexec)
        self.display = display
        self.snapshots: SnapshotMode = snapshots
        self.screenshot_images = screenshot_images
        self.launchable = dict(launchable or {})
        self.refs = RefTable()
        # ui_run_steps runs its steps with the per-action snapshot off, then answers one delta.
        self.quiet = False

    def _launcher(self, argv: Sequence[str], cwd: str | None) -> LaunchedApp:
        # The application gets loopkit's allowlisted environment (display, D-Bus, AT-SPI,
        # Qt, locale, ...) plus the passthrough, never a key the server's environment holds.
        env = child_environment(self._passthrough)
        return LaunchedApp(argv, cwd=cwd, env=env, outputs=self.outputs)

    def _new_backend(self, pid: int | None, app_name: str | None = None) -> UIBackend:
        config = dict(self._backend_config)
        if app_name:
            config["app_name"] = app_name
        if pid is not None:
            config["pid"] = pid
        return create_backend(self._backend_name, **config)

    # -- the apps ----------------------------------------------------------------------------

    @property
    def slot(self) -> AppSlot:
        """The current app's slot."""
        return self.slots[self.current]

    @property
    def backend(self) -> UIBackend:
        """The current app's backend."""
        return self.slot.backend

    @backend.setter
    def backend(self, value: UIBackend) -> None:
        self.slot.backend = value

    @property
    def launched(self) -> LaunchedApp | None:
        """The current app's process, when this server launched it."""
        return self.slot.launched

    def slot_of(self, backend: UIBackend) -> AppSlot:
        """The slot whose backend this is (the current one when none is)."""
        return next((s for s in self.slots.values() if s.backend is backend), self.slot)

    def apps(self) -> AppList:
        """The apps on the desktop, the ones attached, and the current one."""
        running = self.backend.list_applications()
        return AppList(
            current=self.current,
            attached=list(self.slots),
            running=running,
            launchable=sorted(self.launchable),
        )

    def attach_app(self, app_name: str | None, pid: int | None) -> AppList:
        """Attach to another running app (by name or pid) and make it current; an app
        attached before is made current again."""
        if (app_name is None) == (pid is None):
            raise UIError("give app_name or pid (one of them): the app to attach to")
        name = app_name if app_name is not None else f"pid {pid}"
        if name not in self.slots:
            backend = self._new_backend(pid, app_name)
            try:
                backend.attach()
            except BaseException:
                backend.close()
                raise
            self.slots[name] = AppSlot(name, backend)
        self.current = name
        return self.apps()

    def launch_app(self, name: str) -> AppList:
        """Start the ``--launchable`` command called ``name``, attach to it, make it current."""
        if name not in self.launchable:
            offered = ", ".join(sorted(self.launchable)) or "none (start the server with "
            offered += "" if self.launchable else "--launchable NAME=COMMAND)"
            raise UIError(f"no launchable app {name!r}; this server may launch: {offered}")
        slot = self.slots.get(name)
        if slot is not None and slot.launched is not None and slot.launched.ended() is None:
            self.current = name
            return self.apps()
        launched = self._launcher(self.launchable[name], self._launch_cwd)
        pid = launched.start()
        backend = self._new_backend(pid)
        if slot is not None:
            slot.backend.close()
        self.slots[name] = AppSlot(name, backend, launched)
        self.current = name
        return self.apps()

    # -- targets and snapshots ---------------------------------------------------------------

    def locate(
        self,
        target: str,
        row: int | None = None,
        column: int | None = None,
        window: str | None = None,
        *,
        strict: bool = True,
    ) -> tuple[UIBackend, Locator]:
        """The backend and locator a tool's target names: a ref from a snapshot (``e12``) names
        its element in its own app; anything else is an id or name in the current app. A stale
        ref is refused (StaleRefError) when ``strict``, else left to the backend (where it is
        an element that does not exist: for assertions and waits)."""
        ref = parse_ref(target)
        entry = self.refs.lookup(ref) if ref is not None else None
        if entry is None or ref is None:
            return self.backend, Locator(target=target, row=row, column=column, window=window)
        if entry.app not in self.slots or (entry.gone and strict):
            raise StaleRefError(
                f"ref {ref} ({entry.label}) is stale: that element is gone (it disappeared or "
                "its window closed). Use a ref from the latest snapshot (ui_snapshot), or the "
                "element's id or name"
            )
        backend = self.slots[entry.app].backend
        return backend, Locator(target=ref, key=entry.key, row=row, column=column)

    def snapshot_nodes(self, slot: AppSlot) -> list[TreeNode]:
        """The app's whole tree now (the mirror keeps it cheap), as a snapshot baseline."""
        return list(slot.backend.snapshot(node_budget=5000).nodes)

    @staticmethod
    def view_of(nodes: list[TreeNode]) -> View:
        """The baseline of the next delta."""
        return View(nodes)

    def outline(
        self, slot: AppSlot, nodes: list[TreeNode], limits: SnapshotLimits
    ) -> tuple[list[str], list[str], bool]:
        """An outline of ``nodes`` with refs (the whole tree, a window or a subtree)."""
        return render_outline(nodes, self.refs, slot.name, limits)

    def delta(self, slot: AppSlot) -> list[str]:
        """What changed in ``slot``'s app since the model last looked, as snapshot lines (the
        whole outline the first time, or each time with ``--snapshots full``)."""
        try:
            nodes = self.snapshot_nodes(slot)
        except UIError as error:
            return [f"# no snapshot: {error}"]
        if slot.view is None or self.snapshots == "full":
            lines, notes, _ = self.outline(slot, nodes, _ACTION_LIMITS)
        else:
            lines, notes, _ = render_delta(slot.view, nodes, self.refs, slot.name, _DELTA_LIMITS)
        slot.view = View(nodes)
        return lines + [f"# {note}" for note in notes]

    def after_action(self, backend: UIBackend, result: ActionResult) -> ActionAnswer:
        """The action's answer with the snapshot delta of its app (unless snapshots are off)."""
        answer_ = ActionAnswer.model_validate(result.model_dump())
        if self.snapshots != "none" and not self.quiet:
            answer_.snapshot = self.delta(self.slot_of(backend))
        return answer_

    @property
    def output_dir(self) -> Path:
        """The private folder the tools write into."""
        return self.outputs.path

    def next_path(self, kind: str, suffix: str) -> Path:
        """A new, empty 0600 file in the output folder (see :meth:`OutputFolder.new_file`)."""
        return self.outputs.new_file(kind, suffix)

    async def run(
        self,
        fn: Callable[[], _T],
        *,
        limit: float | None = None,
        cancel: threading.Event | None = None,
    ) -> _T:
        """Run a blocking backend call in a worker thread, bounded by ``limit`` seconds; on a
        timeout ``cancel`` is set, so a long job (typing) stops at its next step instead of
        going on after the caller gave up."""
        limit = limit or self.call_timeout
        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except TimeoutError as error:
            if cancel is not None:
                cancel.set()
            raise UITimeoutError(
                f"the call did not finish within {limit:g} s; the application may be blocked "
                "(a modal dialog, a busy UI thread). Take a screenshot or list the windows."
            ) from error

    async def call(
        self,
        fn: Callable[[], BaseModel],
        *,
        limit: float | None = None,
        needs_app: bool = True,
        cancel: threading.Event | None = None,
    ) -> CallToolResult:
        """Run ``fn`` and answer with its result, or with its error as an error answer. When
        the app the server launched has ended, a call that ``needs_app`` answers how it ended
        and what it printed last (the accessibility error would only say it is missing)."""
        if needs_app and (death := self.app_death()) is not None:
            return answer(f"AppNotFoundError: {death}", error=True)
        try:
            return answer(await self.run(fn, limit=limit, cancel=cancel))
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

    def read_property(self, backend: UIBackend, locator: Locator, name: str) -> PropertyAnswer:
        """One property as a typed JSON value: an element field keeps its type (a boolean, a
        number, a list of states, ``[x, y, w, h]``); a toolkit attribute is a string; a value
        the element does not have is None."""
        if name in _ELEMENT_FIELDS:
            info = backend.get_element(locator)
            return PropertyAnswer(property=name, value=info.model_dump(mode="json")[name])
        return PropertyAnswer(property=name, value=backend.get_property(locator, name))

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
        self.slot.view = None  # a new process: its first action answers the whole outline
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

    def warm_up(self) -> None:
        """Let the current backend connect ahead of the first call (where it can: AT-SPI);
        errors are left for that call."""
        warm_up = getattr(self.backend, "warm_up", None)
        if callable(warm_up):
            warm_up()

    def close(self) -> None:
        """Finish a running recording, close the backends and end the applications we
        launched."""
        self.recorder.close()
        for slot in self.slots.values():
            slot.backend.close()
            if slot.launched is not None:
                slot.launched.stop()

    @staticmethod
    def parse_launch(command: str | None) -> list[str] | None:
        """Split a ``--launch`` command line (shell quoting) into argv."""
        return shlex.split(command) if command else None
