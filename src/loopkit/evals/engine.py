"""Running an eval: every case (card × config × repeat) through the develop → test pipeline on
the durable queue, graded as it ends, with a live line and a budget.

Each case runs on a copy of its card (``OUT/cases/<config>/<card>/<repeat>/<card>.md``: the card
states of the cases never mix, and the queue's one-run-per-card rule holds per case) as a
pipeline whose first run has an id derived from the eval's id and the case: queuing it again is
a no-op. So a killed eval started again with the same ``--out`` queues nothing twice, follows the
runs where they are, and grades what ended meanwhile; workers anywhere on the database (``python
-m loopkit.worker``) share the cases, and ``--workers K`` starts K local ones.

The eval's results (``OUT/eval.json``) are written again each time a case ends; the HTML report
and the JUnit XML at the end (and on a stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.cards.card import Card, CardState
from loopkit.evals.graders import CaseRun, Grader, make_graders, read_log
from loopkit.evals.pricing import Price, price_for
from loopkit.evals.results import (
    CardInfo,
    CaseResult,
    ConfigInfo,
    EvalResult,
    GraderVerdict,
    RunRef,
)
from loopkit.evals.suite import EvalConfig, EvalSuite, SuiteError

if TYPE_CHECKING:
    from loopkit.cards.durable import CardRunRequest
    from loopkit.durable.runtime import DurableRuntime

__all__ = ["RESULTS_FILE", "EvalRun", "case_run_id", "plan_eval"]

#: In the eval's folder.
RESULTS_FILE = "eval.json"
CASES_FOLDER = "cases"
RUNS_FOLDER = "runs"
#: Seconds between two looks at the database.
POLL_SECONDS = 0.5
#: At most this many cases are graded at once (a check run starts an app of its own).
GRADING_AT_ONCE = 2


def case_run_id(eval_id: str, key: str) -> str:
    """The id of a case's first run: the same each time the eval is started."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"loopkit-eval:{eval_id}:{key}").hex


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _settings(config: EvalConfig, out: Path, database: str) -> EvalConfig:
    """The config as the eval runs it: runs and database in the eval's folder."""
    settings = config.settings.model_copy(
        update={"runs_dir": (out / RUNS_FOLDER).resolve(), "database_url": database}
    )
    return EvalConfig(name=config.name, settings=settings, path=config.path)


def _check_case_inputs(suite: EvalSuite, configs: list[EvalConfig]) -> None:
    """Every role, model and transcript of the eval exists before anything is queued."""
    from loopkit.cards.config import ConfigError
    from loopkit.cards.roles import RoleError
    from loopkit.demo.pipeline_rounds import pipeline_transcript
    from loopkit.demo.role_tools import find_role
    from loopkit.demo.run import check_model
    from loopkit.errors import CardError

    for config in configs:
        try:
            find_role(config.settings, suite.develop)
            if suite.then is not None:
                find_role(config.settings, suite.then)
            if not config.settings.scripted:
                continue
            for card in suite.cards:
                first = config.transcript_for(card.path)
                settings = config.settings.model_copy(update={"transcript": first})
                check_model(settings, card.path, suite.develop)
                if suite.then is not None:
                    then = pipeline_transcript(settings, card.path, suite.then, 1)
                    if then is not None and not then.is_file():
                        raise SuiteError(f"no transcript {then} for the {suite.then} role")
        except (ConfigError, RoleError, CardError) as e:
            raise SuiteError(f"config {config.name!r}: {e}") from None


