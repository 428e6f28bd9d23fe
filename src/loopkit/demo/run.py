"""One demo run: settings checked, scratch repository, model, tools, the card runner, the summary.

Everything a user can get wrong (the config, ``[tools]``, the tools provider, ``--log``, the
transcript, the app source, the card file) is checked by :func:`check_settings` and
:func:`read_card` before a desktop starts or anything is created; bad input is exit status 2.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.chat import ChatClient
from loopkit.cards import Card, CardState, ConfigError, RunnerConfig, RunResult
from loopkit.cards.roles import Role

# Where callers look for them (the settings' checks and the model have modules of their own).
from loopkit.demo.checks import check_durable as check_durable
from loopkit.demo.checks import check_log_destination as check_log_destination
from loopkit.demo.checks import read_card as read_card
from loopkit.demo.checks import refuse_invalid_card as refuse_invalid_card
from loopkit.demo.model import bundled_transcripts as bundled_transcripts
from loopkit.demo.model import check_model, first_line, make_model, role_line, transcript_for
from loopkit.demo.model import instructions as instructions
from loopkit.demo.progress import LiveProgress, summary_table
from loopkit.demo.role_tools import (
    DEFAULT_ROLE,
    NOTES_FOLDER,
    GroupContext,
    RoleMemory,
    SelectedTools,
    StaticTools,
    extra_group_sources,
    find_role,
    local_tool_filter,
    needs_local_tools,
    reference_shelf,
    role_instructions,
    take_message,
)
from loopkit.demo.role_tools import with_role_limits as with_role_limits  # where callers look
from loopkit.demo.tester import end_test_run, tester_tools
from loopkit.demo.workspace import (
    ScratchRepo,
    WorkspaceError,
    check_app_source,
    check_earlier_repo,
    create_scratch_repo,
    new_run_dir,
    open_scratch_repo,
)
from loopkit.errors import CardError, describe_validation_error
from loopkit_ui.wait_app import window_shown

if TYPE_CHECKING:
    from loopkit.cards import CardRunner, ToolSource
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.remembered_tools import RememberedToolList
    from loopkit.middleware.run_log import RunLog

# The runner (the agent layer, MCP, retries, the run log) is imported by the functions that use it:
# the process that only checks the settings and starts the headless desktop never needs it.


def _tools_module(config: RunnerConfig) -> ModuleType:
    name = config.tools_provider
    try:
        module = importlib.import_module(name)
    except (ImportError, ValueError, TypeError) as e:  # ValueError/TypeError: "", "..x"
        raise ConfigError(
            f"tools_provider {name!r} cannot be imported: {e}. It names a module with "
            "ToolsConfig and LocalTools (default: loopkit_tools)"
        ) from None
    missing = [a for a in ("ToolsConfig", "LocalTools") if not hasattr(module, a)]
    if missing:
        raise ConfigError(
            f"tools_provider {name!r} has no {' and no '.join(missing)}; it must name a module "
            "with ToolsConfig and LocalTools (default: loopkit_tools)"
        )
    return module


def _window_readiness(config: RunnerConfig) -> dict[str, Any]:
    """``start_app`` waits until the app the UI server drives shows a window (the UI server's
    ``--app-name``), checked on the accessibility bus in the tools' process (``app_ready`` kind
    ``window``: no fixed delay, no probe process). Each check waits at most 3 s, so an app that
    dies at start is seen between checks. Without an app name the tools' own default (a
    one-second delay) stays."""
    command = config.ui_server.command or []
    if "--app-name" not in command[:-1] or command[:3] != [
        sys.executable,
        "-m",
        "loopkit_ui.server",
    ]:
        return {}
    app_name = command[command.index("--app-name") + 1]
    return {"app_ready": {"kind": "window", "app_name": app_name, "timeout_s": 30}}


def role_folders(role: Role | None, app_folder: str) -> tuple[list[str], list[str]]:
    """The folders a role's file tools may read and write: the app and ``docs/``, the role's
    ``writes`` and, with the memory group, ``notes/`` (so git_commit commits the notes)."""
    if role is None:
        return [app_folder, "docs"], [app_folder]
    writes = role.write_folders(app_folder) + ([NOTES_FOLDER] if role.has("memory") else [])
    reads = [app_folder, "docs", *writes]
    return list(dict.fromkeys(reads)), list(dict.fromkeys(writes))


def tools_config(
    config: RunnerConfig, *, root: Path, app_folder: str, run_dir: Path, role: Role | None = None
) -> tuple[ModuleType, Any]:
    """The tools provider module and its validated ``ToolsConfig`` for a run in ``root``."""
    module = _tools_module(config)
    if not isinstance(config.tools.get("app_env", {}), dict):
        raise ConfigError('[tools]: app_env: expected a table of NAME = "value"')
    reads, writes = role_folders(role, app_folder)
    if role is not None and role.has("memory") and not hasattr(module, "MemoryTools"):
        raise ConfigError(
            f"role {role.name!r} has the memory group, but tools_provider {config.tools_provider!r}"
            " has no MemoryTools"
        )
    settings: dict[str, Any] = {
        "root": root,
        "read_folders": reads,
        "write_folders": writes or [app_folder],
        "app_output_file": run_dir / "app-output.log",
        # git_commit refuses code changed since the last successful build (kept in the run's
        # folder, so a resumed durable run knows it too).
        "commit_requires_build": True,
        "build_inputs": [app_folder],
        "build_state_file": run_dir / "build-state.json",
        **_window_readiness(config),
        **config.tools,
    }
    settings["app_env"] = {
        "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
        "INVOICE_APP_LOG": str(run_dir / "app.log"),
        **settings.get("app_env", {}),
    }
    try:
        return module, module.ToolsConfig.model_validate(settings)
    except ValidationError as e:
        raise ConfigError(f"[tools]: {describe_validation_error(e)}") from None


def local_tools(config: RunnerConfig, scratch: ScratchRepo, role: Role | None = None) -> ToolSource:
    """The local tools from the configured provider module (``loopkit_tools`` by default); the
    role's folders exist (git_commit stages only folders that do)."""
    module, settings = tools_config(
        config, root=scratch.repo, app_folder=scratch.app_folder, run_dir=scratch.run_dir, role=role
    )
    for folder in settings.write_folders:
        (scratch.repo / folder).mkdir(parents=True, exist_ok=True)
    tools: ToolSource = module.LocalTools(settings, window_check=window_shown)
    return tools


