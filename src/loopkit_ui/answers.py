"""What the UI server's tools answer, as pydantic models.

Each tool publishes its model's JSON schema as ``outputSchema`` and answers with the model as
``structuredContent`` (every field present, ``null`` where a value is missing), so a client
can validate and use the answer without parsing text. The text content stays what a model
reads: compact JSON without the null fields (fewer tokens), or plain text for ``ui_get_text``.

Answers about files the server wrote (trees, screenshots, recordings) carry the file's local
``path`` and its ``uri``: the same file as an MCP resource, which a client on another machine
reads with ``resources/read`` (over HTTP behind the same bearer token as the tools).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from loopkit_ui.assertions import AssertionResult
from loopkit_ui.backends.protocol import ActionResult, AppInfo, WindowInfo

__all__ = [
    "ActionAnswer",
    "AppList",
    "AppRestarted",
    "AssertionAnswer",
    "ClipboardAnswer",
    "OutputFile",
    "PropertyAnswer",
    "RecordingStarted",
    "RecordingStopped",
    "ScreenshotAnswer",
    "SnapshotAnswer",
    "StepOutcome",
    "StepsAnswer",
    "TextAnswer",
    "TreeAnswer",
    "WindowList",
    "compact",
    "render_text",
]


def compact(value: Any) -> Any:
    """Drop None values (fewer tokens); keep empty lists where they carry meaning."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def render_text(answer: BaseModel) -> str:
    """The text content of an answer: its own rendering when it has one, else compact JSON."""
    render = getattr(answer, "render", None)
    if callable(render):
        return str(render())
    return json.dumps(compact(answer), ensure_ascii=False)


class OutputFile(BaseModel):
    """A file the server wrote into its private output folder, also served as a resource."""

    path: str = Field(description="the file on the server's machine (0600, in a 0700 folder)")
    uri: str = Field(description="the same file as an MCP resource: read it with resources/read")
    mime_type: str = Field(description="the file's media type")

    def render(self) -> str:
        # The text a model reads stays as it was before resources existed: the uri is in the
        # structured answer and in the resource link beside the text.
        return json.dumps(
            compact(self.model_dump(exclude={"uri", "mime_type"})), ensure_ascii=False
        )


class WindowList(BaseModel):
    """The answer of ``ui_list_windows``."""

    windows: list[WindowInfo] = Field(
        description="the app's top-level windows; dialogs, open menus, drop-downs and "
        "tooltips included"
    )


class TreeAnswer(OutputFile):
    """The answer of ``ui_tree``: where the tree was written and what it holds."""

    nodes: int = Field(description="how many nodes the file lists")
    with_ids: int = Field(description="how many of them have an accessible id")
    truncated: bool = Field(description="true when the node budget cut the tree")
    ms: float = Field(
        description="time to bring the tree up to date (from the events since the last "
        "read, or a bulk read) and copy it, in milliseconds"
    )


class ScreenshotAnswer(OutputFile):
    """The answer of ``ui_screenshot``."""


class TextAnswer(BaseModel):
    """The answer of ``ui_get_text``: the element's text (its name when it has no text)."""

    text: str

    def render(self) -> str:
        return self.text


class PropertyAnswer(BaseModel):
    """The answer of ``ui_get_property``: a typed JSON value (a boolean, a number, a list of
    states, ``[x, y, w, h]`` bounds, a string) and ``null`` when the element has no value."""

    property: str
    value: Any = Field(description="the value as JSON; null when the element has none")

    def render(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False)  # null stays


class AssertionAnswer(BaseModel):
    """The answer of the ``ui_assert_*`` tools (an error answer when ``passed`` is false)."""

    passed: bool
    check: str = Field(description="exists, visible, enabled, value or text")
    id: str = Field(description="the element, as the call named it")
    expected: str
    actual: str
    ms: float
    message: str = Field(description="one line for humans and models")

    @classmethod
    def of(cls, result: AssertionResult) -> AssertionAnswer:
        """The answer for one assertion's result."""
        return cls(**result.model_dump(), message=result.message())


