"""The tester's tools: steps, findings, the HTML report and the regression script of a test run.

An agent that tests an app live records what it checked (``record_step``) and every defect it saw
(``record_finding``), writes a JSON regression script that the script runner runs once
(``write_regression_script``) and ends with an HTML report (``write_test_report``). Everything
goes through the script runner's own code, so an agent's run and a script's run are the same kind
of thing:

- a finding is a :class:`~loopkit_ui.scripts.findings.Finding` with the runner's fingerprint
  (kind, normalised title, first stack line read from the evidence by the oracles' own
  :func:`~loopkit_ui.scripts.findings.first_stack_line`), stored in the same SQLite database by
  :class:`~loopkit_ui.scripts.store.ResultStore`: one defect seen by a script and by the agent is
  one finding, counted twice;
- the report is :func:`~loopkit_ui.scripts.report.write_report` over a
  :class:`~loopkit_ui.scripts.results.RunResult` of the agent's run (steps, screenshots,
  findings);
- a regression script is validated by the runner's schema before it is written, and run by the
  runner's command line (``python -m loopkit_ui.scripts run``) in a child process with an
  allowlisted environment; the tool answers the runner's verdict.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field

from loopkit.abstractions import FunctionTool, Tool, ToolError
from loopkit.errors import LoopkitError
from loopkit.run_context import current_run
from loopkit_ui.backends import TreeSnapshot
from loopkit_ui.regression_script import write_script
from loopkit_ui.scripts.findings import Finding, crash_signs, first_stack_line, normalise_stack_line
from loopkit_ui.scripts.oracles import WindowContent, window_content, window_finding
from loopkit_ui.scripts.report import write_gif, write_report
from loopkit_ui.scripts.results import CriterionResult, RunResult, StepResult
from loopkit_ui.scripts.run_once import run_script_once
from loopkit_ui.scripts.store import ResultStore
from loopkit_ui.tester_report import crop_to_windows, subagent_notes

__all__ = ["FINDING_KINDS", "TESTER_TOOL_NAMES", "TesterConfig", "TesterTools"]

#: The kinds an agent may file: the oracles' verdicts (so a crash the agent sees and a crash a
#: script sees share a fingerprint), plus ``defect`` (wrong behaviour) and ``missing_id``.
FindingKind = Literal[
    "crash_dialog",
    "process_ended",
    "not_responding",
    "new_window",
    "error_label",
    "app_log_error",
    "defect",
    "missing_id",
]
FINDING_KINDS: tuple[str, ...] = get_args(FindingKind)
#: The names of the tools, in the order they are offered.
TESTER_TOOL_NAMES = (
    "record_step",
    "record_finding",
    "write_regression_script",
    "write_test_report",
)
#: The verdicts :meth:`TesterTools.end` writes.
EndStatus = Literal["passed", "failed", "error", "cancelled"]
_MAX_EVIDENCE = 20_000
#: The run's record so far, in the report folder (see TesterTools.record_path).
RECORD_FILE = "record.json"


class TesterConfig(BaseModel):
    """Where one test run writes, and how its regression scripts run."""

    name: str = Field(description="the run's name in the report and the database (the card)")
    report_dir: Path = Field(description="report.html and screenshots/ of the agent's run")
    database: Path = Field(description="the findings database, shared with the script runner")
    scripts_dir: Path = Field(description="where regression scripts are written")
    runner_out: Path = Field(description="the script runner's output folder (runs/RUN_ID/)")
    ui_output_dirs: list[Path] = Field(
        default_factory=list, description="the UI server's output folders (screenshots, trees)"
    )
    default_app: dict[str, Any] | None = Field(
        default=None, description="the 'app' section given to a script that names none"
    )
    default_oracles: dict[str, Any] | None = Field(
        default=None, description="the 'oracles' section given to a script that names none"
    )
    runner_timeout_s: float = Field(default=300, gt=0)
    env: dict[str, str] = Field(
        default_factory=dict, description="added to the runner's environment (the desktop's)"
    )
    env_passthrough: list[str] = Field(
        default_factory=list, description="variables the runner inherits beyond the allowlist"
    )
    run_log: Path | None = Field(
        default=None,
        description="the agent run's log (JSON lines): its subagent runs go in the report",
    )
    criteria: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the card's acceptance criteria ({id, text, manual}): steps name the ones "
        "they check (record_step's criterion), the report lists each with its evidence",
    )


class TesterTools:
    """The tester's four tools over one agent test run; a :class:`loopkit.cards.ToolSource`."""

    def __init__(self, config: TesterConfig) -> None:
        self.config = config
        self.store = ResultStore(config.database)
        started = datetime.now(UTC)
        slug = re.sub(r"[^a-z0-9]+", "-", config.name.lower()).strip("-")[:40] or "test"
        self.result = RunResult(
            run_id=f"{started:%Y%m%d-%H%M%S}-agent-{slug}-{secrets.token_hex(3)}",
            script=f"agent test run: {config.name}",
            name=config.name,
            started=started.isoformat(timespec="seconds"),
            run_dir=str(config.report_dir.resolve()),
            status="running",  # a row from the start; its verdict when the run ends
            criteria=[
                CriterionResult(
                    id=str(c["id"]),
                    text=str(c["text"]),
                    manual=bool(c.get("manual", False)),
                    status="unverified" if c.get("manual") else "unchecked",
                )
                for c in config.criteria
            ],
        )
        #: The runner's verdict on each regression script, in order.
        self.regressions: list[dict[str, Any]] = []
        #: The run's real verdict is in (:meth:`end`): a later stop or exit changes nothing.
        self.ended = False
        self._load_record()
        self._lock = threading.Lock()
        self._clock = time.perf_counter()
        self._last_step = self._clock
        self.tools: list[Tool] = [
            FunctionTool(getattr(self, name), name=name, description=_DESCRIPTIONS[name])
            for name in TESTER_TOOL_NAMES
        ]

    @property
    def record_path(self) -> Path:
        """The run's record so far (steps, findings, regression verdicts), rewritten after
        each tool call: a durable run resumed in a new process takes it up, since the calls it
        replays from their checkpoints do not run again."""
        return self.config.report_dir / RECORD_FILE

    def _load_record(self) -> None:
        try:
            data = json.loads(self.record_path.read_text("utf-8"))
            result = RunResult.model_validate(data["result"])
            regressions = list(data["regressions"])
            ended = bool(data.get("ended", False))
        except FileNotFoundError:
            return
        except (ValueError, KeyError, TypeError) as error:
            raise LoopkitError(
                f"{self.record_path}: not a test run's record ({error}); move it away to start "
                "the run's record afresh"
            ) from None
        if not ended and result.report is None:
            # A durable run taken up again: what its last process said when it stopped
            # (cancelled, failed before its report) was no verdict; it runs again.
            result.status, result.error = "running", None
        self.result, self.regressions, self.ended = result, regressions, ended

    def _save_record(self) -> None:
        """Called with the lock held, after every change of the record."""
        self.config.report_dir.mkdir(parents=True, exist_ok=True)
        data = {
            "result": self.result.model_dump(mode="json"),
            "regressions": self.regressions,
            "ended": self.ended,
        }
        temporary = self.record_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        os.replace(temporary, self.record_path)  # whole or not at all, also when killed

    @property
    def report_path(self) -> Path | None:
        """The HTML report, once write_test_report wrote it."""
        return Path(self.result.report) if self.result.report else None

    async def __aenter__(self) -> TesterTools:
        # The run is a row of the findings database from its start (status running), and its
        # record is kept from then on: a durable run resumed in a new process is the same row.
        await asyncio.to_thread(self._store_locked)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        """The tools close: a run still ``running`` (no report) gets a verdict now:
        ``cancelled``, ``error`` (an exception ended it), else ``failed`` (it ended before its
        report); :meth:`end` says better once the run's RESULT is known."""
        with self._lock:
            if self.result.status != "running" or self.ended:
                return
            if exc_type is not None and (
                issubclass(exc_type, asyncio.CancelledError) or _is_cancellation(exc_type)
            ):
                self.result.status, why = "cancelled", "the run was cancelled"
            elif exc_type is not None:
                self.result.status, why = "error", f"{exc_type.__name__}: {exc}"
            else:
                self.result.status, why = "failed", "the run ended before its report"
            self.result.error = why
            self._store_run()
            self._save_record()

    def finish(self, passed: bool, reason: str | None = None) -> None:
        """The run's real verdict from its RESULT line, once it ended: ``passed``, or
        ``failed`` with ``reason`` (see :meth:`end`)."""
        self.end("passed" if passed else "failed", None if passed else reason or "the test failed")

    def end(self, status: EndStatus, reason: str | None = None) -> None:
        """The run's real verdict, once it ended: ``passed``, ``failed`` (its RESULT line),
        ``error`` (it could not run to its end) or ``cancelled``, with ``reason``. The row and
        the record say so (a report already written keeps its path); final, also when the run
        is taken up again later (a durable run whose end is replayed)."""
        with self._lock:
            self.result.status = status
            self.result.error = None if status == "passed" else (reason or status)
            self.ended = True
            self._store_run()
            self._save_record()

    def interrupted(self, reason: str) -> None:
        """The run stopped and can be taken up again (a durable run): no verdict; the row says
        ``running`` with ``reason`` until the resumed run ends."""
        with self._lock:
            if self.ended:
                return
            if self.result.report is None:
                self.result.status = "running"
            self.result.error = reason
            self._store_run()
            self._save_record()

    def _store_locked(self) -> None:
        with self._lock:
            self._store_run()
            self._save_record()

    # ------------------------------------------------------------------ steps

    def record_step(
        self,
        description: Annotated[str, "what was done and checked, e.g. 'No keeps the row'"],
        passed: Annotated[bool, "whether what was read back is what was expected"],
        evidence: Annotated[str, "what the app answered (the values read back)"] = "",
        screenshot: Annotated[
            str, "a path ui_screenshot answered, or 'latest' for the newest one, for the report"
        ] = "",
        criterion: Annotated[
            str, "the acceptance criterion (or criteria, 'C1, C3') this step checks, if any"
        ] = "",
    ) -> str:
        """Record one checked step of the test for the report."""
        description = _one_line("description", description, 300)
        checks = self._criteria_of(criterion)
        shot = self._copy_screenshot(screenshot) if screenshot else None
        with self._lock:
            now = time.perf_counter()
            # A step's time: since the step before it (what checking it took, tools included).
            elapsed, self._last_step = (now - self._last_step) * 1000, now
            index = len(self.result.steps)
            self.result.steps.append(
                StepResult(
                    index=index,
                    path=f"steps[{index}]",
                    phase="steps",
                    type="check",
                    label=description,
                    status="passed" if passed else "failed",
                    message=evidence[:_MAX_EVIDENCE],
                    screenshot=shot,
                    ms=round(elapsed, 1),
                )
            )
            if shot is not None:
                self.result.screenshots.append(shot)
            for item in checks:
                item.steps.append(index)
                if item.status != "failed":  # one failed check fails the criterion
                    item.status = "passed" if passed else "failed"
                item.screenshot = shot or item.screenshot
            self._save_record()
        verdict = "passed" if passed else "FAILED"
        of = f" [{', '.join(c.id for c in checks)}]" if checks else ""
        return f"step {index + 1} recorded ({verdict}){of}: {description}"

    def _criteria_of(self, given: str) -> list[CriterionResult]:
        """The criteria named in ``given`` ("C1" or "C1, C3"); a ToolError for an unknown one."""
        ids = [part.strip().upper() for part in re.split(r"[,\s]+", given) if part.strip()]
        by_id = {c.id: c for c in self.result.criteria}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            known = ", ".join(by_id) or "none (no criteria were given to this run)"
            raise ToolError(f"criterion {', '.join(unknown)}: not a criterion here ({known})")
        return [by_id[i] for i in dict.fromkeys(ids)]

    def _copy_screenshot(self, given: str) -> str:
        path = self._ui_file(given, ".png", "screenshot")
        folder = self.config.report_dir / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{len(self.result.steps) + 1:03d}-{path.name}"
        shutil.copyfile(path, target, follow_symlinks=False)
        crop_to_windows(target)
        return f"screenshots/{target.name}"

    # ------------------------------------------------------------------ findings

    def record_finding(
        self,
        kind: Annotated[
            FindingKind,
            "crash_dialog for an unhandled-exception dialog; defect for wrong behaviour; "
            "missing_id for a control without an id; the other oracle kinds as the runner uses "
            "them",
        ],
        summary: Annotated[str, "one sentence: what is wrong, and after which step"],
        title: Annotated[
            str, "a short name of the defect (a window's title is taken from its tree)"
        ] = "",
        evidence: Annotated[str, "the values you read back, the texts you saw"] = "",
        tree: Annotated[
            str,
            "a window's tree as ui_tree(window=..., format='json') wrote it (its path, or "
            "'latest'): its texts and buttons are read as the script runner reads a new window",
        ] = "",
    ) -> str:
        """File a finding in the findings database shared with the script runner."""
        summary = _one_line("summary", summary, 500)
        step = self.result.steps[-1].path if self.result.steps else None
        if tree:
            content = self._window(tree)
            # The oracles' own function: a crash the agent files and one a script's oracle
            # files are the same Finding, with the same fingerprint.
            finding = window_finding("agent", title.strip() or content.title, content, step or "")
            if kind == "crash_dialog" and finding.kind != "crash_dialog":
                raise ToolError(
                    f"record_finding: the window {content.title!r} in {tree!r} shows no sign of "
                    "a crash (no exception type, stack-trace line, or continue and quit buttons)"
                )
            finding = finding.model_copy(
                update={"kind": kind, "summary": summary, "detail": f"{finding.detail}\n{evidence}"}
            )
        else:
            if kind == "crash_dialog" and not crash_signs([evidence], []).is_crash:
                raise ToolError(
                    "record_finding: kind crash_dialog needs the dialog: its tree (ui_tree with "
                    "window=<the dialog's id> and format='json', then tree='latest') or its text "
                    "as evidence"
                )
            finding = Finding(
                kind=kind,
                oracle="agent",
                title=_one_line("title", title, 200),
                summary=summary,
                detail=evidence[:_MAX_EVIDENCE],
                stack_line=first_stack_line([evidence]) if evidence else None,
                step=step,
            )
        with self._lock:
            self.result.findings.append(finding)
            if self.result.steps:
                self.result.steps[-1].findings.append(finding.fingerprint)
            self._store_run()
            self._save_record()
        count = next(
            (r["count"] for r in self.store.findings() if r["fingerprint"] == finding.fingerprint),
            1,
        )
        stack = normalise_stack_line(finding.stack_line)
        where = f", first stack line {stack!r}" if stack else ""
        return (
            f"finding {finding.fingerprint} filed ({finding.kind}: {finding.title!r}{where}); "
            f"seen in {count} run(s) in the findings database"
        )

    def _ui_file(self, given: str, suffix: str, what: str) -> Path:
        """A file the UI server wrote in this run: its path, or ``latest`` for the newest."""
        allowed = [d.resolve() for d in self.config.ui_output_dirs]
        if given == "latest":
            # The newest file of its kind (a transcript cannot know its name).
            files = [p for d in allowed if d.is_dir() for p in d.glob(f"*{suffix}") if p.is_file()]
            if not files:
                raise ToolError(f"{what} 'latest': there is none in this run yet")
            return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name))
        path = Path(given)
        if (
            not path.is_absolute()
            or path.suffix != suffix
            or path.is_symlink()
            or not path.is_file()
            or path.resolve().parent not in allowed
        ):
            raise ToolError(
                f"{what} {given!r}: expected the path of a {suffix} file the UI server answered "
                "in this run, or 'latest'"
            )
        return path

    def _window(self, given: str) -> WindowContent:
        path = self._ui_file(given, ".json", "tree")
        try:
            snapshot = TreeSnapshot.model_validate_json(path.read_bytes())
        except ValueError as error:
            raise ToolError(f"tree {given!r}: not a tree ui_tree wrote ({error})") from None
        content = window_content(snapshot.nodes, snapshot.nodes[0].key) if snapshot.nodes else None
        if content is None:
            raise ToolError(f"tree {given!r}: the tree is empty")
        return content

    def _store_run(self) -> None:
        self.result.finished = datetime.now(UTC).isoformat(timespec="seconds")
        self.store.record(self.result)  # idempotent per run: a finding counts once a run

    # ------------------------------------------------------------------ regression scripts

    async def write_regression_script(
        self,
        name: Annotated[str, "file name without .json: lower case, digits, - and _"],
        script: Annotated[
            dict[str, Any] | str,
            "the script (the runner's JSON format: name, description, steps of type action, "
            "assert, ...), as an object or its JSON text; the app section is added when it "
            "names none",
        ],
    ) -> str:
        """Validate, write and run once a regression script; answers the runner's verdict."""
        path = write_script(
            self.config.scripts_dir,
            name,
            script,
            default_app=self.config.default_app,
            default_oracles=self.config.default_oracles,
        )
        verdict = await self._run_script(path)
        with self._lock:
            self.regressions.append(verdict)
            self.result.notes.append(
                f"regression script {path}: the runner says {verdict['status']} "
                f"({verdict['summary']}); its report: {verdict['report']}"
            )
            self._save_record()
        return (
            f"wrote {path}; the script runner ran it once: {verdict['status'].upper()} "
            f"({verdict['summary']}); report {verdict['report']}"
            + (f"\n{verdict['details']}" if verdict["details"] else "")
        )

    async def _run_script(self, path: Path) -> dict[str, Any]:
        return await run_script_once(
            path,
            out=self.config.runner_out,
            database=self.config.database,
            env=self.config.env,
            env_passthrough=self.config.env_passthrough,
            timeout_s=self.config.runner_timeout_s,
        )

    # ------------------------------------------------------------------ the report

    def write_test_report(
        self,
        verdict: Annotated[Literal["passed", "failed"], "the test's verdict"],
        summary: Annotated[str, "two or three sentences: what was tested and what was found"],
    ) -> str:
        """Write the run's HTML report; answers its path (put it beside the RESULT line)."""
        summary = summary.strip()
        if not summary:
            raise ToolError("summary: expected two or three sentences, got nothing")
        with self._lock:
            if not self.result.steps:
                raise ToolError(
                    "write_test_report: no step recorded; record every check with record_step first"
                )
            if not self.regressions:
                raise ToolError(
                    "write_test_report: no regression script was run; write one with "
                    "write_regression_script first"
                )
            unchecked = [c.id for c in self.result.criteria if c.status == "unchecked"]
            if verdict == "passed" and unchecked:
                raise ToolError(
                    f"write_test_report: {', '.join(unchecked)} not checked: a passed test "
                    "checks every criterion; record_step(criterion=...) for each check"
                )
            self.result.status = verdict
            self.result.notes.insert(0, f"verdict: {verdict}. {summary}")
            if self.config.run_log is not None:
                self.result.notes.extend(subagent_notes(self.config.run_log))
            self.config.report_dir.mkdir(parents=True, exist_ok=True)
            report = self.config.report_dir / "report.html"
            self.result.report = str(report.resolve())
            self.result.ms = round((time.perf_counter() - self._clock) * 1000, 1)
            shots = [self.config.report_dir / s for s in self.result.screenshots]
            if shots:
                gif = write_gif(shots, self.config.report_dir / "run.gif")
                self.result.gif = str(gif.resolve())
            self._store_run()
            self._save_record()
            write_report(self.result, report)
        failed = [s.label for s in self.result.steps if s.status == "failed"]
        run = current_run()
        if run is not None:
            # A line of the run log: front-ends find the report without parsing the answer.
            run.emit(
                "test_report",
                path=str(report.resolve()),
                verdict=verdict,
                steps=len(self.result.steps),
                failed=len(failed),
                findings=[f.fingerprint for f in self.result.unique_findings()],
            )
        return (
            f"report written: {report.resolve()} ({len(self.result.steps)} steps, "
            f"{len(failed)} failed, {len(self.result.unique_findings())} finding(s), "
            f"{len(self.regressions)} regression script(s))"
        )


