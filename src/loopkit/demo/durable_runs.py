"""Durable demo runs: the card-run workflow, ``--durable`` and ``--resume``.

:func:`card_run_workflow` is the registered workflow (``loopkit.card_run``): from a
:class:`~loopkit.cards.durable.CardRunRequest` it prepares the run once (card In Work, scratch
repository: a checkpoint), opens the tool sources (again in every process that runs it: a new UI
server, new process tools), and runs the card with a
:class:`~loopkit.cards.durable.DurableCardRunner` whose model requests and tool calls are
checkpoints. A queue or another process starts it the same way: ``card_run_workflow(
request.model_dump(mode="json"))`` (see docs/durable.md).

:func:`run_durable_demo` runs a card durably in this process; :func:`resume_demo_runs` lists the
interrupted runs or takes them over.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from loopkit.abstractions.chat import ChatOptions, ChatResponse
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.cards import Card, CardState, RunnerConfig, RunResult
from loopkit.cards.durable import (
    CARD_RUN_WORKFLOW,
    PREPARE_STEP,
    CardRunRecord,
    CardRunRequest,
    CardRunResult,
    PipelineSpec,
    PreparedRun,
    finish_card_run,
    get_card_run,
    is_cancel,
    list_card_runs,
)
from loopkit.cards.roles import Role
from loopkit.cards.runner import CardRunOutcome
from loopkit.demo.pipeline import defects_go_back
from loopkit.demo.progress import LiveProgress, summary_table
from loopkit.demo.role_tools import find_role, take_message
from loopkit.demo.run import (
    card_runner,
    check_model,
    first_line,
    local_tools,
    make_model,
    remembered_ui,
    role_memory,
    transcript_for,
    ui_server_for,
)
from loopkit.demo.tester import end_test_run, tester_tools
from loopkit.demo.workspace import ScratchRepo, create_scratch_repo, open_scratch_repo
from loopkit.durable.run import (
    DEFAULT_NOTICE,
    DurableRun,
    active_runs,
    current_durable_run,
    durable_step,
    durable_workflow,
)
from loopkit.durable.run_log import DurableRunLog
from loopkit.durable.runtime import (
    DEFAULT_DATABASE_FILE,
    DurableRuntime,
    database_url,
    process_executor_id,
)
from loopkit.errors import CardError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.run_log import RunLog
from loopkit.providers.scripted import ScriptedChatClient

if TYPE_CHECKING:
    from loopkit.cards.early_source import EarlyToolSource

__all__ = [
    "CARD_RUN_NOTICE",
    "ScriptPosition",
    "card_run_workflow",
    "database_for",
    "resume_demo_runs",
    "run_durable_demo",
    "runtime_for",
]

from loopkit.command_line import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED
from loopkit.command_line import EXIT_OK as EXIT_DONE

#: What the model reads at the first request after a resume: the library's notice, and what
#: it means in this demo.
CARD_RUN_NOTICE = (
    DEFAULT_NOTICE + " Here that means the app: if you had started it (start_app), it is no "
    "longer running; call start_app again before any ui_ tool."
)

#: Run ids whose progress this process shows, and on which console (a run resumed here runs in
#: a task DBOS starts, so it cannot be handed the console directly).
_WATCHED: dict[str, Console] = {}


class ScriptPosition(DelegatingChatClient):
    """Keeps a scripted model at the right turn in a resumed run: the replayed requests never
    reach it, so its turn is the number of the model's answers in the conversation sent."""

    def __init__(self, inner: ScriptedChatClient) -> None:
        super().__init__(inner)
        self.script = inner

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.script.position = sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
        return await self.inner.get_response(messages, options)


def database_for(config: RunnerConfig) -> str:
    """The durable runs' database: ``database_url`` (or ``LOOPKIT_DATABASE_URL``), else
    ``loopkit.sqlite`` in the runs folder."""
    return database_url(config.database_url, default=config.runs_dir / DEFAULT_DATABASE_FILE)


def runtime_for(config: RunnerConfig) -> DurableRuntime:
    """The durable runtime of a demo process (its executor id names the process)."""
    return DurableRuntime(
        database_for(config), executor_id=process_executor_id("demo"), log_level="ERROR"
    )


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
    console = _WATCHED.get(run_id)
    if console is None:
        yield
        return
    progress = LiveProgress(console, config.max_rounds)
    log.subscribe(progress.on_event)
    with progress:
        yield