def plan_eval(suite: EvalSuite, out: Path, database: str, max_cost: float | None) -> EvalResult:
    """A new eval's results with every case queued (nothing started yet)."""
    eval_id = uuid.uuid4().hex
    prices = {c.name: price_for(c.settings.model) for c in suite.configs}
    cases = []
    for config in suite.configs:
        for card in suite.cards:
            for repeat in range(1, suite.repeat + 1):
                key = f"{config.name}/{card.name}/{repeat}"
                copy = out / CASES_FOLDER / config.name / card.name / str(repeat) / card.path.name
                cases.append(
                    CaseResult(
                        key=key, card=card.name, config=config.name, repeat=repeat,
                        card_path=str(copy.resolve()), first_run=case_run_id(eval_id, key),
                    )
                )  # fmt: skip
    return EvalResult(
        eval_id=eval_id,
        suite=suite.name,
        started_at=_now(),
        database=database,
        repeat=suite.repeat,
        develop=suite.develop,
        then=suite.then,
        round_trips=suite.round_trips,
        graders=list(suite.graders),
        max_cost=max_cost,
        configs=[
            ConfigInfo(
                name=c.name,
                model=c.settings.model,
                path=str(c.path) if c.path else None,
                transcript=str(c.settings.transcript) if c.settings.transcript else None,
                price=prices[c.name],
            )
            for c in suite.configs
        ],
        cards=[
            CardInfo(
                name=c.name, title=c.card.title, path=str(c.path), checks=[str(p) for p in c.checks]
            )
            for c in suite.cards
        ],
        cases=cases,
    )


def _same_plan(old: EvalResult, new: EvalResult) -> str | None:
    """Why ``old`` (found in the folder) is not the eval asked for now (None: it is)."""
    if [c.key for c in old.cases] != [c.key for c in new.cases]:
        return "its cards, configs or repeats differ"
    if [c.model for c in old.configs] != [c.model for c in new.configs]:
        return "its configs' models differ"
    if (old.develop, old.then, old.round_trips) != (new.develop, new.then, new.round_trips):
        return "its roles differ"
    return None


