"""Durable card runs, the card runner's side: what a run starts from, how it ends, its record.

A durable card run is a workflow (registered by the demo,
:mod:`loopkit.demo.card_run_workflow`) that starts from a :class:`CardRunRequest` (plain data:
the card's path, the role, the model and the resolved settings) and returns a
:class:`CardRunResult`. Its body checkpoints the preparation (card In Work, scratch repository),
every model request and tool call, and the end (card Done or Failed, the ``result`` line) with
:class:`DurableCardRunner`. The card keeps its contract: In Work while the run runs or is
interrupted, Done or Failed once it ends.

:func:`list_card_runs` and :func:`get_card_run` read runs back as :class:`CardRunRecord`\\ s (card,
role, model, state, reason, rounds, tokens, commit, log, worker).
"""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from loopkit.abstractions.tools import Tool
from loopkit.agents.result import AgentRunResult
from loopkit.cards.card import Card, CardState
from loopkit.cards.config import RunnerConfig, load_config
from loopkit.cards.result import RunResult
from loopkit.cards.roles import NAME_PATTERN
from loopkit.cards.runner import CardRunner, CardRunOutcome, ToolSource
from loopkit.durable.run import DurableRun, current_durable_run, durable_step
from loopkit.durable.steps import MODEL_STEP, ModelCheckpoint, durable_tools
from loopkit.errors import BudgetExceededError, CardError
from loopkit.run_context import run_scope

if TYPE_CHECKING:
    from loopkit.cards.runner import _CardRunLog
    from loopkit.durable.records import RunRecord, RunState
    from loopkit.durable.runtime import DurableRuntime
    from loopkit.middleware.run_log import RunLog

__all__ = [
    "CARD_RUN_WORKFLOW",
    "FINISH_STEP",
    "PREPARE_STEP",
    "CardRunRecord",
    "CardRunRequest",
    "CardRunResult",
    "DurableCardRunner",
    "DurableToolSource",
    "PipelineSpec",
    "PreparedRun",
    "finish_card_run",
    "get_card_run",
    "is_cancel",
    "learn_cancel",
    "list_card_runs",
]

#: The registered name of the card-run workflow (stored with every run: keep it).
CARD_RUN_WORKFLOW = "loopkit.card_run"
#: Checkpoint: the card In Work, its text, the scratch repository, the log's path.
PREPARE_STEP = "loopkit.card.prepare"
#: Checkpoint: the card Done or Failed and the ``result`` line.
FINISH_STEP = "loopkit.card.finish"
#: The role of a request that names none.
DEFAULT_ROLE = "develop"


class PipelineSpec(BaseModel):
    """A run of the develop → test pipeline (``--then test``): after a ``develop`` run that ends
    done the ``then`` role runs in its repository; after a ``then`` run that fails, ``develop``
    runs again with the defects, while round trips are left (``round`` counts from 1)."""

    model_config = ConfigDict(extra="forbid")

    develop: str = DEFAULT_ROLE
    then: str = "test"
    round: int = Field(default=1, ge=1)
    round_trips: int = Field(default=2, ge=0)
    #: The scripted model's transcript given for the first developer run (the other runs' lie
    #: beside it: loopkit.demo.pipeline_rounds.pipeline_transcript); None: the bundled ones.
    transcript: str | None = None


