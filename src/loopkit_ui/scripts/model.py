"""The script format as pydantic models: the typed form of ``schema.json``.

``schema.json`` (shipped with the package) is the format's definition; these models mirror it
field for field, and ``tests/ui_scripts/test_schema.py`` checks that they agree (same step types,
same fields, same required fields). The loader validates a file against the schema first (for
clear messages with the step's path), then builds these models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ACTIONS",
    "ACTION_NEEDS",
    "FINDING_KINDS",
    "OPERATORS",
    "ORACLES",
    "STEP_TYPES",
    "ActionStep",
    "AppConfig",
    "AssertStep",
    "Check",
    "Expect",
    "FailStep",
    "ForEachStep",
    "IfStep",
    "LocatorObject",
    "LogStep",
    "Operation",
    "OracleConfig",
    "RepeatStep",
    "RestartAppStep",
    "RunStep",
    "ScreenshotStep",
    "Script",
    "SetStep",
    "SleepStep",
    "StartRecordingStep",
    "Step",
    "StepBase",
    "StopRecordingStep",
    "StoreStep",
    "WaitForStep",
    "WriteFileStep",
]

ActionName = Literal[
    "click",
    "double_click",
    "right_click",
    "hover",
    "type_text",
    "press_keys",
    "select_item",
    "drag_and_drop",
    "set_cell",
]
FindingKind = Literal[
    "process_ended",
    "not_responding",
    "crash_dialog",
    "new_window",
    "error_label",
    "app_log_error",
    "system_log_entry",
]
OracleName = Literal[
    "process_ended",
    "not_responding",
    "window_event",
    "window_poll",
    "error_label",
    "app_log",
    "system_log",
]
ACTIONS: tuple[str, ...] = ActionName.__args__  # type: ignore[attr-defined]
FINDING_KINDS: tuple[str, ...] = FindingKind.__args__  # type: ignore[attr-defined]
ORACLES: tuple[str, ...] = OracleName.__args__  # type: ignore[attr-defined]
# What each action needs besides its name (the schema says the same with if/then rules).
ACTION_NEEDS: dict[str, tuple[str, ...]] = {
    "click": ("target",),
    "double_click": ("target",),
    "right_click": ("target",),
    "hover": ("target",),
    "type_text": ("target", "text"),
    "press_keys": ("keys",),
    "select_item": ("target", "item"),
    "drag_and_drop": ("target", "to"),
    "set_cell": ("target", "row", "column", "text"),
}
OPERATORS = ("equals", "not_equals", "contains", "not_contains", "matches")
VarName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
VarRef = Annotated[str, Field(pattern=r"^\$\{[^}]+\}$")]
CellIndex = Annotated[int, Field(ge=0)] | VarRef
_STRICT = ConfigDict(extra="forbid", populate_by_name=True)


class LocatorFields(BaseModel):
    """Element address shared by several steps: id or name, optional cell and window."""

    model_config = _STRICT

    target: str | None = Field(default=None, min_length=1)
    row: CellIndex | None = None
    column: CellIndex | None = None
    window: str | None = Field(default=None, min_length=1)


class LocatorObject(LocatorFields):
    """A locator written as an object (``drag_and_drop``'s ``to``)."""

    target: str = Field(min_length=1)


class Expect(BaseModel):
    """Elements an action must make appear or disappear (the step fails otherwise)."""

    model_config = _STRICT

    appear: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    disappear: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    timeout: float = Field(default=3.0, gt=0, le=60)

    @model_validator(mode="after")
    def _something(self) -> Expect:
        if not self.appear and not self.disappear:
            raise ValueError("expect needs 'appear' or 'disappear'")
        return self


class _Comparison(BaseModel):
    """A subject (element property or value) and exactly one operator."""

    value: Any = None
    property: str | None = Field(default=None, min_length=1)
    equals: Any = None
    not_equals: Any = None
    contains: str | None = None
    not_contains: str | None = None
    matches: str | None = None

    def operator(self) -> tuple[str, Any]:
        """The one operator set, and its expected value."""
        for name in OPERATORS:
            if name in self.model_fields_set:
                return name, getattr(self, name)
        raise ValueError(f"expected exactly one of {', '.join(OPERATORS)}")

    def _check_shape(self, target: str | None) -> None:
        given = [op for op in OPERATORS if op in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(
                f"expected exactly one operator of {', '.join(OPERATORS)}, got {given or 'none'}"
            )
        has_value = "value" in self.model_fields_set
        if (target is None) == (not has_value):
            raise ValueError("expected exactly one subject: 'target' (an element) or 'value'")


class Check(LocatorFields, _Comparison):
    """A condition: an element property (``target``) or a ``value``, with one operator."""

    @model_validator(mode="after")
    def _shape(self) -> Check:
        self._check_shape(self.target)
        return self


class StepBase(BaseModel):
    """Fields every step accepts."""

    model_config = _STRICT

    name: str | None = None
    comment: str | None = None
    continue_on_failure: bool = False
    expect_findings: list[FindingKind] = Field(default_factory=list)
    screenshot: bool | None = None

    def summary(self) -> str:
        """How the step appears in the report: its name, else what it does."""
        return self.name or self.describe()

    def describe(self) -> str:
        """A one-line summary of what the step does."""
        return str(getattr(self, "type", "step"))


class ActionStep(StepBase, LocatorFields):
    """Drive the UI through the backend: the same code the MCP server's tools use."""

    type: Literal["action"]
    action: ActionName
    text: str | None = None
    clear: bool = True
    #: type_text / set_cell: the element must refuse the text (it does not show it afterwards).
    refused: bool = False
    keys: str | None = None
    item: str | None = None
    to: str | LocatorObject | None = None
    method: Literal["auto", "input", "action"] = "auto"
    expect: Expect | None = None
    diff: bool = False

    @model_validator(mode="after")
    def _needs(self) -> ActionStep:
        missing = [f for f in ACTION_NEEDS[self.action] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"action {self.action!r} needs {', '.join(map(repr, missing))}")
        if self.refused and self.action not in ("type_text", "set_cell"):
            raise ValueError(f"'refused' is for type_text and set_cell, not {self.action!r}")
        return self

    def describe(self) -> str:
        where = self.target or "(focused)"
        if self.row is not None:
            where += f"[{self.row}, {self.column}]"
        extra = self.text if self.text is not None else self.keys or self.item
        return f"{self.action} {where}" + (f" {extra!r}" if extra is not None else "")


class AssertStep(StepBase, Check):
    """Fail unless the check holds (retried until ``timeout`` seconds)."""

    type: Literal["assert"]
    timeout: float = Field(default=1.0, ge=0, le=60)
    message: str | None = None

    def describe(self) -> str:
        op, expected = self.operator()
        subject = self.target if self.target is not None else repr(self.value)
        return f"assert {subject}.{self.property or 'text'} {op} {expected!r}"


class WaitForStep(StepBase, LocatorFields):
    """Wait until an element appears, disappears, or has a value."""

    type: Literal["wait_for"]
    target: str = Field(min_length=1)
    condition: Literal["appear", "disappear", "value", "text", "enabled", "disabled", "visible"]
    value: str | None = None
    timeout: float = Field(default=5.0, gt=0, le=120)

    def describe(self) -> str:
        return f"wait_for {self.target} {self.condition}" + (
            f" {self.value!r}" if self.value is not None else ""
        )


class StoreStep(StepBase, LocatorFields):
    """Store an element property in a variable."""

    type: Literal["store"]
    target: str = Field(min_length=1)
    property: str = Field(default="text", min_length=1)
    as_: VarName = Field(alias="as")

    def describe(self) -> str:
        return f"store {self.target}.{self.property} as {self.as_}"


class SetStep(StepBase):
    """Set a variable (strings are interpolated)."""

    type: Literal["set"]
    var: VarName
    value: Any

    def describe(self) -> str:
        return f"set {self.var} = {self.value!r}"


class IfStep(StepBase):
    """Run ``then`` when the condition holds, else ``else``."""

    type: Literal["if"]
    condition: Check
    then: list[Step]
    else_: list[Step] = Field(default_factory=list, alias="else")

    def describe(self) -> str:
        subject = self.condition.target or repr(self.condition.value)
        op, expected = self.condition.operator()
        return f"if {subject} {op} {expected!r}"


class ForEachStep(StepBase):
    """Run ``steps`` once per item, the item in variable ``as``."""

    type: Literal["for_each"]
    items: list[Any] | VarRef
    as_: VarName = Field(alias="as")
    steps: list[Step]

    def describe(self) -> str:
        return f"for_each {self.as_} in {self.items!r}"


class RepeatStep(StepBase):
    """Run ``steps`` ``times`` times (the index, from 0, in variable ``as``)."""

    type: Literal["repeat"]
    times: int = Field(ge=0, le=10000)
    as_: VarName | None = Field(default=None, alias="as")
    steps: list[Step]

    def describe(self) -> str:
        return f"repeat {self.times}x"


class RunStep(StepBase):
    """Run a sub-script file (in the same app) or a block by name."""

    type: Literal["run"]
    script: str | None = Field(default=None, min_length=1)
    block: str | None = Field(default=None, min_length=1)
    with_: dict[str, Any] = Field(default_factory=dict, alias="with")

    @model_validator(mode="after")
    def _one(self) -> RunStep:
        if (self.script is None) == (self.block is None):
            raise ValueError("run needs exactly one of 'script' or 'block'")
        return self

    def describe(self) -> str:
        return f"run script {self.script}" if self.script else f"run block {self.block}"


class ScreenshotStep(StepBase, LocatorFields):
    """Take a screenshot of the app's windows (or of one element)."""

    type: Literal["screenshot"]
    label: str | None = None

    def describe(self) -> str:
        return "screenshot" + (f" {self.label}" if self.label else "")


class LogStep(StepBase):
    """Write a message to the report."""

    type: Literal["log"]
    message: str

    def describe(self) -> str:
        return f"log {self.message!r}"


class FailStep(StepBase):
    """Fail with a message."""

    type: Literal["fail"]
    message: str

    def describe(self) -> str:
        return f"fail {self.message!r}"


class WriteFileStep(StepBase):
    """Write a file (test data), text (``content``) or JSON (``json``)."""

    type: Literal["write_file"]
    path: str = Field(min_length=1)
    content: str | None = None
    json_: Any = Field(default=None, alias="json")

    @model_validator(mode="after")
    def _one(self) -> WriteFileStep:
        if ("content" in self.model_fields_set) == ("json_" in self.model_fields_set):
            raise ValueError("write_file needs exactly one of 'content' or 'json'")
        return self

    def describe(self) -> str:
        return f"write_file {self.path}"


class RestartAppStep(StepBase):
    """Close the app gracefully and start it again (e.g. to reopen a saved file)."""

    type: Literal["restart_app"]
    args: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        return "restart_app" + (f" {' '.join(self.args)}" if self.args else "")


class SleepStep(StepBase):
    """Wait a fixed time (prefer wait_for)."""

    type: Literal["sleep"]
    seconds: float = Field(ge=0, le=30)

    def describe(self) -> str:
        return f"sleep {self.seconds:g} s"


class StartRecordingStep(StepBase):
    """Start a video of the desktop (ffmpeg), in the run's ``videos/`` folder; the report
    links it. It runs until ``stop_recording``, ``max_seconds``, or the end of the run."""

    type: Literal["start_recording"]
    label: str | None = None
    max_seconds: float = Field(default=300.0, gt=0, le=1800)
    fps: int = Field(default=10, ge=1, le=30)

    def describe(self) -> str:
        return "start_recording" + (f" {self.label}" if self.label else "")


class StopRecordingStep(StepBase):
    """Stop the running video cleanly (the file is finalized)."""

    type: Literal["stop_recording"]

    def describe(self) -> str:
        return "stop_recording"


Step = Annotated[
    ActionStep
    | AssertStep
    | WaitForStep
    | StoreStep
    | SetStep
    | IfStep
    | ForEachStep
    | RepeatStep
    | RunStep
    | ScreenshotStep
    | LogStep
    | FailStep
    | WriteFileStep
    | RestartAppStep
    | SleepStep
    | StartRecordingStep
    | StopRecordingStep,
    Field(discriminator="type"),
]
STEP_MODELS: dict[str, type[StepBase]] = {
    "action": ActionStep,
    "assert": AssertStep,
    "wait_for": WaitForStep,
    "store": StoreStep,
    "set": SetStep,
    "if": IfStep,
    "for_each": ForEachStep,
    "repeat": RepeatStep,
    "run": RunStep,
    "screenshot": ScreenshotStep,
    "log": LogStep,
    "fail": FailStep,
    "write_file": WriteFileStep,
    "restart_app": RestartAppStep,
    "sleep": SleepStep,
    "start_recording": StartRecordingStep,
    "stop_recording": StopRecordingStep,
}
STEP_TYPES: tuple[str, ...] = tuple(STEP_MODELS)


class AppConfig(BaseModel):
    """How to start the application under test (strings are interpolated at run time)."""

    model_config = _STRICT

    command: list[str] = Field(min_length=1)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    app_name: str | None = None
    log_file: str | None = None
    startup_timeout: float = Field(default=20.0, gt=0, le=120)
    close_timeout: float = Field(default=5.0, gt=0, le=60)
    call_timeout: float = Field(default=3.0, gt=0, le=60)


class OracleConfig(BaseModel):
    """Which oracles run after every step, and their settings."""

    model_config = _STRICT

    enabled: list[OracleName] = Field(default_factory=lambda: list(ORACLES))  # type: ignore[arg-type]
    error_labels: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    log_error_pattern: str = r"\b(ERROR|CRITICAL|FATAL)\b"
    system_log_ident: str | None = None


class Operation(BaseModel):
    """A random-walk operation: steps that leave the app as they found it."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)
    description: str | None = None
    steps: list[Step]


class Script(BaseModel):
    """A whole script (or a library / operations file: the same format)."""

    model_config = _STRICT

    schema_: str | None = Field(default=None, alias="$schema")
    name: str | None = None
    description: str | None = None
    imports: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    variables: dict[str, Any] = Field(default_factory=dict)
    app: AppConfig | None = None
    oracles: OracleConfig | None = None
    blocks: dict[str, list[Step]] = Field(default_factory=dict)
    setup: list[Step] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    teardown: list[Step] = Field(default_factory=list)
    operations: list[Operation] = Field(default_factory=list)
    invariants: list[Step] = Field(default_factory=list)


for _model in (IfStep, ForEachStep, RepeatStep, Operation, Script):
    _model.model_rebuild()