def _early_ui(config: RunnerConfig, role: Role, scratch: ScratchRepo) -> EarlyToolSource | None:
    """The run's UI server, starting now; its remembered tool list lets the first request go
    without waiting for it (as in :func:`~loopkit.demo.run.run_demo`)."""
    if not role.has("ui"):
        return None
    from loopkit.cards.early_source import EarlyToolSource
    from loopkit.cards.runner import MCPToolSource

    ui = EarlyToolSource(
        MCPToolSource(ui_server_for(config, scratch.run_dir)), remembered_ui(config)
    )
    ui.start()
    return ui


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
    ui = _early_ui(config, role, scratch)  # starts while the rest is made (see run_demo)
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
    from loopkit.demo.pipeline import next_request, next_run_id

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
    console = _WATCHED.get(run_id)
    if console is not None:
        _WATCHED[next_id] = console  # the demo shows the next run's progress too
    queued = await enqueue_card_run(runtime, follow, run_id=next_id, queue=queue)
    return queued.run_id


# -- the demo's commands -----------------------------------------------------------------------


def _summary(console: Console, result: CardRunResult) -> int:
    console.print(
        summary_table(
            status=result.word,
            reason=result.reason,
            totals=result.totals,
            card_state=result.card_state,
            commit=result.commit,
            log_path=result.log_path or "none",
            repo=result.repo or "none",
            verification=result.verification,
        )
    )
    return EXIT_DONE if result.done else EXIT_FAILED


def _resume_hint(run_id: str) -> str:
    return f"python -m loopkit.demo --resume {run_id}"


async def run_durable_demo(
    config: RunnerConfig,
    card: Card,
    console: Console,
    *,
    role: Role | None = None,
    repo: Path | None = None,
    message: str | None = None,
    pipeline: PipelineSpec | None = None,
) -> int:
    """Run ``card`` (in ``role``, default develop) as a durable workflow in this process;
    returns the exit status (130 when interrupted: the run can be resumed). ``pipeline``: the
    first run of a develop → test pipeline; the runs it queues after it (on this process's own
    queue, as a worker's go on the card queue) run here too, one after the other."""
    from dbos import SetWorkflowID

    from loopkit.run_context import new_run_id

    assert card.path is not None
    request = CardRunRequest.create(
        card.path,
        role=role.name if role is not None else "develop",
        config=config,
        repo=repo,
        message=message,
        pipeline=pipeline,
    )
    run_id = new_run_id()
    runtime = runtime_for(config)
    console.print(
        f"[bold]Durable run[/bold] {run_id}: checkpoints in {escape(_where(runtime))}; if it "
        f"is interrupted, resume it with: {_resume_hint(run_id)}"
    )
    async with runtime, _honouring_cancels(runtime):
        _WATCHED[run_id] = console
        try:
            with SetWorkflowID(run_id):
                output = await card_run_workflow(request.model_dump(mode="json"))
        except asyncio.CancelledError:
            record = await get_card_run(runtime, run_id)
            if record is not None and record.state == "cancelled":
                return await _cancelled(runtime, run_id, console)  # loopkit.runs cancel
            console.print(
                f"[yellow]interrupted:[/yellow] the card stays In Work; resume the run with: "
                f"{_resume_hint(run_id)}"
            )
            return EXIT_INTERRUPTED
        except BaseException as e:
            if "Cancelled" not in type(e).__name__:  # DBOS's: cancelled (loopkit.runs cancel)
                raise
            return await _cancelled(runtime, run_id, console)
        finally:
            _WATCHED.pop(run_id, None)
        return await _follow(runtime, request, CardRunResult.model_validate(output), console)


@contextlib.asynccontextmanager
async def _honouring_cancels(runtime: DurableRuntime) -> AsyncIterator[None]:
    """A run of this process cancelled in the database (``python -m loopkit.runs cancel``, the
    board) stops within half a second and ends cancelled (card Failed, ``cancelled`` and
    ``result`` lines), as a worker's run does; without it the run would only learn of the
    cancel when DBOS refuses its next checkpoint, with nobody left to write its end."""
    stopped: set[str] = set()

    async def watch() -> None:
        while True:
            await asyncio.sleep(0.5)
            for run_id, durable in active_runs().items():
                if run_id in stopped:
                    continue
                with contextlib.suppress(Exception):  # the database away: the next round
                    found = await runtime.get_run(run_id)
                    if found is not None and found.status == "CANCELLED":
                        stopped.add(run_id)
                        durable.interrupt(cancelled=True)

    watching = asyncio.create_task(watch())
    try:
        yield
    finally:
        watching.cancel()
        await asyncio.wait({watching})


async def _cancelled(runtime: DurableRuntime, run_id: str, console: Console) -> int:
    record = await get_card_run(runtime, run_id)
    state = record.state if record is not None else "cancelled"
    if state == "cancelled":
        console.print(f"[red]cancelled:[/red] run {run_id} was cancelled; card Failed")
        return EXIT_FAILED
    # Cancelled once its end had begun: refused, it ended as its log says.
    console.print(f"run {run_id}: the cancel came after its end; it is {state}")
    return EXIT_DONE if state == "done" else EXIT_FAILED