class CardRunRequest(BaseModel):
    """What a durable card run starts from: plain data, stored with the run and enough to run
    it in any process (a worker's too)."""

    model_config = ConfigDict(extra="forbid")

    #: The card file (absolute path).
    card: str
    #: The role's name (``develop``, ``test``, ``document`` or a user's role; the process that
    #: runs it finds the role file: :mod:`loopkit.cards.roles`).
    role: str = DEFAULT_ROLE
    #: The model string (also in ``config``; kept here for listings).
    model: str
    #: The resolved settings (:class:`~loopkit.cards.config.RunnerConfig` as JSON data): the
    #: run uses them, not the environment of the process that resumes it.
    config: dict[str, Any]
    #: The config file they came from, if any (for the record).
    config_path: str | None = None
    #: Continue in this repository (an earlier run's) instead of a fresh copy of the app.
    repo: str | None = None
    #: A message that comes with the card ("remember ..." adds a feedback rule).
    message: str | None = None
    #: The run this one follows (a test of a develop run, a follow-up run), if any.
    parent: str | None = None
    #: This run is a step of the develop → test pipeline.
    pipeline: PipelineSpec | None = None
    #: Who asked for the run (a board login, ``slack:<user id>``; a pipeline's next run keeps
    #: its first run's), for the record; None: not said (the command line).
    started_by: str | None = None

    @classmethod
    def create(
        cls,
        card: str | Path,
        *,
        role: str = DEFAULT_ROLE,
        config: RunnerConfig | None = None,
        config_path: str | Path | None = None,
        repo: str | Path | None = None,
        message: str | None = None,
        parent: str | None = None,
        pipeline: PipelineSpec | None = None,
        started_by: str | None = None,
        **overrides: Any,
    ) -> CardRunRequest:
        """A request for ``card`` in ``role``: ``config`` as given, or read from
        ``config_path`` (TOML), the ``LOOPKIT_*`` environment and ``overrides`` (e.g.
        ``model=``), as the demo does. The role is a name here; the caller checks that it
        exists where the run will run (its roles folder)."""
        if not re.fullmatch(NAME_PATTERN, role):
            raise CardError(f"role {role!r} is not a role name ({NAME_PATTERN})")
        if config is None:
            config = load_config(config_path, **overrides)
        # Another process (a worker elsewhere) runs it: no path may depend on this one's folder.
        absolute = {
            name: value.resolve()
            for name in ("transcript", "app_source", "runs_dir", "log", "roles_dir")
            if isinstance(value := getattr(config, name), Path)
        }
        config = config.model_copy(update=absolute)
        return cls(
            card=str(Path(card).resolve()),
            role=role,
            model=config.model,
            config=config.model_dump(mode="json"),
            config_path=None if config_path is None else str(Path(config_path).resolve()),
            repo=None if repo is None else str(Path(repo).resolve()),
            message=message,
            parent=parent,
            pipeline=pipeline,
            started_by=started_by,
        )

    def runner_config(self) -> RunnerConfig:
        """The settings of the run (validated again, never read from the environment)."""
        return RunnerConfig.model_validate(self.config)


class PreparedRun(BaseModel):
    """What the preparation checkpoint recorded."""

    model_config = ConfigDict(extra="forbid")

    #: The card's text once In Work (the prompt: a resumed run sends the same card).
    card_text: str
    title: str
    run_dir: str
    repo: str
    app_folder: str
    log_path: str
    #: The scratch repository's first commit (the run's commits come after it).
    base: str
    #: The message that goes with the card (None: none, or it was a "remember" rule).
    message: str | None = None


class CardRunResult(BaseModel):
    """What a durable card run returns (the workflow's output)."""

    status: str
    reason: str | None = None
    card_state: str
    totals: dict[str, Any] = Field(default_factory=dict)
    #: The run's commit ("<id> <subject> (<files>)"), if it made one.
    commit: str | None = None
    log_path: str | None = None
    repo: str | None = None
    #: The role's word for success (``done``; a tester's ``passed``).
    success_word: str = "done"
    #: The run the pipeline queued after this one (a test run, or a developer's next round).
    next_run: str | None = None
    #: How the acceptance criteria were proven (the summary's ``verified`` line), if the role
    #: verifies.
    verification: str | None = None

    @property
    def done(self) -> bool:
        return self.status == "done"

    @property
    def word(self) -> str:
        """The word of the RESULT line: the role's success word, or ``failed``."""
        return self.success_word if self.done else "failed"


class DurableToolSource:
    """A :class:`~loopkit.cards.runner.ToolSource` whose tools are checkpoints. Opening it is
    not one: a resumed run opens its sources again (a new UI server, new process tools)."""

    def __init__(self, source: ToolSource) -> None:
        self.source = source
        self.tools: list[Tool] = []

    async def __aenter__(self) -> DurableToolSource:
        await self.source.__aenter__()
        self.tools = durable_tools(self.source.tools)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.source.__aexit__(*exc)


