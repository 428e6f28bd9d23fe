"""The demo's durable workflow, ``loopkit.card_run``: one card run whose model requests and tool
calls are checkpoints.

:func:`card_run_workflow` is the registered workflow: from a
:class:`~loopkit.cards.durable.CardRunRequest` it prepares the run once (card In Work, scratch
repository: a checkpoint), opens the tool sources (again in every process that runs it: a new UI
server, new process tools), and runs the card with a
:class:`~loopkit.cards.durable.DurableCardRunner` (:func:`loopkit.demo.card_runner.card_runner`).
A queue or another process starts it the same way: ``card_run_workflow(
request.model_dump(mode="json"))`` (see docs/durable.md); the demo's commands (``--durable``,
``--resume``) are in :mod:`loopkit.demo.durable_runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from loopkit.cards import Card, CardState, RunnerConfig, RunResult
from loopkit.cards.durable import (
    CARD_RUN_WORKFLOW,
    PREPARE_STEP,
    CardRunRequest,
    CardRunResult,
    PreparedRun,
    finish_card_run,
    is_cancel,
)
from loopkit.cards.runner import CardRunOutcome
from loopkit.demo.card_runner import card_runner, early_ui
from loopkit.demo.model import make_model, transcript_for
from loopkit.demo.pipeline_rounds import defects_go_back, next_request, next_run_id
from loopkit.demo.progress import LiveProgress
from loopkit.demo.role_tools import find_role, take_message
from loopkit.demo.tester import end_test_run, tester_tools
from loopkit.demo.tool_provider import local_tools, role_memory
from loopkit.demo.workspace import ScratchRepo, create_scratch_repo, open_scratch_repo
from loopkit.durable.run import (
    DEFAULT_NOTICE,
    DurableRun,
    current_durable_run,
    durable_step,
    durable_workflow,
)
from loopkit.durable.run_log import DurableRunLog
from loopkit.durable.runtime import DurableRuntime
from loopkit.errors import CardError
from loopkit.middleware.run_log import RunLog

if TYPE_CHECKING:
    from loopkit.cards.early_source import EarlyToolSource

__all__ = ["CARD_RUN_NOTICE", "WATCHED", "card_run_workflow"]

#: What the model reads at the first request after a resume: the library's notice, and what
#: it means in this demo.
CARD_RUN_NOTICE = (
    DEFAULT_NOTICE + " Here that means the app: if you had started it (start_app), it is no "
    "longer running; call start_app again before any ui_ tool."
)

#: Run ids whose progress this process shows, and on which console (a run resumed here runs in
#: a task DBOS starts, so it cannot be handed the console directly).
WATCHED: dict[str, Console] = {}


def _prepare(config: RunnerConfig, card_path: Path, request: CardRunRequest) -> dict[str, Any]:
    """The card In Work and a scratch repository (or the earlier run's: ``request.repo``), and
    a "remember" message made a feedback rule (the run's preparation checkpoint: once)."""
    role = find_role(config, request.role)
    card = Card.load(card_path, max_bytes=config.max_card_bytes)
    card = card.save_state(CardState(role.front_matter.card_state))
    if request.repo is not None:
        name = f"{card_path.stem}-{role.name}"
        scratch = open_scratch_repo(
            Path(request.repo), config.runs_dir, name, config.app_source.name
        )
    else:
        scratch = create_scratch_repo(config.app_source, config.runs_dir, card_path.stem)
    log_path = config.log or scratch.run_dir / "run.jsonl"
    memory = role_memory(config, scratch)
    try:
        message = take_message(memory, role, request.message, Console(quiet=True))
    finally:
        if memory is not None:
            memory.close()
    return PreparedRun(
        message=message,
        card_text=card.text,
        title=card.title,
        run_dir=str(scratch.run_dir),
        repo=str(scratch.repo),
        app_folder=scratch.app_folder,
        log_path=str(Path(log_path).resolve()),
        base=scratch.head(),
    ).model_dump()


def _last_line_type(path: Path) -> str | None:
    """The type of the log's last line (None: no log yet, or a line cut by a kill)."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 65536))
            lines = f.read().splitlines()
        kind = json.loads(lines[-1]).get("type") if lines else None
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


@contextlib.contextmanager
def _shown(run_id: str, log: RunLog, config: RunnerConfig) -> Iterator[None]:
    console = WATCHED.get(run_id)
    if console is None:
        yield
        return
    progress = LiveProgress(console, config.max_rounds)
    log.subscribe(progress.on_event)
    with progress:
        yield


async def _close_unentered(ui: EarlyToolSource | None) -> None:
    if ui is not None:
        await ui.aclose()  # when the run never entered it (it closes what it entered)


@durable_workflow(CARD_RUN_WORKFLOW, notice=CARD_RUN_NOTICE)
async def card_run_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One card run as a durable workflow: ``request`` is a
    :class:`~loopkit.cards.durable.CardRunRequest` as JSON data; returns a
    :class:`~loopkit.cards.durable.CardRunResult` as JSON data."""
    req = CardRunRequest.model_validate(request)
    config = req.runner_config()
    card_path = Path(req.card)
    durable = current_durable_run()
    assert durable is not None  # durable_workflow runs the body in one
    prepared = PreparedRun.model_validate(
        await durable_step(PREPARE_STEP, lambda: _prepare(config, card_path, req))
    )
    card = Card.parse(prepared.card_text, card_path)
    scratch = ScratchRepo(Path(prepared.run_dir), Path(prepared.repo), prepared.app_folder)
    log_path = Path(prepared.log_path)
    # A process stopped by a signal wrote `interrupted` itself; only a killed one could not.
    durable.interrupted_logged = _last_line_type(log_path) == "interrupted"
    verification: str | None = None
    tester: Any = None
    role = find_role(config, req.role)
    # The UI server starts while the rest is made (as in loopkit.demo.run.run_card).
    ui = early_ui(config, scratch.run_dir) if role.has("ui") else None
    with DurableRunLog(log_path) as log:
        durable.on_event = lambda kind, data: log.write(kind, **data)
        try:
            played = transcript_for(config, card_path, role.name) if config.scripted else None
            tools = local_tools(config, scratch, role)
            if role.has("tester"):
                # Made here, not by card_runner: the findings row gets the run's real verdict.
                tester = tester_tools(
                    config, scratch, tools, card.title, run_log=log_path, criteria=card.criteria
                )
            tested_next = req.pipeline is not None and req.role == req.pipeline.develop
            runner = card_runner(
                config, make_model(config, card_path, role.name), tools, scratch, log,
                role=role, memory=role_memory(config, scratch), message=prepared.message,
                durable=True, transcript=played, card=card, tester=tester, parent=req.parent,
                done_state=CardState.IN_TEST if tested_next else CardState.DONE,
                # A tester whose defects go back to the developer leaves the card In Work.
                failed_state=CardState.IN_WORK if defects_go_back(req) else CardState.FAILED,
                ui=ui,
            )  # fmt: skip
        except Exception as e:  # the settings do not work in this process (a key, a module)
            await _close_unentered(ui)
            result = RunResult(status="failed", reason=f"{type(e).__name__}: {e}")
            ended = await finish_card_run(card, result, log)
            totals, card_state = ended["totals"], ended["card_state"]
            end_test_run(tester, CardRunOutcome(result=result, card=None))
        else:
            try:
                with _shown(durable.workflow_id, log, config):
                    outcome = await runner.run(card)
            except BaseException as e:
                _test_run_stopped(tester, e, durable)
                raise
            finally:
                await _close_unentered(ui)
            end_test_run(tester, outcome)  # the findings row: the real verdict, also resumed
            result, totals = outcome.result, outcome.totals
            card_state = outcome.card.state.value if outcome.card else CardState.FAILED.value
            if outcome.verification is not None:
                verification = outcome.verification.summary()
    commits = scratch.commits_since(prepared.base)
    next_run = None
    if req.pipeline is not None:
        # Not a step (DBOS starts no workflow inside one): the enqueue is the workflow's own
        # call, recorded by DBOS, with an id derived from this run's: queued once, also when
        # this run is resumed.
        next_run = await _queue_next(req, result, scratch, durable.workflow_id)
        if next_run is None and card_state in (CardState.IN_WORK.value, CardState.IN_TEST.value):
            # The pipeline cannot go on (its next run cannot be set up here): it ends, Failed.
            card_state = _fail_card(card_path, card_state)
    return CardRunResult(
        status=result.status,
        reason=result.reason,
        card_state=card_state,
        totals=totals,
        commit=commits[0].describe() if commits else None,
        log_path=str(log_path),
        repo=str(scratch.repo),
        success_word=result.success_word,
        next_run=next_run,
        verification=verification,
    ).model_dump(mode="json")


def _test_run_stopped(tester: Any, error: BaseException, durable: DurableRun) -> None:
    """A durable test run ended by ``error`` before its end: cancelled, its findings row says
    so; stopped (it is resumed later), the row stays ``running`` and says why."""
    if tester is None:
        return
    if is_cancel(error, durable):
        end_test_run(tester, None, cancelled=True)
    elif isinstance(error, asyncio.CancelledError):
        stopped = getattr(tester, "interrupted", None)
        if stopped is not None:
            stopped("interrupted: the durable run stopped before its end; it goes on when resumed")


def _fail_card(card_path: Path, state: str) -> str:
    try:
        return Card.load(card_path).save_state(CardState.FAILED).state.value
    except (CardError, OSError):
        return state


async def _queue_next(
    request: CardRunRequest, result: RunResult, scratch: ScratchRepo, run_id: str
) -> str | None:
    """The pipeline's next run queued (its id), or None when the pipeline ends here: the card
    stays as the run left it (Done after a tester that passed, Failed otherwise). A worker
    queues it on the card queue (any worker takes it); a demo process on its own queue, so
    that it runs the whole pipeline itself."""
    from loopkit.cards.queue import CARD_QUEUE, enqueue_card_run

    follow = next_request(request, result, scratch.repo, scratch.run_dir, run_id)
    if follow is None:
        return None
    runtime = DurableRuntime._running  # the worker's, or the demo's
    if runtime is None:
        return None
    queue = CARD_QUEUE
    if runtime.listen is not None and CARD_QUEUE not in runtime.listen:
        queue = await runtime.own_queue()
    next_id = next_run_id(run_id, follow)
    console = WATCHED.get(run_id)
    if console is not None:
        WATCHED[next_id] = console  # the demo shows the next run's progress too
    queued = await enqueue_card_run(runtime, follow, run_id=next_id, queue=queue)
    return queued.run_id