class EvalRun:
    """One eval in ``out`` (see the module docstring). ``on_progress`` is called with the
    results after every look at the database (the live line)."""

    def __init__(
        self,
        suite: EvalSuite,
        out: Path,
        *,
        database: str | None = None,
        max_cost: float | None = None,
        workers: int = 0,
        graders: list[Grader] | None = None,
        on_progress: Callable[[EvalResult, dict[str, int]], None] | None = None,
        on_case: Callable[[CaseResult], None] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        from loopkit.durable.runtime import database_url

        self.suite = suite
        self.out = out.resolve()
        self.path = self.out / RESULTS_FILE
        default = self.out / RUNS_FOLDER / "loopkit.sqlite"
        url = database_url(database or "", default=default) if database else None
        self.max_cost = max_cost
        self.workers = workers
        self.graders = graders if graders is not None else make_graders(suite.graders)
        self.on_progress = on_progress
        self.on_case = on_case
        self.on_note = on_note or print
        self.result = self._open(url or database_url(None, default=default))
        self.configs = {c.name: _settings(c, self.out, self.result.database) for c in suite.configs}
        self.cards = {c.name: c for c in suite.cards}
        self.prices: dict[str, Price] = {c.name: c.price for c in self.result.configs}
        self._ended_runs: dict[str, RunRef] = {}
        #: An ended run's successor in its pipeline (None: the pipeline ended with it).
        self._next: dict[str, str | None] = {}
        self._grading: dict[str, asyncio.Task[None]] = {}
        self._stop_reason: str | None = None
        self.counts: dict[str, int] = {}

    def _open(self, database: str) -> EvalResult:
        planned = plan_eval(self.suite, self.out, database, self.max_cost)
        if not self.path.exists():
            return planned
        try:
            found = EvalResult.load(self.path)
        except ValueError as e:
            raise SuiteError(f"--out {self.out}: {e}") from None
        why = _same_plan(found, planned)
        if why is not None:
            raise SuiteError(
                f"--out {self.out} holds another eval ({why}); give another --out to start a "
                "new eval, or the same suite and options to resume that one"
            )
        found.max_cost = self.max_cost if self.max_cost is not None else found.max_cost
        self.max_cost = found.max_cost
        if found.status != "complete":
            found.status = "running"
            found.ended_at = None
            for case in found.cases:  # stopped by a budget before: run them now, anew
                if case.status == "stopped":
                    # Its runs were cancelled: a first run of a new id, on the card as it was.
                    case.first_run = case_run_id(found.eval_id, f"{case.key}@{_now()}")
                    case.status, case.note, case.runs, case.graders = "queued", None, [], []
                    copy = Path(case.card_path)
                    if copy.exists():
                        Card.load(copy).save_state(CardState.NEW)
        return found

    # -- the run ---------------------------------------------------------------------------

    async def run(self) -> EvalResult:
        """Run (or resume) the eval to its end, a stop or the budget; returns its results."""
        from loopkit.durable.executors import process_executor_id
        from loopkit.durable.runtime import DurableRuntime
        from loopkit.evals.workers import LocalWorkers

        configs = list(self.configs.values())
        _check_case_inputs(self.suite, configs)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / RUNS_FOLDER).mkdir(exist_ok=True)
        self._copy_cards()
        self.result.save(self.path)
        local = LocalWorkers(self.workers, self.result.database, self.out / "workers")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        runtime = DurableRuntime(
            self.result.database,
            executor_id=process_executor_id("eval"),
            log_level="CRITICAL",
            on_lost_database="wait",
        )
        try:
            async with runtime:
                await self._enqueue(runtime)
                if self.workers:
                    local.start()
                    if local.adopted:
                        self.on_note(
                            "took over the local workers still running from before: "
                            + ", ".join(local.adopted)
                        )
                await self._follow(runtime, stop)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            for task in self._grading.values():
                task.cancel()
            # DBOS replaced the loop's default executor and shut it down with the runtime: the
            # workers are stopped here, blocking (they are idle, or interrupt their run).
            local.stop()
            self._finish()
        return self.result

    def _copy_cards(self) -> None:
        for case in self.result.cases:
            copy = Path(case.card_path)
            if case.status == "queued" and not case.runs:
                copy.parent.mkdir(parents=True, exist_ok=True)
                if not copy.exists():
                    shutil.copyfile(self.cards[case.card].path, copy)
                    Card.load(copy).save_state(CardState.NEW)

    def _request(self, case: CaseResult) -> CardRunRequest:
        from loopkit.cards.durable import CardRunRequest, PipelineSpec
        from loopkit.demo.role_tools import find_role, with_role_limits

        config = self.configs[case.config]
        card = Path(case.card_path)
        first = config.transcript_for(self.cards[case.card].path)
        settings = config.settings.model_copy(update={"transcript": first})
        settings = with_role_limits(settings, find_role(settings, self.suite.develop))
        pipeline = None
        if self.suite.then is not None:
            pipeline = PipelineSpec(
                develop=self.suite.develop,
                then=self.suite.then,
                round_trips=self.suite.round_trips,
                transcript=str(first) if first is not None else None,
            )
        return CardRunRequest.create(
            card, role=self.suite.develop, config=settings, config_path=config.path,
            pipeline=pipeline,
        )  # fmt: skip

    async def _enqueue(self, runtime: DurableRuntime) -> None:
        from loopkit.cards.queue import enqueue_card_run

        for case in self.result.cases:
            if not case.ended:
                await enqueue_card_run(runtime, self._request(case), run_id=case.first_run)

    async def _follow(self, runtime: DurableRuntime, stop: asyncio.Event) -> None:
        semaphore = asyncio.Semaphore(GRADING_AT_ONCE)
        while not stop.is_set():
            counts = {"queued": 0, "running": 0, "grading": 0, "done": 0}
            for case in self.result.cases:
                if case.ended:
                    counts["done"] += 1
                    continue
                if case.key in self._grading:
                    counts["grading"] += 1
                    continue
                ended = await self._update(runtime, case)
                counts["running" if case.status == "running" else "queued"] += not ended
                if ended:
                    case.status = "grading"
                    counts["grading"] += 1
                    self._grading[case.key] = asyncio.create_task(self._grade(case, semaphore))
            self.counts = counts
            if self.on_progress is not None:
                self.on_progress(self.result, counts)
            if counts["done"] == len(self.result.cases):
                self.result.status = "complete"
                return
            if self.max_cost is not None and self.result.spend >= self.max_cost:
                await self._stop_for_budget(runtime)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_SECONDS)
        self._stop_reason = "interrupted (start the same command again to resume)"
        self.result.status = "stopped: " + self._stop_reason

    async def _update(self, runtime: DurableRuntime, case: CaseResult) -> bool:
        """Follow the case's runs from its first one; True when its pipeline has ended."""
        runs: list[RunRef] = []
        run_id: str | None = case.first_run
        ended = False
        while run_id is not None:
            known = self._ended_runs.get(run_id)
            if known is not None:
                runs.append(known)
                run_id = self._next.get(run_id)
                ended = run_id is None
                continue
            record = await runtime.get_run(run_id)
            if record is None:  # its parent queued it a moment ago
                break
            if not record.finished:
                if record.state == "queued":  # nothing to read yet: no checkpoint, no log
                    args = record.inputs.get("args") or [{}]
                    role = args[0].get("role", "?") if isinstance(args[0], dict) else "?"
                    runs.append(RunRef(run_id=run_id, role=role, state="queued"))
                else:
                    runs.append(await self._run_ref(runtime, run_id, len(runs)))
                break
            ref = await self._run_ref(runtime, run_id, len(runs))
            self._ended_runs[run_id] = ref
            next_run = None
            if isinstance(record.output, dict):
                next_run = record.output.get("next_run")
            self._next[run_id] = next_run
            runs.append(ref)
            run_id = next_run
            ended = next_run is None
        case.runs = runs
        _add_up(case, self.prices[case.config])
        if not ended:  # queued: its next run waits for a worker
            case.status = "running" if any(r.state == "running" for r in runs) else "queued"
        return ended

    async def _run_ref(self, runtime: DurableRuntime, run_id: str, index: int) -> RunRef:
        from loopkit.cards.durable import get_card_run

        record = await get_card_run(runtime, run_id)
        if record is None:
            return RunRef(run_id=run_id, role="?", state="unknown")
        request_round = 1
        run = await runtime.get_run(run_id)
        if run is not None:
            args = run.inputs.get("args") or []
            pipeline = args[0].get("pipeline") if args and isinstance(args[0], dict) else None
            if isinstance(pipeline, dict):
                request_round = int(pipeline.get("round", 1))
        ref = RunRef(
            run_id=run_id,
            role=record.role,
            round=request_round,
            state=record.state,
            reason=record.reason,
            log_path=record.log_path,
            repo=record.repo,
            commit=record.commit,
            rounds=record.rounds,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cached_input_tokens=record.cached_input_tokens,
            created_at=record.created_at.isoformat() if record.created_at else None,
            updated_at=record.updated_at.isoformat() if record.updated_at else None,
        )
        _from_log(ref)
        return ref

    async def _grade(self, case: CaseResult, semaphore: asyncio.Semaphore) -> None:
        async with semaphore:
            started = time.perf_counter()
            config = self.configs[case.config]
            card = self.cards[case.card]
            folder = Path(case.card_path).parent
            grading = CaseRun(
                card=card.card, card_path=card.path, checks=card.checks, config=config,
                runs=case.runs, develop=self.suite.develop, then=self.suite.then,
                folder=folder, limits=self.suite.limits, cost=case.cost,
            )  # fmt: skip
            # The graders are independent: they run at once (the build and the checks each
            # start a process of their own).
            verdicts = list(await asyncio.gather(*(_graded(g, grading) for g in self.graders)))
            case.graders = verdicts
            case.passed = all(v.passed is not False for v in verdicts)
            case.status = "passed" if case.passed else "failed"
            case.grading_seconds = round(time.perf_counter() - started, 3)
            self.result.save(self.path)
            self._grading.pop(case.key, None)
            if self.on_case is not None:
                self.on_case(case)

    async def _stop_for_budget(self, runtime: DurableRuntime) -> None:
        """The budget is reached: every run not ended is cancelled (cleanly: its card Failed,
        its log closed), the cases not graded are stopped, the eval ends here."""
        from loopkit.cards.queue import cancel_card_run
        from loopkit.durable.errors import DurableError

        reason = f"the budget of ${self.max_cost:.2f} is reached (spent ${self.result.spend:.4f})"
        stopped = [c for c in self.result.cases if not c.ended and c.key not in self._grading]
        for case in stopped:
            for run in case.runs or [RunRef(run_id=case.first_run, role="", state="queued")]:
                if run.state not in ("done", "failed", "cancelled"):
                    with contextlib.suppress(DurableError):
                        await cancel_card_run(runtime, run.run_id)
        # The runs as they are now (one the last look saw queued may have started since): each
        # that has a log a worker is still writing stops within its poll and writes its end
        # (``cancelled``, ``result``). Wait for that before the workers are stopped (bounded: a
        # worker that is gone leaves it to the next one), then read the runs once more.
        for case in stopped:
            await self._update(runtime, case)
        running = [
            run.log_path
            for case in stopped
            for run in case.runs
            if run.log_path and (read_log(run.log_path) or [{}])[-1].get("type") != "result"
        ]
        deadline = time.monotonic() + 60
        while running and time.monotonic() < deadline:
            if all((read_log(p) or [{}])[-1].get("type") == "result" for p in running):
                break
            await asyncio.sleep(POLL_SECONDS)
        for case in stopped:
            await self._update(runtime, case)
            case.status, case.note = "stopped", reason
        if self._grading:
            await asyncio.gather(*self._grading.values(), return_exceptions=True)
        self._stop_reason = reason
        self.result.status = "stopped: " + reason

    def _finish(self) -> None:
        from loopkit.evals.junit import write_junit
        from loopkit.evals.report import write_report

        for case in self.result.cases:
            if case.status == "grading":  # cut off by a stop: graded again on resume
                case.status = "running"
        self.result.ended_at = _now()
        self.result.save(self.path)
        write_report(self.result, self.out / "report.html")
        write_junit(self.result, self.out / "junit.xml")


