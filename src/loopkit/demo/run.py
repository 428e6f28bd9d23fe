"""One demo run in this process: settings checked, scratch repository, model, tools, the card
runner (:mod:`loopkit.demo.card_runner`), the live line, the summary. A durable run (``--durable``)
is :func:`loopkit.demo.durable_runs.run_durable_card`; the command line chooses.

Everything a user can get wrong (the config, ``[tools]``, the tools provider, ``--log``, the
transcript, the app source, the card file) is checked by :func:`check_settings` and
:func:`read_card` before a desktop starts or anything is created; bad input is exit status 2.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.chat import ChatClient
from loopkit.cards import Card, CardState, ConfigError, RunnerConfig, RunResult
from loopkit.cards.roles import Role

# Where callers look for them (docs/roles.md; the settings' checks, the model and the runner's
# parts have modules of their own).
from loopkit.demo.card_runner import card_runner as card_runner
from loopkit.demo.card_runner import early_ui
from loopkit.demo.checks import check_durable as check_durable
from loopkit.demo.checks import check_log_destination as check_log_destination
from loopkit.demo.checks import read_card as read_card
from loopkit.demo.checks import refuse_invalid_card as refuse_invalid_card
from loopkit.demo.model import announce_run, check_model, make_model, transcript_for
from loopkit.demo.model import bundled_transcripts as bundled_transcripts
from loopkit.demo.model import first_line as first_line
from loopkit.demo.model import instructions as instructions
from loopkit.demo.progress import LiveProgress, summary_table
from loopkit.demo.role_tools import DEFAULT_ROLE, find_role, take_message
from loopkit.demo.role_tools import with_role_limits as with_role_limits  # where callers look
from loopkit.demo.tester import end_test_run, tester_tools
from loopkit.demo.tool_provider import local_tools, role_memory, tools_config
from loopkit.demo.workspace import (
    ScratchRepo,
    WorkspaceError,
    check_app_source,
    check_earlier_repo,
    create_scratch_repo,
    new_run_dir,
    open_scratch_repo,
)
from loopkit.errors import CardError

if TYPE_CHECKING:
    from loopkit.cards import ToolSource
    from loopkit.cards.early_source import EarlyToolSource
    from loopkit.mcp.waiting_server import WaitingPythonServer

# The runner (the agent layer, MCP, retries, the run log) is imported by the functions that use it:
# the process that only checks the settings and starts the headless desktop never needs it.


def check_settings(
    config: RunnerConfig, card_path: Path, role: Role | None = None, repo: Path | None = None
) -> None:
    """Every setting of a run, checked before a desktop starts or anything is created.

    Raises :class:`ConfigError`, :class:`CardError` (no transcript for the card) or
    :class:`WorkspaceError` (app_source, ``repo``): bad input, exit status 2.
    """
    check_log_destination(config)
    check_app_source(config.app_source)
    if repo is not None:
        check_earlier_repo(repo, config.app_source.name)
    run_dir = config.runs_dir / "checking"  # a stand-in: nothing is created
    tools_config(
        config,
        root=run_dir / "repo",
        app_folder=config.app_source.name,
        run_dir=run_dir,
        role=role,
    )
    check_model(config, card_path, role.name if role is not None else DEFAULT_ROLE)


def _set_up(
    config: RunnerConfig,
    card_path: Path,
    role: Role,
    repo: Path | None,
    run_dir: Path,
) -> tuple[ChatClient, ScratchRepo, ToolSource]:
    """The model, the scratch repository (in ``run_dir``; continuing in ``repo`` when given)
    and the local tools of a run in ``role``."""
    model = make_model(config, card_path, role.name)
    if repo is not None:
        scratch = open_scratch_repo(
            repo, config.runs_dir, run_dir.name, config.app_source.name, run_dir=run_dir
        )
    else:
        scratch = create_scratch_repo(
            config.app_source, config.runs_dir, card_path.stem, run_dir=run_dir
        )
    return model, scratch, local_tools(config, scratch, role)


@dataclass(slots=True)
class DemoOutcome:
    """How one demo run ended: its exit status, its result (None: it never ran), the
    repository it worked in, and for a test run the tester's tools (its record, its report)."""

    status: int
    result: RunResult | None = None
    repo: Path | None = None
    tester: Any = None
    #: The run's id (its run log's ``run_id``), when it ran.
    run_id: str | None = None


async def run_demo(
    config: RunnerConfig,
    card: Card,
    console: Console,
    *,
    role: Role | None = None,
    repo: Path | None = None,
    message: str | None = None,
    prestarted: WaitingPythonServer | None = None,
) -> int:
    """Run ``card`` in ``role`` (checked by :func:`check_settings` and :func:`read_card`
    before): first line, live line, summary; returns the exit status. ``prestarted``: a UI
    server started earlier (:func:`loopkit.demo.card_runner.early_ui`). With ``durable`` set in
    ``config`` it runs as :func:`loopkit.demo.durable_runs.run_durable_card` does (checkpoints,
    resumable). ``repo``: continue in the repository of an earlier run instead of a new copy of
    the app; ``message``: comes with the card (one that starts with "remember" adds a feedback
    rule of the role's scope)."""
    if config.durable:
        # Imported here: DBOS and the durable records load only for a durable run.
        from loopkit.demo.durable_runs import run_durable_card

        return await run_durable_card(config, card, console, role=role, repo=repo, message=message)
    ran = await run_card(
        config, card, console, role=role, repo=repo, message=message, prestarted=prestarted
    )
    return ran.status