class DurableCardRunner(CardRunner):
    """The card runner inside a durable workflow: the agent run as :class:`CardRunner` makes it
    (give it a :class:`~loopkit.durable.steps.DurableChatClient` model, retries inside it, and
    :class:`DurableToolSource`\\ s), the end a checkpoint, and an interruption that leaves the
    card In Work for the run to be resumed (an ``interrupted`` line, not a Failed card).

    A cancel (the run cancelled in the database: DBOS refuses its next checkpoint, and the worker
    stops its task) is honoured or refused whole. Before the end's checkpoint has begun it is
    honoured, also after the model's final answer: ``cancelled`` and ``result`` (``cancelled``)
    lines, the card Failed. Once that checkpoint has begun it is refused: the end is written
    whole (card, ``result`` line, checkpoint) and the run's records read as that end."""

    async def run(self, card: Card, *, write_state: bool = True) -> CardRunOutcome:
        """Run ``card`` (already In Work: the preparation checkpoint set it) to its end."""
        answer: AgentRunResult[str] | None = None
        logs: list[_CardRunLog] = []
        durable = current_durable_run()
        try:
            answer = await self._answer(card, logs)
            result = self._judge(answer)
        except BaseException as e:
            await learn_cancel(e, durable)
            if is_cancel(e, durable):
                self._honour_cancel(card, logs, None, write_state)
                raise
            if isinstance(e, asyncio.CancelledError):
                with _in_run(logs):
                    self.log.write(
                        "interrupted",
                        reason="the run was stopped before it ended; the card stays In Work "
                        "until the run is resumed",
                    )
                raise
            if isinstance(e, BudgetExceededError):
                result = self._failed(str(e))
            elif isinstance(e, Exception):  # a provider or tool-server failure, too many ...
                result = self._failed(f"{type(e).__name__}: {e}")
            else:
                raise
        with _in_run(logs):
            finishing = asyncio.ensure_future(
                finish_card_run(
                    card,
                    result,
                    self.log,
                    write_state=write_state,
                    done_state=self.done_state,
                    failed_state=self.failed_state,
                    **self.result_details(answer),
                )
            )
        try:
            ended = await _whole(finishing)
        except BaseException as e:
            await learn_cancel(e, durable)
            if is_cancel(e, durable):  # it came before the end's checkpoint began
                self._honour_cancel(card, logs, result, write_state)
            raise
        run = logs[0].run if logs else None
        ended_card = card
        if card.path is not None:
            with suppress(CardError):
                ended_card = Card.load(card.path)
        return CardRunOutcome(
            result=result,
            card=ended_card,
            run=answer,
            run_id=run.run_id if run is not None else None,
            totals=ended["totals"],
            verification=self.verification,
        )

    def _honour_cancel(
        self,
        card: Card,
        logs: list[_CardRunLog],
        answered: RunResult | None,
        write_state: bool,
    ) -> None:
        """The cancel, written whole outside any checkpoint (the database refuses them now):
        the card Failed, the ``cancelled`` and ``result`` lines."""
        reason = "the run was cancelled; it ends here"
        if answered is not None:
            reason += f" (after the model's final answer: {answered.line()!r})"
        state = CardState.FAILED
        with _in_run(logs):
            if write_state and card.path is not None:
                try:
                    Card.load(card.path).save_state(state)
                except (CardError, OSError) as e:
                    self.log.error(f"could not write the card state: {e}")
            self.log.write("cancelled", reason=reason)
            self.log.result("cancelled", reason, card_state=state.value)


def _in_run(logs: list[_CardRunLog]) -> Any:
    """The agent run's scope (its lines carry its id), once the agent exists."""
    run = logs[0].run if logs else None
    return run_scope(run) if run is not None else nullcontext()


