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
from collections.abc import Iterator, Sequence
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
    PreparedRun,
    finish_card_run,
    get_card_run,
    list_card_runs,
)
from loopkit.cards.roles import Role
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
from loopkit.demo.workspace import ScratchRepo, create_scratch_repo, open_scratch_repo
from loopkit.durable.run import DEFAULT_NOTICE, current_durable_run, durable_step, durable_workflow
from loopkit.durable.run_log import DurableRunLog
from loopkit.durable.runtime import (
    DEFAULT_DATABASE_FILE,
    DurableRuntime,
    database_url,
    process_executor_id,
)
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
    card = Card.load(card_path, max_bytes=config.max_card_bytes).save_state(CardState.IN_WORK)
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
    role = find_role(config, req.role)
    ui = _early_ui(config, role, scratch)  # starts while the rest is made (see run_demo)
    with DurableRunLog(log_path) as log:
        durable.on_event = lambda kind, data: log.write(kind, **data)
        try:
            played = transcript_for(config, card_path, role.name) if config.scripted else None
            runner = card_runner(
                config, make_model(config, card_path, role.name),
                local_tools(config, scratch, role), scratch, log, role=role,
                memory=role_memory(config, scratch), message=prepared.message, durable=True,
                transcript=played, ui=ui,
            )  # fmt: skip
        except Exception as e:  # the settings do not work in this process (a key, a module)
            await _close_unentered(ui)
            result = RunResult(status="failed", reason=f"{type(e).__name__}: {e}")
            ended = await finish_card_run(card, result, log)
            totals, card_state = ended["totals"], ended["card_state"]
        else:
            with _shown(durable.workflow_id, log, config):
                try:
                    outcome = await runner.run(card)
                finally:
                    await _close_unentered(ui)
            result, totals = outcome.result, outcome.totals
            card_state = outcome.card.state.value if outcome.card else CardState.FAILED.value
    commits = scratch.commits_since(prepared.base)
    return CardRunResult(
        status=result.status,
        reason=result.reason,
        card_state=card_state,
        totals=totals,
        commit=commits[0].describe() if commits else None,
        log_path=str(log_path),
        repo=str(scratch.repo),
        success_word=result.success_word,
    ).model_dump(mode="json")


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
) -> int:
    """Run ``card`` (in ``role``, default develop) as a durable workflow in this process;
    returns the exit status (130 when interrupted: the run can be resumed)."""
    from dbos import SetWorkflowID

    from loopkit.run_context import new_run_id

    assert card.path is not None
    request = CardRunRequest.create(
        card.path,
        role=role.name if role is not None else "develop",
        config=config,
        repo=repo,
        message=message,
    )
    run_id = new_run_id()
    runtime = runtime_for(config)
    console.print(
        f"[bold]Durable run[/bold] {run_id}: checkpoints in {escape(_where(runtime))}; if it "
        f"is interrupted, resume it with: {_resume_hint(run_id)}"
    )
    async with runtime:
        _WATCHED[run_id] = console
        try:
            with SetWorkflowID(run_id):
                output = await card_run_workflow(request.model_dump(mode="json"))
        except asyncio.CancelledError:
            console.print(
                f"[yellow]interrupted:[/yellow] the card stays In Work; resume the run with: "
                f"{_resume_hint(run_id)}"
            )
            return EXIT_INTERRUPTED
        except BaseException as e:
            if "Cancelled" not in type(e).__name__:  # DBOS's: cancelled (loopkit.runs cancel)
                raise
            record = await get_card_run(runtime, run_id)
            state = record.state if record is not None else "cancelled"
            if state == "cancelled":
                console.print(f"[red]cancelled:[/red] run {run_id} was cancelled; card Failed")
                return EXIT_FAILED
            # Cancelled once its end had begun: refused, it ended as its log says.
            console.print(f"run {run_id}: the cancel came after its end; it is {state}")
            return EXIT_DONE if state == "done" else EXIT_FAILED
        finally:
            _WATCHED.pop(run_id, None)
    return _summary(console, CardRunResult.model_validate(output))


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
    async with runtime:
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
        await runtime.resume(record.run_id)
        ended = await runtime.wait(record.run_id)
    except asyncio.CancelledError:
        console.print(
            f"[yellow]interrupted:[/yellow] the card stays In Work; resume the run with: "
            f"{_resume_hint(record.run_id)}"
        )
        return EXIT_INTERRUPTED
    finally:
        _WATCHED.pop(record.run_id, None)
    if ended is None or not isinstance(ended.output, dict):
        why = ended.error if ended is not None and ended.error else "it did not finish"
        console.print(f"[red]error:[/red] run {record.run_id}: {escape(why)}")
        return EXIT_FAILED
    return _summary(console, CardRunResult.model_validate(ended.output))


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
