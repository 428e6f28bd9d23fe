"""The step interpreter: runs step lists against the app, oracles after every leaf step.

Container steps (if, for_each, repeat, run) get a row in the results before their children, so
the report reads top to bottom. A failed step stops its list unless it has
``continue_on_failure``; the failure travels up through its containers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopkit_ui.backends import (
    ActionResult,
    AppNotFoundError,
    ElementVanishedError,
    Expectation,
    Locator,
    UIBackend,
    UIError,
)
from loopkit_ui.scripts.app import AppProcess
from loopkit_ui.scripts.checks import compare, read_property
from loopkit_ui.scripts.findings import Finding
from loopkit_ui.scripts.loader import LoadedScript, load_script
from loopkit_ui.scripts.model import (
    ActionStep,
    AssertStep,
    Check,
    FailStep,
    ForEachStep,
    IfStep,
    LocatorFields,
    LocatorObject,
    LogStep,
    RepeatStep,
    RestartAppStep,
    RunStep,
    ScreenshotStep,
    SetStep,
    SleepStep,
    StartRecordingStep,
    Step,
    StepBase,
    StopRecordingStep,
    StoreStep,
    WaitForStep,
    WriteFileStep,
)
from loopkit_ui.scripts.oracles import OracleSuite
from loopkit_ui.scripts.results import StepResult
from loopkit_ui.scripts.variables import InterpolationError, Scope, interpolate
from loopkit_ui.scripts.video import RunVideos

__all__ = ["Interpreter", "RunState", "StepFailure"]

MAX_RUN_DEPTH = 20
_CONTAINERS = (IfStep, ForEachStep, RepeatStep, RunStep)


class StepFailure(Exception):
    """The step did not do or find what it should; the message says what and why."""


@dataclass
class RunState:
    """What the interpreter shares with the runner for one run."""

    app: AppProcess
    oracles: OracleSuite
    files_dir: Path
    screenshot: Callable[[str], str | None]
    screenshots: str = "steps"
    results: list[StepResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phase: str = "steps"
    videos: RunVideos | None = None


def _locator(fields: LocatorFields, what: str = "target") -> Locator:
    if fields.target is None:
        raise StepFailure(f"this step needs a {what}")
    if isinstance(fields.row, str) or isinstance(fields.column, str):
        raise StepFailure(f"row/column {fields.row!r}/{fields.column!r} are not numbers")
    return Locator(target=fields.target, row=fields.row, column=fields.column, window=fields.window)


def _resolve(step: StepBase, scope: Scope) -> Any:
    """The step with ``${...}`` replaced in its own fields (nested step lists untouched)."""
    nested = {"then", "else", "steps"}
    data = step.model_dump(by_alias=True, exclude_unset=True)
    resolved = {k: (v if k in nested else interpolate(v, scope)) for k, v in data.items()}
    resolved["type"] = data.get("type", getattr(step, "type", None))
    for key in nested & set(data):
        resolved[key] = getattr(step, "else_" if key == "else" else key)
    return type(step).model_validate(resolved)


class Interpreter:
    """Runs steps of one script run (see :class:`RunState`)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    @property
    def backend(self) -> UIBackend:
        backend = self.state.app.backend
        if backend is None or self.state.app.poll() is not None:
            raise StepFailure("the application is not running")
        return backend

    # -- lists and steps -----------------------------------------------------------------

    def run_list(
        self,
        steps: Sequence[Step],
        prefix: str,
        scope: Scope,
        script: LoadedScript,
        depth: int = 0,
        *,
        keep_going: bool = False,
    ) -> bool:
        """Run ``steps``; False when one failed (the rest are skipped unless ``keep_going``)."""
        ok = True
        for i, step in enumerate(steps):
            path = f"{prefix}[{i}]"
            if not ok and not keep_going:
                self._record_skipped(step, path, depth)
                continue
            passed = self.run_step(step, path, scope, script, depth)
            if not passed:
                ok = False if not step.continue_on_failure else ok
        return ok

    def _record_skipped(self, step: StepBase, path: str, depth: int) -> None:
        self.state.results.append(
            StepResult(
                index=len(self.state.results),
                path=path,
                phase=self.state.phase,  # type: ignore[arg-type]
                depth=depth,
                type=str(getattr(step, "type", "?")),
                label=step.summary(),
                status="skipped",
                message="skipped after an earlier failure",
            )
        )

    def run_step(
        self, step: StepBase, path: str, scope: Scope, script: LoadedScript, depth: int
    ) -> bool:
        """Run one step (and its oracles); True when it passed."""
        result = StepResult(
            index=len(self.state.results),
            path=path,
            phase=self.state.phase,  # type: ignore[arg-type]
            depth=depth,
            type=str(getattr(step, "type", "?")),
            label=step.summary(),
        )
        self.state.results.append(result)
        start = time.perf_counter()
        failure: str | None = None
        try:
            if isinstance(step, _CONTAINERS):
                if not self._container(step, path, scope, script, depth):
                    failure = "a step inside failed"
            else:
                resolved = _resolve(step, scope)
                result.label = resolved.summary()
                self._leaf(resolved, result, scope, script)
        except StepFailure as error:
            failure = str(error)
        except (AppNotFoundError, ElementVanishedError) as error:
            failure = f"{type(error).__name__}: {error}"
            if "process_ended" in step.expect_findings and self.state.app.wait(2.0) is not None:
                # The step was meant to end the app (a Quit button): that is its success.
                failure = None
                result.message = "the application ended, as this step expects"
        except (UIError, InterpolationError, OSError, ValueError) as error:
            failure = f"{type(error).__name__}: {error}"
        result.ms = round((time.perf_counter() - start) * 1000, 1)
        if not isinstance(step, _CONTAINERS):
            failure = self._oracles(step, result, path, failure)
        if failure is not None:
            result.status = "failed"
            # The reason first; what the step saw (an action's effect...) after it.
            result.message = f"{failure}\n{result.message}" if result.message else failure
        wants = step.screenshot
        if wants is None:
            wants = (self.state.screenshots == "steps" and depth == 0) or (
                failure is not None and self.state.screenshots != "none"
            )
        if wants and result.screenshot is None and self.state.app.poll() is None:
            result.screenshot = self.state.screenshot(f"{result.index:03d}")
        return failure is None

    def _oracles(
        self, step: StepBase, result: StepResult, path: str, failure: str | None
    ) -> str | None:
        start = time.perf_counter()
        findings = self.state.oracles.check(path)
        result.oracle_ms = round((time.perf_counter() - start) * 1000, 1)
        unexpected = []
        for finding in findings:
            finding.expected = finding.kind in step.expect_findings
            result.findings.append(finding.fingerprint)
            self.state.findings.append(finding)
            if finding.severity == "error" and not finding.expected:
                unexpected.append(finding.summary)
        if unexpected:
            note = "oracle: " + "; ".join(unexpected)
            return f"{failure}\n{note}" if failure else note
        return failure

    # -- containers ----------------------------------------------------------------------

    def _container(
        self, step: StepBase, path: str, scope: Scope, script: LoadedScript, depth: int
    ) -> bool:
        if isinstance(step, IfStep):
            condition = Check.model_validate(
                interpolate(step.condition.model_dump(by_alias=True, exclude_unset=True), scope)
            )
            branch, name = (step.then, "then") if self._holds(condition) else (step.else_, "else")
            return self.run_list(branch, f"{path}.{name}", scope, script, depth + 1)
        if isinstance(step, ForEachStep):
            items = interpolate(step.items, scope)
            if not isinstance(items, list):
                raise StepFailure(f"for_each items {step.items!r} is not a list: {items!r}")
            ok = True
            for i, item in enumerate(items):
                inner = scope.child({step.as_: item})
                ok = self.run_list(step.steps, f"{path}.steps#{i}", inner, script, depth + 1) and ok
                if not ok:
                    break
            return ok
        if isinstance(step, RepeatStep):
            for i in range(step.times):
                inner = scope.child({step.as_: i} if step.as_ else {})
                if not self.run_list(step.steps, f"{path}.steps#{i}", inner, script, depth + 1):
                    return False
            return True
        assert isinstance(step, RunStep)
        return self._run(step, path, scope, script, depth)

    def _run(
        self, step: RunStep, path: str, scope: Scope, script: LoadedScript, depth: int
    ) -> bool:
        if depth >= MAX_RUN_DEPTH:
            raise StepFailure(f"run nested deeper than {MAX_RUN_DEPTH} levels (a loop?)")
        args = interpolate(step.with_, scope)
        if step.block is not None:
            name = interpolate(step.block, scope)
            if name not in script.blocks:
                raise StepFailure(f"unknown block {name!r}; blocks: {', '.join(script.blocks)}")
            inner = scope.child(args)
            return self.run_list(script.blocks[name], f"{path}/{name}", inner, script, depth + 1)
        target = script.resolve(str(interpolate(step.script, scope)))
        sub = script.subscripts.get(target) or load_script(target)
        root = scope
        while root.parent is not None:
            root = root.parent
        inner = root.child({"script_dir": str(sub.path.parent)}, script_level=True)
        for key, value in sub.variables.items():
            inner.set(key, interpolate(value, inner))
        for key, value in args.items():
            inner.set(key, value)
        where = f"{path}/{sub.path.name}:"
        ok = self.run_list(sub.script.setup, where + "setup", inner, sub, depth + 1)
        if ok:
            ok = self.run_list(sub.script.steps, where + "steps", inner, sub, depth + 1)
        teardown = self.run_list(
            sub.script.teardown, where + "teardown", inner, sub, depth + 1, keep_going=True
        )
        return ok and teardown

    def _holds(self, check: Check) -> bool:
        operator, expected = check.operator()
        if "value" in check.model_fields_set:
            actual = check.value
        else:
            actual = read_property(self.backend, _locator(check), check.property or "text")
        return compare(operator, actual, expected)

    # -- leaf steps ----------------------------------------------------------------------

    def _leaf(self, step: StepBase, result: StepResult, scope: Scope, script: LoadedScript) -> None:
        if isinstance(step, ActionStep):
            self._action(step, result)
        elif isinstance(step, AssertStep):
            self._assert(step, result)
        elif isinstance(step, WaitForStep):
            waited = self.backend.wait_for(
                _locator(step), step.condition, value=step.value, timeout=step.timeout
            )
            result.message = f"{waited.condition} after {waited.ms:.0f} ms"
            if not waited.success:
                raise StepFailure(
                    f"{step.target} did not reach {waited.condition} within {step.timeout:g} s "
                    f"(actual: {waited.actual!r})"
                )
        elif isinstance(step, StoreStep):
            value = read_property(self.backend, _locator(step), step.property)
            scope.assign(step.as_, value)
            result.message = f"{step.as_} = {value!r}"
        elif isinstance(step, SetStep):
            scope.assign(step.var, step.value)
            result.message = f"{step.var} = {step.value!r}"
        elif isinstance(step, ScreenshotStep):
            result.screenshot = self._element_screenshot(step, result)
        elif isinstance(step, LogStep):
            result.message = step.message
            self.state.notes.append(step.message)
        elif isinstance(step, FailStep):
            raise StepFailure(step.message)
        elif isinstance(step, WriteFileStep):
            target = Path(step.path)
            target = target if target.is_absolute() else self.state.files_dir / target
            target.parent.mkdir(parents=True, exist_ok=True)
            text = step.content if step.content is not None else json.dumps(step.json_, indent=2)
            target.write_text(text, encoding="utf-8")
            result.message = f"wrote {len(text)} characters to {target}"
        elif isinstance(step, RestartAppStep):
            status = self.state.app.close()
            self.state.app.start(step.args)
            self.state.oracles.attach(self.state.app)
            result.message = f"closed (exit status {status}), started pid {self.state.app.pid}"
        elif isinstance(step, SleepStep):
            time.sleep(step.seconds)
        elif isinstance(step, StartRecordingStep | StopRecordingStep):
            self._video(step, result)
        else:  # pragma: no cover - the loader accepts only the types above
            raise StepFailure(f"no implementation for step type {type(step).__name__}")

    def _video(self, step: StartRecordingStep | StopRecordingStep, result: StepResult) -> None:
        videos = self.state.videos
        if videos is None:
            raise StepFailure("this run records no video (the runner has no recorder)")
        if isinstance(step, StartRecordingStep):
            path = videos.start(
                result.index, step.label, fps=step.fps, max_seconds=step.max_seconds
            )
            result.message = f"recording to {path} (at most {step.max_seconds:g} s)"
            return
        finished = videos.stop()
        result.message = (
            f"{finished.path.name}: {finished.seconds:g} s, {finished.size_bytes} bytes"
            + (" (it had reached its limit)" if finished.ended == "limit" else "")
        )
        if finished.ended == "failed":
            raise StepFailure(f"the recording failed: {finished.detail}")

    def _element_screenshot(self, step: ScreenshotStep, result: StepResult) -> str | None:
        label = step.label or f"{result.index:03d}"
        if step.target is None:
            return self.state.screenshot(label)
        name = f"{result.index:03d}-element.png"
        path = self.state.files_dir.parent / "screenshots" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        self.backend.screenshot(str(path), locator=_locator(step))
        return f"screenshots/{name}"

    def _action(self, step: ActionStep, result: StepResult) -> None:
        backend = self.backend
        loc = _locator(step) if step.target is not None else None
        expect = (
            Expectation(
                appear=step.expect.appear,
                disappear=step.expect.disappear,
                timeout=step.expect.timeout,
            )
            if step.expect
            else None
        )
        name = step.action
        answer: ActionResult
        if name in ("click", "double_click", "right_click"):
            assert loc is not None
            answer = backend.click(
                loc,
                button="right" if name == "right_click" else "left",
                count=2 if name == "double_click" else 1,
                method=step.method,
                expect=expect,
                diff=step.diff,
            )
            expect = None  # the backend waited for it
        elif name == "hover":
            assert loc is not None
            answer = backend.hover(loc)
        elif name == "type_text":
            assert loc is not None and step.text is not None
            answer = backend.type_text(loc, step.text, clear=step.clear, diff=step.diff)
        elif name == "press_keys":
            assert step.keys is not None
            answer = backend.press_keys(step.keys, locator=loc, diff=step.diff)
        elif name == "select_item":
            assert loc is not None and step.item is not None
            answer = backend.select_item(loc, step.item, diff=step.diff)
        elif name == "drag_and_drop":
            assert loc is not None and step.to is not None
            to = step.to if isinstance(step.to, LocatorObject) else LocatorObject(target=step.to)
            answer = backend.drag_and_drop(loc, _locator(to, "drop target"), diff=step.diff)
        else:
            assert loc is not None and step.text is not None
            answer = backend.set_cell(loc, step.text, diff=step.diff)
        result.action = answer.model_dump(exclude_none=True)
        result.message = answer.effect + (f" ({answer.detail})" if answer.detail else "")
        if step.refused:
            # The element must not take the text: the backend's read-back differs from it.
            if answer.success:
                raise StepFailure(
                    f"{name} {answer.id}: the text was taken"
                    + (f" ({answer.detail})" if answer.detail else "")
                    + "; expected it to be refused"
                )
            result.message = "refused as expected" + (
                f" ({answer.detail})" if answer.detail else ""
            )
        elif not answer.success:
            raise StepFailure(
                f"{name} {answer.id}: {answer.effect}"
                + (f" ({answer.detail})" if answer.detail else "")
            )
        if expect is not None:
            self._await(backend, expect)

    def _await(self, backend: UIBackend, expect: Expectation) -> None:
        """The expectation of an action the backend does not wait on itself."""
        deadline = time.monotonic() + expect.timeout
        for target, condition in [(t, "appear") for t in expect.appear] + [
            (t, "disappear") for t in expect.disappear
        ]:
            remaining = max(0.05, deadline - time.monotonic())
            waited = backend.wait_for(Locator(target=target), condition, timeout=remaining)  # type: ignore[arg-type]
            if not waited.success:
                raise StepFailure(
                    f"expected {target} to {condition} within {expect.timeout:g} s; it did not "
                    f"(actual: {waited.actual})"
                )

    def _assert(self, step: AssertStep, result: StepResult) -> None:
        operator, expected = step.operator()
        prop = step.property or "text"
        deadline = time.monotonic() + step.timeout
        while True:
            if "value" in step.model_fields_set:
                actual = step.value
            else:
                actual = read_property(self.backend, _locator(step), prop)
            if compare(operator, actual, expected):
                result.message = f"{prop} = {actual!r}"
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        subject = step.target if step.target is not None else "value"
        raise StepFailure(
            (f"{step.message}: " if step.message else "")
            + f"{subject}.{prop}: expected {operator} {expected!r}, actual {actual!r}"
        )