def is_cancel(error: BaseException, durable: DurableRun | None) -> bool:
    """Whether ``error`` ending a durable card run (``durable``) is its cancel, not a stop
    that leaves it to be resumed: DBOS refused a checkpoint of a cancelled workflow, or the
    worker stopped the task of a run it saw cancelled, or the run lost its workflow to a cancel
    (:func:`learn_cancel`)."""
    if type(error).__name__ == "DBOSWorkflowCancelledError":
        return True
    if durable is None or not durable.cancelled:
        return False
    return isinstance(error, asyncio.CancelledError) or _lost_ownership(error)


async def learn_cancel(error: BaseException, durable: DurableRun | None) -> None:
    """A cancel that lands while a checkpoint is being recorded takes the workflow from this
    execution: DBOS raises ``DBOSWorkflowConflictIDError`` ("no longer owned by this
    execution", a BaseException), not its cancellation. Whether that was a cancel (and not
    another execution taking the run over) is in the database: ``durable.cancelled`` says it
    then, so the cancel is honoured whole."""
    if durable is not None and not durable.cancelled and _lost_ownership(error):
        from loopkit.durable.run import cancelled_in_database

        durable.cancelled = await cancelled_in_database(durable.workflow_id)


def _lost_ownership(error: BaseException) -> bool:
    return type(error).__name__ == "DBOSWorkflowConflictIDError"


