"""Graders: each one looks at a case (its runs, their logs, the committed code) and says
passed, failed, or does not apply. A case passes when every grader that applies passes.

Built in (by name): ``criteria`` (every criterion verified, by the runner's evidence check and
replay: verified done), ``checks`` (the card's own UI check scripts, ``checks/<card>/*.json``
beside it, on a fresh app of the run's commit), ``tester`` (the test role's verdict), ``build``
(the run's commit builds) and ``limits`` (rounds, tokens, cost and time within bounds).

Add your own: a class with a ``name`` and ``async def grade(self, case) -> GraderVerdict``
(:class:`Grader`), named in the suite as ``"package.module:ClassName"``, or registered under the
entry point group ``loopkit.evals.graders``.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from loopkit.cards.card import Card
from loopkit.cards.criteria import Criterion
from loopkit.evals.results import GraderVerdict, RunRef
from loopkit.evals.suite import CaseLimits, EvalConfig, SuiteError

__all__ = [
    "BUILT_IN_GRADERS",
    "ENTRY_POINT_GROUP",
    "BuildGrader",
    "CaseRun",
    "ChecksGrader",
    "CriteriaGrader",
    "Grader",
    "LimitsGrader",
    "TesterGrader",
    "make_graders",
    "read_log",
]

ENTRY_POINT_GROUP = "loopkit.evals.graders"
#: Seconds a build or a check run of a grader may take.
GRADER_TIMEOUT = 600.0


def read_log(path: str | Path | None) -> list[dict[str, Any]]:
    """A run log's lines (a line cut by a kill, or no log: nothing for it)."""
    if path is None:
        return []
    lines: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    lines.append(data)
    except OSError:
        return []
    return lines