def role_memory(config: RunnerConfig, scratch: ScratchRepo) -> RoleMemory | None:
    """The memory of the run's repository (None: the tools provider has none). Its search index
    is in the run's folder, outside the repository."""
    module = _tools_module(config)
    if not hasattr(module, "MemoryTools"):
        return None
    return RoleMemory(module, scratch.repo, scratch.run_dir / "memory-index")


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


def ui_server_for(config: RunnerConfig, run_dir: Path) -> MCPServerConfig:
    """The UI server of a run: its trees and screenshots go into the run's folder."""
    ui_server = config.ui_server
    if ui_server.command is not None:
        ui_env = {"LOOPKIT_UI_OUTPUT_DIR": str(run_dir / "ui"), **ui_server.env}
        ui_server = ui_server.model_copy(update={"env": ui_env})
    return ui_server


def card_runner(
    config: RunnerConfig,
    model: ChatClient,
    tools: ToolSource,
    scratch: ScratchRepo,
    log: RunLog,
    *,
    role: Role | None = None,
    memory: RoleMemory | None = None,
    message: str | None = None,
    tester: ToolSource | None = None,
    durable: bool = False,
    transcript: Path | None = None,
    ui: ToolSource | None = None,
    card: Card | None = None,
    done_state: CardState = CardState.DONE,
    parent: str | None = None,
    failed_state: CardState = CardState.FAILED,
) -> CardRunner:
    """The runner of one demo run in ``role`` (default: develop): the role's instructions with
    the feedback rules of its scope (from ``memory``), the tools of its groups only (local tools,
    the UI server, the memory; ``read_reference`` always), the limits, retries for a real model.
    ``message`` comes with the card; ``tester``: the tester's tools
    (:func:`~loopkit.demo.tester.tester_tools`), offered to a role with the ``tester`` group.
    ``ui``: the UI server of a role with the ``ui`` group (e.g. already starting); by default
    the configured one. The model is offered its core tools and ``load_tools`` for the rest
    (:class:`~loopkit.middleware.tool_disclosure.ToolDisclosure`).
    ``durable``: inside a durable workflow (each model request and tool call a checkpoint,
    retries inside the request's checkpoint). ``transcript``: the one the scripted model plays
    (a subagent's own transcript lies beside it). A role with ``verify: true`` proves every
    acceptance criterion of ``card`` before its done counts
    (:func:`~loopkit.demo.replay.demo_verification`); the card is In Work (a tester's In Test)
    while the run runs, ``done_state`` after a success, ``failed_state`` after a failure (a
    pipeline's tester whose defects go back to the developer: In Work). The run log's ``start``
    line records the repository the run works in and ``parent``, the run it follows (a
    pipeline's)."""
    from loopkit.cards import CardRunner, MCPToolSource, RunLimits
    from loopkit.middleware.retry import RetryPolicy
    from loopkit.middleware.tool_disclosure import ToolDisclosure
    from loopkit.tracing import traced_from_environment

    role = role or find_role(config, DEFAULT_ROLE)
    sources: list[ToolSource] = []
    if needs_local_tools(role):
        sources.append(SelectedTools(tools, local_tool_filter(role)))
    if role.has("ui"):
        sources.append(ui or MCPToolSource(ui_server_for(config, scratch.run_dir)))
    if role.has("tester"):
        title, criteria = (card.title, card.criteria) if card is not None else ("card", [])
        sources.append(
            tester
            or tester_tools(config, scratch, tools, title, run_log=log.path, criteria=criteria)
        )
    sources.append(StaticTools([reference_shelf(config).tool()]))
    context = GroupContext(
        config, role, scratch.repo, scratch.run_dir, scratch.app_folder, log, transcript
    )
    sources += extra_group_sources(context)
    rules = memory.rules(role.rules_scope) if memory is not None else []
    if memory is not None:
        sources.append(memory.source(offered=role.has("memory")))
    retry = None if config.scripted else RetryPolicy(max_attempts=config.retries)
    settings: dict[str, Any] = {
        "instructions": role_instructions(role, rules),
        "log": log,
        "limits": RunLimits(config.max_rounds, config.max_tokens, config.max_output_tokens),
        "model_name": config.model,
        "sampling": {"temperature": config.temperature} if config.temperature is not None else {},
        "disclosure": ToolDisclosure(config.core_tools, defer=config.defer_tools),
        "success_word": role.success_word,
        "offered_rules": [number for number, _ in rules],
        "metadata": {
            "role": role.name,
            "repo": str(scratch.repo),
            **({"parent": parent} if parent else {}),
        },
        "message": message,
        "start_state": CardState(role.front_matter.card_state),
        "done_state": done_state,
        "failed_state": failed_state,
    }
    if role.front_matter.verify:
        from loopkit.demo.replay import demo_verification

        title = card.title if card is not None else scratch.run_dir.name
        settings["verification"] = demo_verification(config, role, scratch, tools, title)
    if config.approval_required:
        if not durable:
            raise ConfigError(
                f"approval_required ({', '.join(config.approval_required)}): a call waits for a "
                "person's answer only in a durable run (the queue's workers, or --durable)"
            )
        from loopkit.durable.approval import DurableApprover

        settings["approval_required"] = list(config.approval_required)
        settings["approver"] = DurableApprover(timeout_s=config.approval_timeout)
    if not durable:
        # OTEL_EXPORTER_OTLP_ENDPOINT set: the run is one trace there (docs/observability.md)
        return CardRunner(traced_from_environment(model), sources=sources, retry=retry, **settings)
    from loopkit.builder import ChatClientBuilder
    from loopkit.cards.durable import DurableCardRunner, DurableToolSource
    from loopkit.demo.durable import ScriptPosition
    from loopkit.durable import DurableChatClient
    from loopkit.providers.scripted import ScriptedChatClient

    if isinstance(model, ScriptedChatClient):
        model = ScriptPosition(model)
    if retry is not None:
        model = ChatClientBuilder(model).use_retries(retry).build()
    return DurableCardRunner(
        DurableChatClient(traced_from_environment(model)),
        sources=[DurableToolSource(s) for s in sources],
        **settings,
    )