class RecordingStarted(BaseModel):
    """The answer of ``ui_start_recording``."""

    path: str = Field(description="the video file being written (finished by ui_stop_recording)")
    display: str = Field(description="what is recorded: an X display, or 'desktop' on Windows")
    fps: int
    max_seconds: float = Field(description="the recording stops by itself after this long")
    max_bytes: int = Field(description="the recording stops by itself at this file size")


class RecordingStopped(OutputFile):
    """The answer of ``ui_stop_recording``: the finished video."""

    seconds: float = Field(description="the video's length (ffprobe's; the time it ran without it)")
    size_bytes: int = Field(description="the file's size")
    ended: Literal["stopped", "limit", "failed"] = Field(
        description="stopped: by this call; limit: it had reached max_seconds or max_bytes "
        "and stopped by itself; failed: the recorder ended with an error (see detail)"
    )
    detail: str | None = None

    def render(self) -> str:
        return json.dumps(
            compact(self.model_dump(exclude={"uri", "mime_type"})), ensure_ascii=False
        )


class AppRestarted(BaseModel):
    """The answer of ``ui_restart_app``."""

    pid: int = Field(description="the new process id")
    command: list[str]
    output_log: str = Field(description="the app's stdout and stderr go to this file")
    previous_exit: str = Field(description="how the previous process ended")


class ActionAnswer(ActionResult):
    """The answer to every action: the backend's result and, unless the server runs with
    ``--snapshots none``, what changed in the app since the model last looked (a delta with
    refs; the whole outline the first time)."""

    snapshot: list[str] | None = Field(
        default=None,
        description="what changed since the last snapshot or action, one element a line: "
        "'+' appeared, '~' changed, '-' gone (its ref is stale now), each with [ref=eN]; lines "
        "starting with '#' are notes. The whole outline the first time; [] when nothing changed",
    )


class SnapshotAnswer(BaseModel):
    """The answer of ``ui_snapshot``: the app's tree as a compact outline with refs."""

    app: str = Field(description="the application it shows")
    nodes: int = Field(description="how many nodes the tree (or the part asked for) has")
    shown: int = Field(description="how many of them the outline lists")
    truncated: bool = Field(description="true when a limit cut the outline (see the notes)")
    lines: list[str] = Field(description="one element a line: role 'name' #id [states] [ref=eN]")
    notes: list[str] = Field(default_factory=list, description="what was cut, and how to see it")

    def render(self) -> str:
        head = f"# {self.app}: {self.shown} of {self.nodes} elements; act on one by its ref"
        return "\n".join([head, *self.lines, *(f"# {note}" for note in self.notes)])


class AppList(BaseModel):
    """The answer of ``ui_list_apps``, ``ui_attach_app`` and ``ui_launch_app``."""

    current: str | None = Field(description="the app the tools work on (refs name their own app)")
    attached: list[str] = Field(description="the apps this server is attached to, by name")
    running: list[AppInfo] = Field(description="the accessible applications on the desktop")
    launchable: list[str] = Field(
        default_factory=list,
        description="names ui_launch_app can start (the server's --launchable)",
    )


class ClipboardAnswer(BaseModel):
    """The answer of ``ui_get_clipboard`` and ``ui_set_clipboard``."""

    text: str

    def render(self) -> str:
        return self.text


class StepOutcome(BaseModel):
    """One step of ``ui_run_steps``."""

    step: int = Field(description="its number, from 1")
    tool: str
    ok: bool
    answer: str = Field(description="the step's answer as text (cut at 300 characters)")


class StepsAnswer(BaseModel):
    """The answer of ``ui_run_steps``: each step's outcome and one delta at the end."""

    success: bool = Field(description="true when every step ran and none failed")
    ran: int = Field(description="how many steps ran")
    steps: list[StepOutcome]
    snapshot: list[str] | None = Field(
        default=None, description="what the steps changed, as after any action (with refs)"
    )