def _is_cancellation(kind: type[BaseException]) -> bool:
    """A durable engine's cancellation (DBOS's ``DBOSWorkflowCancelledError``, raised when the
    run was cancelled in its database), known by name: the tools do not import the engine."""
    return any(k.__name__ == "DBOSWorkflowCancelledError" for k in kind.__mro__)


def _one_line(what: str, text: str, limit: int) -> str:
    text = " ".join(text.split())
    if not text:
        raise ToolError(f"{what}: expected a short text, got nothing")
    return text if len(text) <= limit else text[: limit - 3] + "..."


_DESCRIPTIONS = {
    "record_step": (
        "Records one step of your test for the report: what you did and checked, whether what "
        "you read back was what you expected, the values as evidence, and optionally a "
        "ui_screenshot path. Record every check, passed or failed."
    ),
    "record_finding": (
        "Files a finding in the findings database the script runner uses (one defect seen by a "
        "script and by you is one finding, counted twice). File one for EVERY application "
        "defect you see, even when the card's test passes. For a crash dialog: "
        "ui_tree(window=<the dialog's id>, format='json'), then record_finding(kind="
        "'crash_dialog', tree='latest', summary=...): the dialog is read exactly as the script "
        "runner reads it (title, exception type, first stack-trace line). Answers the "
        "fingerprint and how many runs saw it."
    ),
    "write_regression_script": (
        "Writes a JSON regression script for what must run again, in the script runner's "
        "format (validated by its schema; every problem is named), and runs it ONCE with the "
        "script runner, which starts its own copy of the app: call stop_app first. Answers the "
        "runner's verdict (PASSED / FAILED, steps, findings) and its report. The app section is "
        "added when the script names none."
    ),
    "write_test_report": (
        "Writes the HTML report of this test run (every recorded step with its screenshot, "
        "every finding, the regression runs) and answers its path. Call it last, after "
        "write_regression_script; then end with the report's path and the RESULT line."
    ),
}