async def run_card(
    config: RunnerConfig,
    card: Card,
    console: Console,
    *,
    role: Role | None = None,
    repo: Path | None = None,
    message: str | None = None,
    done_state: CardState = CardState.DONE,
    parent: str | None = None,
    failed_state: CardState = CardState.FAILED,
    expected_state: CardState | None = None,
    prestarted: WaitingPythonServer | None = None,
) -> DemoOutcome:
    """:func:`run_demo`, saying how the run ended (:class:`DemoOutcome`); ``done_state``: the
    card's state after a success (In Test when a test run follows), ``failed_state`` after a
    failure (In Work when the developer runs next); ``parent``: the run this one follows;
    ``expected_state``: the state the card is in by design (a pipeline's next run), so no note
    says it was run before."""
    role = role or find_role(config, DEFAULT_ROLE)
    from loopkit.cards import CardRunOutcome
    from loopkit.middleware.run_log import RunLog
    from loopkit.middleware.transcript_recorder import TranscriptRecorder

    if config.durable:
        raise ConfigError(
            "durable is set: a durable run is loopkit.demo.durable_runs.run_durable_card (this "
            "runs the card in this process, without checkpoints)"
        )
    assert card.path is not None
    card_path = card.path
    announce_run(config, card, role, console, expected_state)
    # The UI server takes about a second to start: a role with the UI starts it first, and the
    # model, the scratch repository and the local tools are made meanwhile (in a thread, so the
    # loop runs its start).
    name = f"{card_path.stem}-{role.name}" if repo is not None else card_path.stem
    run_dir = new_run_dir(config.runs_dir, name)
    ui: EarlyToolSource | None = early_ui(config, run_dir, prestarted) if role.has("ui") else None
    recorder: TranscriptRecorder | None = None
    try:
        model, scratch, tools = await asyncio.to_thread(
            _set_up, config, card_path, role, repo, run_dir
        )
        if config.record_transcript is not None:
            recorder = TranscriptRecorder(model, description=f"Recorded run of {card.title!r}.")
            model = recorder
        memory = role_memory(config, scratch)
        message = take_message(memory, role, message, console)
        log_path = config.log or scratch.run_dir / "run.jsonl"
        tester = (
            tester_tools(
                config, scratch, tools, card.title, run_log=log_path, criteria=card.criteria
            )
            if role.has("tester")
            else None
        )
    except (WorkspaceError, CardError, ConfigError, OSError) as e:
        if ui is not None:
            await ui.aclose()
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return DemoOutcome(2)
    except BaseException:
        if ui is not None:
            await ui.aclose()
        raise
    base = scratch.head()
    try:
        with RunLog(log_path) as log:
            played = transcript_for(config, card_path, role.name) if config.scripted else None
            runner = card_runner(
                config, model, tools, scratch, log, role=role, memory=memory, message=message,
                tester=tester, ui=ui, transcript=played, card=card, done_state=done_state,
                parent=parent, failed_state=failed_state,
            )  # fmt: skip
            progress = LiveProgress(console, config.max_rounds)
            log.subscribe(progress.on_event)
            interrupted = False
            with progress:
                try:
                    outcome = await runner.run(card)
                except asyncio.CancelledError:
                    # The runner has marked the card Failed and written the result line.
                    interrupted = True
                    try:
                        reloaded: Card | None = Card.load(
                            card_path, max_bytes=config.max_card_bytes
                        )
                    except CardError:
                        reloaded = None  # the summary then says Failed, as the runner wrote
                    outcome = CardRunOutcome(
                        result=RunResult(
                            status="failed",
                            reason="the run was interrupted",
                            success_word=role.success_word,
                        ),
                        card=reloaded,
                        totals=log.totals(),
                    )
    finally:
        if ui is not None:
            await ui.aclose()  # when the run never entered it (it closes what it entered)
    if not interrupted:  # interrupted, the tools' own exit said cancelled
        end_test_run(tester, outcome)  # the findings row's real verdict
    if recorder is not None and config.record_transcript is not None:
        config.record_transcript.parent.mkdir(parents=True, exist_ok=True)  # a pipeline's test/
        saved = recorder.save(config.record_transcript)
        console.print(f"transcript of {len(recorder.turns)} turns recorded in {escape(str(saved))}")
    commits = scratch.commits_since(base)
    commit = commits[0].describe() if commits else None
    result: RunResult = outcome.result
    console.print(
        summary_table(
            status=result.word,
            reason=result.reason,
            totals=outcome.totals,
            card_state=outcome.card.state.value if outcome.card else "Failed",
            commit=commit,
            log_path=str(log_path),
            repo=str(scratch.repo),
            subagents=progress.subagents,
            verification=outcome.verification.summary() if outcome.verification else None,
        )
    )
    report = getattr(tester, "report_path", None)
    if report is not None:
        console.print(f"[bold]Test report:[/bold] {escape(str(report))}")
    status = 130 if interrupted else 0 if result.done else 1
    return DemoOutcome(status, result, scratch.repo, tester, outcome.run_id)