def _last(lines: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    for line in reversed(lines):
        if line.get("type") == kind and isinstance(line.get("data"), dict):
            data: dict[str, Any] = line["data"]
            return data
    return None


@dataclass
class CaseRun:
    """What a grader sees of a case: the card, the config, the pipeline's runs in order (each
    with its log), the case's folder for the graders' own output, and the committed code."""

    card: Card
    card_path: Path
    checks: list[Path]
    config: EvalConfig
    runs: list[RunRef]
    develop: str
    then: str | None
    folder: Path
    limits: CaseLimits = field(default_factory=CaseLimits)
    cost: float | None = None
    _code: Path | None = field(default=None, repr=False)
    _code_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def criteria(self) -> list[Criterion]:
        return self.card.criteria

    def last(self, role: str) -> RunRef | None:
        """The last run of ``role`` (None: it never ran)."""
        found = [r for r in self.runs if r.role == role]
        return found[-1] if found else None

    def log(self, run: RunRef) -> list[dict[str, Any]]:
        return read_log(run.log_path)

    @property
    def repo(self) -> Path | None:
        for run in reversed(self.runs):
            if run.repo:
                return Path(run.repo)
        return None

    @property
    def committed(self) -> bool:
        """A run of the case made a commit (there is something of its own to grade)."""
        return any(r.commit for r in self.runs)

    async def code(self) -> Path | None:
        """The repository's ``HEAD`` exported once into the case's folder (``code/``): the
        committed work, not the working tree. None: no repository."""
        async with self._code_lock:
            if self._code is None and self.repo is not None and self.repo.is_dir():
                self._code = await asyncio.to_thread(_export_head, self.repo, self.folder / "code")
            return self._code


def _export_head(repo: Path, target: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=repo, capture_output=True, check=True
    ).stdout
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


@runtime_checkable
class Grader(Protocol):
    """Grades one case. ``name`` is the grader's column in the results and the report."""

    name: str

    async def grade(self, case: CaseRun) -> GraderVerdict:
        """The verdict on ``case`` (``passed`` None: it does not apply)."""
        ...


class CriteriaGrader:
    """Every acceptance criterion that is not ``(manual)`` was verified in the last develop
    run (its evidence held and, where the run replays, the replay passed)."""

    name = "criteria"

    async def grade(self, case: CaseRun) -> GraderVerdict:
        run = case.last(case.develop)
        if run is None:
            return GraderVerdict(grader=self.name, passed=False, detail="no develop run")
        result = _last(case.log(run), "result")
        if result is None:
            return GraderVerdict(
                grader=self.name, passed=False, detail="the develop run has no result line"
            )
        statuses = {c.get("id"): c for c in result.get("criteria") or [] if isinstance(c, dict)}
        missing = [
            f"{c.id} {statuses.get(c.id, {}).get('status', 'not checked')}"
            + (f" ({statuses[c.id]['problem']})" if statuses.get(c.id, {}).get("problem") else "")
            for c in case.criteria
            if not c.manual and statuses.get(c.id, {}).get("status") != "verified"
        ]
        manual = [c.id for c in case.criteria if c.manual]
        replay = result.get("replay") if isinstance(result.get("replay"), dict) else None
        problems = list(missing)
        if case.config.settings.replay and result.get("verified_by_replay") is not True:
            why = "; ".join(replay.get("failures") or []) if replay else ""
            problems.append("not verified by replay" + (f": {why}" if why else ""))
        checked = [c.id for c in case.criteria if not c.manual]
        if problems:
            return GraderVerdict(grader=self.name, passed=False, detail="; ".join(problems))
        detail = f"{', '.join(checked) or 'no criterion'} verified" + (
            " by replay" if result.get("verified_by_replay") else ""
        )
        if manual:
            detail += f"; {', '.join(manual)} manual (unverified)"
        return GraderVerdict(grader=self.name, passed=True, detail=detail, report=run.report)


class TesterGrader:
    """The last run of the pipeline's second role (the tester) passed."""

    name = "tester"

    async def grade(self, case: CaseRun) -> GraderVerdict:
        if case.then is None:
            return GraderVerdict(grader=self.name, passed=None, detail="the suite has no tester")
        run = case.last(case.then)
        if run is None:
            developer = case.last(case.develop)
            why = f" (the develop run {developer.state})" if developer is not None else ""
            return GraderVerdict(
                grader=self.name, passed=False, detail=f"the {case.then} role never ran{why}"
            )
        report = _last(case.log(run), "test_report") or {}
        if run.state == "done":
            steps = report.get("steps")
            detail = "passed" + (f" ({steps} steps, {report.get('failed', 0)} failed)"
                                 if steps is not None else "")  # fmt: skip
            return GraderVerdict(grader=self.name, passed=True, detail=detail, report=run.report)
        return GraderVerdict(
            grader=self.name,
            passed=False,
            detail=f"{run.state}: {run.reason or 'no reason given'}",
            report=run.report,
        )


class BuildGrader:
    """The committed code of the case builds (the config's build command, on ``HEAD`` exported
    apart from the run's working tree)."""

    name = "build"

    async def grade(self, case: CaseRun) -> GraderVerdict:
        if not case.committed:
            return GraderVerdict(grader=self.name, passed=False, detail="no run committed")
        code = await case.code()
        if code is None:
            return GraderVerdict(grader=self.name, passed=False, detail="no repository")
        command, cwd, env = _build_command(case, code)
        done = await _run(command, cwd, env)
        tail = _tail(done[1])
        if done[0] == 0:
            return GraderVerdict(grader=self.name, passed=True, detail=tail or "built")
        return GraderVerdict(
            grader=self.name, passed=False, detail=f"exit {done[0]}: {tail or 'no output'}"
        )


class ChecksGrader:
    """The card's own check scripts (``checks/<card>/*.json`` beside the card) pass on a fresh
    app started from the committed code, run by ``python -m loopkit_ui.scripts run`` in a
    headless desktop of its own. A script starts the app from ``${app_dir}`` (the exported
    code)."""

    name = "checks"

    async def grade(self, case: CaseRun) -> GraderVerdict:
        if not case.checks:
            return GraderVerdict(
                grader=self.name,
                passed=None,
                detail=f"the card has no check scripts ({case.card_path.parent.name}/checks/"
                f"{case.card_path.stem}/*.json)",
            )
        if not case.committed:
            return GraderVerdict(grader=self.name, passed=False, detail="no run committed")
        code = await case.code()
        if code is None:
            return GraderVerdict(grader=self.name, passed=False, detail="no repository")
        out = case.folder / "checks"
        command = [
            sys.executable, "-m", "loopkit_ui.scripts", "run", "--headless", "--out", str(out),
            "--screenshots", "failures", "--no-gif", "--no-system-log",
            "--var", f"app_dir={code}", *map(str, case.checks),
        ]  # fmt: skip
        status, output = await _run(command, case.folder, dict(os.environ))
        lines = [line for line in output.splitlines() if line.strip()]
        verdicts = [line for line in lines if re.match(r"(PASSED|FAILED|ERROR)\s", line)]
        reports = [m.group(1) for line in verdicts if (m := re.search(r"\)\s+(\S+\.html)$", line))]
        failed = [line.strip() for line in lines if line.strip().startswith("failed ")]
        summary = next((line for line in reversed(lines) if " passed; database " in line), "")
        detail = summary.split("; database")[0] if summary else _tail(output)
        if status != 0 and failed:
            detail += ": " + "; ".join(failed[:3])
        return GraderVerdict(
            grader=self.name,
            passed=status == 0,
            detail=detail or f"exit {status}",
            report=reports[0] if reports else None,
        )


class LimitsGrader:
    """The case stayed within the suite's ``[limits]`` (rounds, tokens, cost, seconds of all
    its runs), and no run ended on one of its config's own limits."""

    name = "limits"

    async def grade(self, case: CaseRun) -> GraderVerdict:
        limits = case.limits
        rounds = sum(r.rounds for r in case.runs)
        tokens = sum(r.input_tokens + r.output_tokens for r in case.runs)
        seconds = sum(r.seconds for r in case.runs)
        over: list[str] = []
        if limits.max_rounds is not None and rounds > limits.max_rounds:
            over.append(f"{rounds} rounds > {limits.max_rounds}")
        if limits.max_tokens is not None and tokens > limits.max_tokens:
            over.append(f"{tokens:,} tokens > {limits.max_tokens:,}")
        if limits.max_cost is not None:
            if case.cost is None:
                over.append("cost unknown (no price for the model) against max_cost")
            elif case.cost > limits.max_cost:
                over.append(f"${case.cost:.4f} > ${limits.max_cost:.4f}")
        if limits.max_seconds is not None and seconds > limits.max_seconds:
            over.append(f"{seconds:.1f} s > {limits.max_seconds:.1f} s")
        settings = case.config.settings
        for run in case.runs:
            reason = (run.reason or "").lower()
            if run.rounds >= settings.max_rounds and run.state != "done":
                over.append(f"the {run.role} run used all {settings.max_rounds} rounds")
            elif "budget" in reason and "token" in reason:
                over.append(f"the {run.role} run spent its token budget")
        detail = f"{rounds} rounds, {tokens:,} tokens, {seconds:.1f} s" + (
            f", ${case.cost:.4f}" if case.cost else ""
        )
        if over:
            return GraderVerdict(grader=self.name, passed=False, detail="; ".join(over))
        return GraderVerdict(grader=self.name, passed=True, detail=detail)


BUILT_IN_GRADERS: dict[str, type] = {
    g.name: g for g in (CriteriaGrader, ChecksGrader, TesterGrader, BuildGrader, LimitsGrader)
}


def make_graders(names: list[str]) -> list[Grader]:
    """The graders named: built-in names, entry points of :data:`ENTRY_POINT_GROUP`, or
    ``module:Class``. :class:`SuiteError` for a name that is none of them."""
    found: list[Grader] = []
    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name in names:
        if name in BUILT_IN_GRADERS:
            cls: Any = BUILT_IN_GRADERS[name]
        elif name in plugins:
            cls = plugins[name].load()
        elif ":" in name:
            module, _, attribute = name.partition(":")
            try:
                cls = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as e:
                raise SuiteError(f"grader {name!r} cannot be loaded: {e}") from None
        else:
            known = ", ".join([*BUILT_IN_GRADERS, *plugins])
            raise SuiteError(
                f"unknown grader {name!r}; the graders are: {known} (or 'module:Class')"
            )
        grader = cls() if isinstance(cls, type) else cls
        if not isinstance(grader, Grader):
            raise SuiteError(
                f"grader {name!r} is not a grader: it needs a name and an async grade(case)"
            )
        found.append(grader)
    return found


def _build_command(case: CaseRun, code: Path) -> tuple[list[str], Path, dict[str, str]]:
    from loopkit.demo.tool_provider import tools_config

    app_folder = case.config.settings.app_source.name
    _module, settings = tools_config(
        case.config.settings, root=code, app_folder=app_folder, run_dir=case.folder
    )
    env = {**os.environ, **settings.build_env}
    return list(settings.build_command), code / settings.build_cwd, env


async def _run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``command``; its exit status and its output (stdout and stderr together)."""
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), GRADER_TIMEOUT)
    except (TimeoutError, asyncio.CancelledError):
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode("utf-8", "replace")


def _tail(text: str, lines: int = 2) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(kept[-lines:])[:400]