async def _follow(
    runtime: DurableRuntime, request: CardRunRequest, ended: CardRunResult, console: Console
) -> int:
    """The summary of a durable run that ended, then of each run its pipeline queued after it
    on this process's own queue (they run here, shown as they run); the exit status: 0 only
    when the pipeline's tester passed (or, without a pipeline, the run is done)."""
    status = _summary(console, ended)
    spec = request.pipeline
    while ended.next_run is not None:
        run_id = ended.next_run
        record = await runtime.get_run(run_id)
        if record is None:
            break
        request = CardRunRequest.model_validate(record.inputs["args"][0])
        round_no = request.pipeline.round if request.pipeline is not None else 1
        console.rule(f"{request.role} · round {round_no} · run {run_id} · in {request.repo}")
        _WATCHED[run_id] = console
        try:
            finished = await runtime.wait(run_id)
        except asyncio.CancelledError:
            console.print(
                f"[yellow]interrupted:[/yellow] the pipeline's run {run_id} can be resumed with: "
                f"{_resume_hint(run_id)} (the pipeline goes on from there)"
            )
            return EXIT_INTERRUPTED
        finally:
            _WATCHED.pop(run_id, None)
        if finished is None or not isinstance(finished.output, dict):
            if finished is not None and finished.state == "cancelled":
                return await _cancelled(runtime, run_id, console)
            why = finished.error if finished is not None and finished.error else "it did not end"
            console.print(f"[red]error:[/red] run {run_id}: {escape(why)}")
            return EXIT_FAILED
        ended = CardRunResult.model_validate(finished.output)
        status = _summary(console, ended)
    if spec is None:
        return status
    round_no = request.pipeline.round if request.pipeline is not None else 1
    if request.role == spec.then and ended.done:
        console.print(
            f"[bold green]Pipeline:[/bold green] {spec.develop} → {spec.then} passed in round "
            f"{round_no}; the card is Done."
        )
        return EXIT_DONE
    if request.role == spec.then:
        console.print(
            f"[red]Pipeline:[/red] {spec.then} still fails after {spec.round_trips} round "
            "trip(s); the card stays Failed."
        )
    elif ended.done:
        console.print(
            f"[red]Pipeline:[/red] {spec.then} could not be queued after {spec.develop}; the card "
            "is Failed."
        )
    return EXIT_FAILED


def _where(runtime: DurableRuntime) -> str:
    url = runtime.database_url
    return url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url.split("@")[-1]


def runs_table(records: Sequence[CardRunRecord]) -> Table:
    """The runs as a table (``--resume`` without an id)."""
    table = Table(box=None, pad_edge=False)
    for column in ("run", "card", "role", "model", "state", "rounds", "tokens", "updated"):
        table.add_column(column, overflow="fold")
    table.add_column("log / worker", overflow="fold")
    for r in records:
        updated = r.updated_at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if r.updated_at else ""
        table.add_row(
            Text(r.run_id),
            Text(r.title or Path(r.card).name),
            Text(r.role),
            Text(r.model),
            Text(r.state, "yellow" if r.state == "interrupted" else ""),
            str(r.rounds),
            f"{r.tokens:,}",
            updated,
            Text(f"{r.log_path or '-'}\n{r.worker or '-'}"),
        )
    return table


def _pick(records: Sequence[CardRunRecord], which: str) -> list[CardRunRecord] | str:
    if which == "all":
        return sorted(records, key=lambda r: r.created_at.timestamp() if r.created_at else 0.0)
    found = [r for r in records if r.run_id == which] or [
        r for r in records if r.run_id.startswith(which)
    ]
    if len(found) == 1:
        return found
    if not found:
        return f"no interrupted run {which!r} (see python -m loopkit.demo --resume)"
    return f"{which!r} names {len(found)} interrupted runs; give more of the id"


