"""The demo's durable runs: ``--durable`` (:func:`run_durable_card`), ``--resume``
(:func:`resume_demo_runs`), and what became of the runs of a killed process
(:func:`after_a_killed_run`).

Each run is the workflow :func:`loopkit.demo.card_run_workflow.card_run_workflow`, run in this
process; its checkpoints are in the demo's database (:func:`database_for`), so an interrupted run
goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from loopkit.cards import Card, RunnerConfig
from loopkit.cards.durable import (
    CardRunRecord,
    CardRunRequest,
    CardRunResult,
    PipelineSpec,
    get_card_run,
    list_card_runs,
)
from loopkit.cards.roles import Role
from loopkit.command_line import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED
from loopkit.command_line import EXIT_OK as EXIT_DONE
from loopkit.demo.card_run_workflow import WATCHED, card_run_workflow
from loopkit.demo.model import announce_run, check_model, first_line
from loopkit.demo.progress import summary_table
from loopkit.demo.role_tools import DEFAULT_ROLE, find_role
from loopkit.durable.run import active_runs
from loopkit.durable.runtime import (
    DEFAULT_DATABASE_FILE,
    DurableRuntime,
    database_url,
    process_executor_id,
)

__all__ = [
    "after_a_killed_run",
    "card_run_record",
    "database_for",
    "resume_demo_runs",
    "run_durable_card",
    "run_durable_demo",
    "runs_table",
    "runtime_for",
]


def database_for(config: RunnerConfig) -> str:
    """The durable runs' database: ``database_url`` (or ``LOOPKIT_DATABASE_URL``), else
    ``loopkit.sqlite`` in the runs folder."""
    return database_url(config.database_url, default=config.runs_dir / DEFAULT_DATABASE_FILE)


def runtime_for(config: RunnerConfig) -> DurableRuntime:
    """The durable runtime of a demo process (its executor id names the process)."""
    return DurableRuntime(
        database_for(config), executor_id=process_executor_id("demo"), log_level="ERROR"
    )


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


async def run_durable_card(
    config: RunnerConfig,
    card: Card,
    console: Console,
    *,
    role: Role | None = None,
    repo: Path | None = None,
    message: str | None = None,
) -> int:
    """``--durable``: the run's first lines, then :func:`run_durable_demo` (``card`` in
    ``role``, default develop, checked as for :func:`loopkit.demo.run.run_demo`); returns the
    exit status."""
    role = role or find_role(config, DEFAULT_ROLE)
    announce_run(config, card, role, console)
    return await run_durable_demo(config, card, console, role=role, repo=repo, message=message)


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
        WATCHED[run_id] = console
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
            WATCHED.pop(run_id, None)
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
        WATCHED[run_id] = console
        try:
            finished = await runtime.wait(run_id)
        except asyncio.CancelledError:
            console.print(
                f"[yellow]interrupted:[/yellow] the pipeline's run {run_id} can be resumed with: "
                f"{_resume_hint(run_id)} (the pipeline goes on from there)"
            )
            return EXIT_INTERRUPTED
        finally:
            WATCHED.pop(run_id, None)
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
    WATCHED[record.run_id] = console
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
        WATCHED.pop(record.run_id, None)


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