async def _whole(finishing: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
    """The end's checkpoint, not cut in the middle: a stop or a cancel that arrives while it
    runs waits for it. It raises DBOS's cancellation when the cancel came before it began."""
    try:
        return await asyncio.shield(finishing)
    except asyncio.CancelledError:
        if finishing.cancelled():
            raise
        with suppress(asyncio.CancelledError):
            await asyncio.wait({finishing})
        # Begun before the cancel: the run has ended as it says (the stop is refused). Refused
        # by DBOS (cancelled first): that error, and the caller honours the cancel.
        return finishing.result()


async def finish_card_run(
    card: Card,
    result: RunResult,
    log: RunLog,
    *,
    write_state: bool = True,
    done_state: CardState = CardState.DONE,
    failed_state: CardState = CardState.FAILED,
    **details: Any,
) -> dict[str, Any]:
    """The end of a durable card run, as a checkpoint (once, ever): the card's new state,
    written into the file as it is now (an edit made while the run was interrupted stays), and
    the ``result`` line; returns ``{"card_state", "totals", "status", "reason"}``. Call it in
    the run's scope so the line belongs to the run. ``done_state``: the card's state after a
    success (Done; In Test when a test run follows); ``failed_state`` after a failure (Failed;
    In Work when the pipeline sends the tester's defects back to the developer)."""

    def finish() -> dict[str, Any]:
        state = done_state if result.done else failed_state
        if write_state and card.path is not None:
            try:
                Card.load(card.path).save_state(state)
            except (CardError, OSError) as e:  # the log still records the result
                log.error(f"could not write the card state: {e}")
        log.result(result.status, result.reason, card_state=state.value, **details)
        return {
            "card_state": state.value,
            "totals": log.totals(),
            "status": result.status,
            "reason": result.reason,
        }

    ended: dict[str, Any] = await durable_step(FINISH_STEP, finish)
    return ended


# -- records ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardRunRecord:
    """A card run as the database has it."""

    run_id: str
    card: str
    title: str | None
    role: str
    model: str
    #: ``running``, ``interrupted``, ``queued``, ``done``, ``failed`` or ``cancelled``.
    state: str
    reason: str | None
    rounds: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    commit: str | None
    log_path: str | None
    #: The process (executor) that ran it last, and whether it still runs (None: unknown here).
    worker: str | None
    worker_alive: bool | None
    created_at: datetime | None
    updated_at: datetime | None
    #: The repository the run works in (its own copy of the app, or an earlier run's).
    repo: str | None = None
    #: The run it follows (a test run's develop run), and the run queued after it.
    parent: str | None = None
    next_run: str | None = None
    #: The develop → test pipeline this run is a step of (``develop``, ``then``, ``round``,
    #: ``round_trips``), if any.
    pipeline: dict[str, Any] | None = None
    #: Who asked for the run (:attr:`CardRunRequest.started_by`).
    started_by: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _state(run: RunRecord, result: CardRunResult | None, finished: dict[str, Any] | None) -> str:
    state: RunState = run.state
    if state == "succeeded":
        return result.status if result is not None else "failed"
    if finished is not None and state != "failed":
        # Its end is recorded: killed (or cancelled too late) between that checkpoint and the
        # workflow's own end, it has ended as the checkpoint says; nothing to resume or cancel.
        return str(
            finished.get("status") or ("done" if finished["card_state"] == "Done" else "failed")
        )
    return state


def _text(output: Any) -> str | None:
    return output if isinstance(output, str) else None


def _from_steps(
    steps: list[Any],
) -> tuple[PreparedRun | None, dict[str, int], dict[str, Any] | None]:
    prepared: PreparedRun | None = None
    finished: dict[str, Any] | None = None
    rounds = input_tokens = output_tokens = cached = 0
    for step in steps:
        text = _text(step.output)
        if text is None:
            continue
        if step.name == PREPARE_STEP:
            prepared = PreparedRun.model_validate(json.loads(text))
        elif step.name == FINISH_STEP:
            finished = json.loads(text)
        elif step.name == MODEL_STEP:
            rounds += 1
            usage = ModelCheckpoint.model_validate_json(text).response.usage
            if usage is not None:
                input_tokens += usage.input_tokens
                output_tokens += usage.output_tokens
                cached += usage.cached_input_tokens
    counted = {
        "rounds": rounds,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_input_tokens": cached,
    }
    return prepared, counted, finished if isinstance(finished, dict) else None


async def _card_record(runtime: DurableRuntime, run: RunRecord) -> CardRunRecord | None:
    args = run.inputs.get("args") or []
    try:
        request = CardRunRequest.model_validate(args[0] if args else run.inputs["kwargs"])
    except Exception:  # not a card run, or an input this version cannot read
        return None
    result = CardRunResult.model_validate(run.output) if isinstance(run.output, dict) else None
    prepared, counted, finished = _from_steps(await runtime.steps(run.run_id))
    state = _state(run, result, finished)
    totals = result.totals if result is not None else counted
    reason = result.reason if result is not None else run.error
    if result is None and finished is not None and state != run.state:
        reason = finished.get("reason")
    return CardRunRecord(
        run_id=run.run_id,
        card=request.card,
        title=prepared.title if prepared is not None else None,
        role=request.role,
        model=request.model,
        state=state,
        reason=reason,
        rounds=int(totals.get("rounds", 0)),
        input_tokens=int(totals.get("input_tokens", 0)),
        output_tokens=int(totals.get("output_tokens", 0)),
        cached_input_tokens=int(totals.get("cached_input_tokens", 0)),
        commit=result.commit if result is not None else None,
        log_path=prepared.log_path if prepared is not None else None,
        worker=run.executor_id,
        worker_alive=run.executor_alive,
        created_at=run.created_at,
        updated_at=run.updated_at,
        repo=(result.repo if result is not None else None)
        or (prepared.repo if prepared is not None else request.repo),
        parent=request.parent,
        next_run=result.next_run if result is not None else None,
        pipeline=None
        if request.pipeline is None
        else request.pipeline.model_dump(exclude={"transcript"}),
        started_by=request.started_by,
    )


async def list_card_runs(
    runtime: DurableRuntime, *, state: str | None = None, limit: int | None = None
) -> list[CardRunRecord]:
    """The card runs in ``runtime``'s database, newest first (``state``: only those, e.g.
    ``interrupted``). Reads each run's checkpoints for its rounds and tokens so far."""
    records: list[CardRunRecord] = []
    for run in await runtime.list_runs(workflow=CARD_RUN_WORKFLOW, limit=limit):
        record = await _card_record(runtime, run)
        if record is not None and (state is None or record.state == state):
            records.append(record)
    return records


async def get_card_run(runtime: DurableRuntime, run_id: str) -> CardRunRecord | None:
    """One card run, or None when there is no card run of that id."""
    run = await runtime.get_run(run_id)
    if run is None or run.workflow != CARD_RUN_WORKFLOW:
        return None
    return await _card_record(runtime, run)