async def resume_demo_runs(config: RunnerConfig, which: str | None, console: Console) -> int:
    """``--resume``: list the interrupted card runs (``which`` None), or resume one by id (or
    an unambiguous start of it), or ``all`` of them one after the other."""
    runtime = runtime_for(config)
    async with runtime, _honouring_cancels(runtime):
        interrupted = await list_card_runs(runtime, state="interrupted")
        if which is None:
            if not interrupted:
                console.print(f"No interrupted runs in {escape(_where(runtime))}.")
            else:
                console.print(
                    f"Interrupted runs in {escape(_where(runtime))} (resume one with "
                    "--resume ID, or --resume all):"
                )
                console.print(runs_table(interrupted))
            return EXIT_DONE
        if which == "all" and not interrupted:
            console.print(f"No interrupted runs in {escape(_where(runtime))}: nothing to resume.")
            return EXIT_DONE
        picked = _pick(interrupted, which)
        if isinstance(picked, str):
            console.print(f"[red]error:[/red] {escape(picked)}")
            return EXIT_BAD_INPUT
        statuses = [await _resume_one(runtime, record, console) for record in picked]
    if EXIT_INTERRUPTED in statuses:
        return EXIT_INTERRUPTED
    if EXIT_BAD_INPUT in statuses:
        return EXIT_BAD_INPUT
    return EXIT_DONE if all(s == EXIT_DONE for s in statuses) else EXIT_FAILED


async def _resume_one(runtime: DurableRuntime, record: CardRunRecord, console: Console) -> int:
    from loopkit.cards import ConfigError
    from loopkit.cards.roles import RoleError
    from loopkit.errors import CardError

    run = await runtime.get_run(record.run_id)
    assert run is not None
    request = CardRunRequest.model_validate(run.inputs["args"][0])
    config = request.runner_config()
    card_path = Path(request.card)
    try:
        role = find_role(config, request.role).name
        check_model(config, card_path, role)  # a key this process lacks, a role it cannot find
    except (ConfigError, CardError, RoleError) as e:
        console.print(f"[red]error:[/red] run {record.run_id}: {escape(str(e))}")
        return EXIT_BAD_INPUT
    console.print(first_line(config, card_path, role))
    console.print(
        f"[bold]Resuming[/bold] run {record.run_id}: {escape(record.title or request.card)} "
        f"({record.rounds} model requests recorded; none of them is made again)"
    )
    _WATCHED[record.run_id] = console
    try:
        try:
            await runtime.resume(record.run_id)
            ended = await runtime.wait(record.run_id)
        except asyncio.CancelledError:
            console.print(
                f"[yellow]interrupted:[/yellow] the card stays In Work; resume the run with: "
                f"{_resume_hint(record.run_id)}"
            )
            return EXIT_INTERRUPTED
        if ended is None or not isinstance(ended.output, dict):
            why = ended.error if ended is not None and ended.error else "it did not finish"
            console.print(f"[red]error:[/red] run {record.run_id}: {escape(why)}")
            return EXIT_FAILED
        # A pipeline's run: the runs it queues next run here too (this process's own queue).
        return await _follow(runtime, request, CardRunResult.model_validate(ended.output), console)
    finally:
        _WATCHED.pop(record.run_id, None)


async def after_a_killed_run(
    config: RunnerConfig, card: str | None, since: datetime, which: str | None = None
) -> tuple[str, int]:
    """What happened to the durable run(s) of a demo process that ended abnormally (killed):
    one line to print, and the exit status. ``card`` (its resolved path) and ``since`` (when
    that process started) find a new run's record; ``which`` names the run(s) a ``--resume``
    was resuming."""
    async with runtime_for(config) as runtime:
        records = await list_card_runs(runtime, limit=200)
    if card is not None:
        found = [r for r in records if r.card == card and r.created_at and r.created_at >= since]
    elif which == "all":
        found = [r for r in records if r.state == "interrupted"]
    else:
        found = [r for r in records if which and r.run_id.startswith(which)][:1]
    if not found:
        if card is None:
            return f"there is no interrupted run {which!r} now: nothing to resume", EXIT_FAILED
        return (
            "the run was killed before its first checkpoint: nothing was recorded, so there is "
            "nothing to resume; its card is as it was: run it again",
            EXIT_INTERRUPTED,
        )
    interrupted = [r for r in found if r.state == "interrupted"]
    if interrupted:
        ids = " ".join(r.run_id for r in interrupted)
        which_ids = interrupted[0].run_id if len(interrupted) == 1 else "all"
        return (
            f"the run was killed; its card stays In Work and its checkpoints are kept ({ids}): "
            f"resume it with `{_resume_hint(which_ids)}`",
            EXIT_INTERRUPTED,
        )
    last = found[0]
    if last.state in ("done", "failed"):
        status = EXIT_DONE if last.state == "done" else EXIT_FAILED
        return (
            f"the run {last.run_id} had finished ({last.state}) before its process was killed: "
            "nothing to resume",
            status,
        )
    return f"the run {last.run_id} is {last.state}: nothing to resume", EXIT_FAILED


async def card_run_record(config: RunnerConfig, run_id: str) -> CardRunRecord | None:
    """One card run's record from the demo's database (a convenience for scripts)."""
    async with runtime_for(config) as runtime:
        return await get_card_run(runtime, run_id)