async def _graded(grader: Grader, case: CaseRun) -> GraderVerdict:
    """``grader``'s verdict on ``case``; a grader that breaks fails the case, named."""
    try:
        return await grader.grade(case)
    except Exception as e:
        name = getattr(grader, "name", type(grader).__name__)
        return GraderVerdict(
            grader=name, passed=False, detail=f"the grader failed: {type(e).__name__}: {e}"
        )


def _from_log(ref: RunRef) -> None:
    """What the run's log says: tokens (its subagents' child runs included, which its own
    totals leave out), cache writes, rounds, seconds, tokens per round and its report. A run
    still running counts what it logged so far; without a log the database's counts stay."""
    lines = read_log(ref.log_path)
    per_round: list[int] = []
    report: str | None = None
    sums = dict.fromkeys(_TOKENS, 0)
    for line in lines:
        data = line.get("data")
        if not isinstance(data, dict):
            continue
        kind = line.get("type")
        if kind == "round":
            for key in _TOKENS:
                sums[key] += int(data.get(key, 0) or 0)
            if not line.get("parent_run_id"):
                per_round.append(
                    int(data.get("input_tokens", 0)) + int(data.get("output_tokens", 0))
                )
        elif line.get("parent_run_id"):
            continue
        elif kind == "test_report" and data.get("path"):
            report = str(data["path"])
        elif kind == "verification" and data.get("report") and report is None:
            report = str(data["report"])
        elif kind == "result":
            ref.seconds = float((data.get("totals") or {}).get("seconds", 0.0))
    if per_round:
        ref.rounds = len(per_round)
        ref.input_tokens, ref.output_tokens = sums["input_tokens"], sums["output_tokens"]
        ref.cached_input_tokens = sums["cached_input_tokens"]
        ref.cache_creation_input_tokens = sums["cache_creation_input_tokens"]
    ref.tokens_per_round = per_round
    ref.report = report


_TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens")


def _child(line: dict[str, Any]) -> bool:
    data = line.get("data")
    return isinstance(data, dict) and bool(data.get("parent_run_id"))


def _add_up(case: CaseResult, price: Price) -> None:
    runs = case.runs
    for run in runs:
        run.cost = price.cost(run.model_dump())
    case.rounds = sum(r.rounds for r in runs)
    case.input_tokens = sum(r.input_tokens for r in runs)
    case.output_tokens = sum(r.output_tokens for r in runs)
    case.cached_input_tokens = sum(r.cached_input_tokens for r in runs)
    case.cache_creation_input_tokens = sum(r.cache_creation_input_tokens for r in runs)
    costs = [r.cost for r in runs]
    case.cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    case.seconds = round(sum(r.seconds for r in runs), 2)
    if runs and runs[0].created_at and runs[-1].updated_at:
        first = datetime.fromisoformat(runs[0].created_at)
        last = datetime.fromisoformat(runs[-1].updated_at)
        case.wall_seconds = round(max(0.0, (last - first).total_seconds()), 2)


def default_out(suite: EvalSuite) -> Path:
    """``evals/<suite name>`` in the current folder."""
    return Path(os.environ.get("LOOPKIT_EVALS_DIR", "evals")) / suite.name