def remembered_ui(config: RunnerConfig) -> RememberedToolList | None:
    """The UI server's tool list from an earlier start of the same code, so the first request
    does not wait for the server (which then starts while the run reads the code)."""
    from loopkit.mcp.remembered_tools import RememberedToolList

    ui = config.ui_server
    if ui.command is None:
        return None
    return RememberedToolList.for_python_server(ui.command, cwd=ui.cwd, packages=["loopkit"])


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
) -> int:
    """Run ``card`` in ``role`` (checked by :func:`check_settings` and :func:`read_card`
    before): first line, live line, summary; returns the exit status. ``repo``: continue in the
    repository of an earlier run instead of a new copy of the app; ``message``: comes with the
    card (one that starts with "remember" adds a feedback rule of the role's scope)."""
    ran = await run_card(config, card, console, role=role, repo=repo, message=message)
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

    assert card.path is not None
    card_path = card.path
    console.print(first_line(config, card_path, role.name))
    console.print(role_line(role))
    if not config.scripted:
        from loopkit.providers.litellm import start_background_import

        start_background_import()  # litellm takes seconds to import; overlap it with set-up
    tested = card.state is CardState.IN_TEST and role.front_matter.card_state == "In Test"
    # A tester runs on a card In Test; a pipeline's next run on the state the last one left.
    if card.state not in (CardState.NEW, expected_state) and not tested:
        console.print(
            f"[yellow]note:[/yellow] the card is in state {card.state.value}; running it again"
        )
    if config.durable:
        from loopkit.demo.durable import run_durable_demo

        durable = run_durable_demo(config, card, console, role=role, repo=repo, message=message)
        return DemoOutcome(await durable)
    from loopkit.cards.early_source import EarlyToolSource
    from loopkit.cards.runner import MCPToolSource

    # The UI server takes about a second to start: a role with the UI starts it first, and the
    # model, the scratch repository and the local tools are made meanwhile (in a thread, so the
    # loop runs its start).
    name = f"{card_path.stem}-{role.name}" if repo is not None else card_path.stem
    run_dir = new_run_dir(config.runs_dir, name)
    ui: EarlyToolSource | None = None
    if role.has("ui"):
        ui = EarlyToolSource(MCPToolSource(ui_server_for(config, run_dir)), remembered_ui(config))
        ui.start()
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
