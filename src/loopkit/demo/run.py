"""One demo run: settings checked, scratch repository, model, tools, the card runner, the summary.

Everything a user can get wrong (the config, ``[tools]``, the tools provider, ``--log``, the
transcript, the app source, the card file) is checked by :func:`check_settings` and
:func:`read_card` before a desktop starts or anything is created; bad input is exit status 2.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import stat
import sys
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.chat import ChatClient
from loopkit.cards import (
    Card,
    CardState,
    ConfigError,
    RunnerConfig,
    mark_failed_in_file,
    read_card_text,
)
from loopkit.cards.roles import Role
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
from loopkit.demo.tester import tester_tools
from loopkit.demo.workspace import (
    ScratchRepo,
    WorkspaceError,
    check_app_source,
    check_earlier_repo,
    create_scratch_repo,
    new_run_dir,
    open_scratch_repo,
    slug,
)
from loopkit.errors import CardError, describe_validation_error

if TYPE_CHECKING:
    from loopkit.cards import CardRunner, ToolSource
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.remembered_tools import RememberedToolList
    from loopkit.middleware.run_log import RunLog

# The runner (the agent layer, MCP, retries, the run log) is imported by the functions that use it:
# the process that only checks the settings and starts the headless desktop never needs it.

_KEY_VARIABLES = {"anthropic/": "ANTHROPIC_API_KEY", "openai/": "OPENAI_API_KEY"}


def instructions(role: str = DEFAULT_ROLE) -> str:
    """The instructions of a bundled role (the ``develop`` role's by default)."""
    return find_role(RunnerConfig(), role).instructions


def bundled_transcripts(role: str = DEFAULT_ROLE) -> dict[str, Path]:
    """The scripted model's transcripts for ``role`` by card name: ``transcripts/<card>.json``
    for ``develop``, ``transcripts/<role>/<card>.json`` for the other roles."""
    folder = resources.files("loopkit.demo").joinpath("transcripts")
    if role != DEFAULT_ROLE:
        folder = folder.joinpath(role)
        if not folder.is_dir():
            return {}
    return {
        Path(str(entry)).stem: Path(str(entry))
        for entry in folder.iterdir()
        if str(entry).endswith(".json")
    }


def transcript_for(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> Path:
    """The transcript the scripted model plays: the one given, else the bundled one of the card
    for ``role``."""
    if config.transcript is not None:
        return config.transcript
    available = bundled_transcripts(role)
    found = available.get(card_path.stem)
    if found is None:
        of_role = "" if role == DEFAULT_ROLE else f" in the role {role!r}"
        raise CardError(
            f"the scripted model has no transcript for {card_path.name}{of_role} (bundled: "
            f"{', '.join(sorted(available)) or 'none'}). Give one with --transcript, or use a "
            "real model with --model / --config."
        )
    return found


def first_line(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> str:
    """The run's first line: which model answers, and for the scripted model which transcript
    it plays (the bundled one of the role, or the file given) and whether it checks every tool
    result."""
    if config.scripted:
        of_role = "" if role == DEFAULT_ROLE else f"{escape(role)} "
        played = (
            f"the transcript {escape(str(config.transcript))}"
            if config.transcript is not None
            else f"the bundled {of_role}transcript for {escape(card_path.name)}"
        )
        mode = "strict: every tool result checked" if config.strict else "lenient: unchecked"
        return (
            f"[bold]Model: scripted[/bold] (no API key needed): it plays {played} ({mode}); "
            "every tool call is real. For Claude: set ANTHROPIC_API_KEY and add --config "
            "examples/configs/claude.toml; for OpenAI: OPENAI_API_KEY and --model openai/gpt-5."
        )
    return f"[bold]Model: {escape(config.model)}[/bold] via litellm" + (
        f" at {escape(config.api_base)}" if config.api_base else ""
    )


def _check_key(config: RunnerConfig) -> None:
    for prefix, variable in _KEY_VARIABLES.items():
        if config.model.startswith(prefix) and not config.api_base and not os.environ.get(variable):
            raise ConfigError(
                f"model {config.model} needs {variable} in the environment (or an api_base for a "
                "compatible server); without a key, leave --model out to use the scripted model"
            )


def role_line(role: Role) -> str:
    """The run's second line: the role it takes and where its file is."""
    where = f" ({escape(str(role.path))})" if role.path is not None else ""
    return f"[bold]Role: {escape(role.name)}[/bold]{where}: {escape(role.description)}"


def make_model(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> ChatClient:
    """The bare model client the config names (the scripted model plays its transcript)."""
    if config.scripted:
        from loopkit.providers.scripted import ScriptedChatClient

        return ScriptedChatClient(
            transcript_for(config, card_path, role),
            strict=config.strict,
            require_offered=config.strict,
        )
    _check_key(config)
    from loopkit.providers.litellm import LiteLLMChatClient

    return LiteLLMChatClient(config.model, api_base=config.api_base, timeout=config.request_timeout)


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
    tools: ToolSource = module.LocalTools(settings)
    return tools


def role_memory(config: RunnerConfig, scratch: ScratchRepo) -> RoleMemory | None:
    """The memory of the run's repository (None: the tools provider has none). Its search index
    is in the run's folder, outside the repository."""
    module = _tools_module(config)
    if not hasattr(module, "MemoryTools"):
        return None
    return RoleMemory(module, scratch.repo, scratch.run_dir / "memory-index")


def _check_creatable(path: Path, what: str) -> None:
    """``path`` can be created: its nearest existing ancestor is a folder we may write in."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what} {path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path}: cannot create it, {ancestor} is not writable")


def check_log_path(log: Path | None) -> None:
    """The run log can be written at ``log`` (a regular file or a device; never a folder)."""
    if log is None:
        return
    what = "log (--log or `log` in the config)"
    try:
        mode = log.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        _check_creatable(log, what)
        return
    except OSError as e:
        raise ConfigError(f"{what} {log}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} {log} is a directory; expected a file for the JSON-lines log")
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):  # a FIFO would block the run
        raise ConfigError(f"{what} {log} is not a regular file")
    if not os.access(log, os.W_OK):
        raise ConfigError(f"{what} {log} is not writable")


def check_log_destination(config: RunnerConfig) -> None:
    """The run log and the run folders can be written (``log``, ``runs_dir``)."""
    check_log_path(config.log)
    if config.runs_dir.exists() and not config.runs_dir.is_dir():
        raise ConfigError(f"runs_dir {config.runs_dir} is not a folder")
    _check_creatable(config.runs_dir / "run", "runs_dir")


def check_model(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> None:
    """The model can be made: the transcript loads (scripted) or the key is there (litellm)."""
    if not config.scripted:
        _check_key(config)
        return
    from loopkit.providers.scripted import Script

    path = transcript_for(config, card_path, role)
    try:
        Script.load(path)
    except ValueError as e:  # the scripted model's own loader: missing, not JSON, wrong shape
        raise ConfigError(f"transcript (--transcript or `transcript`): {e}") from None


def check_durable(config: RunnerConfig) -> None:
    """Durable runs can start: DBOS is installed and the database setting makes sense (nothing
    is created here)."""
    from loopkit.durable.errors import DurableError
    from loopkit.durable.runtime import DEFAULT_DATABASE_FILE, check_dbos_installed, database_url

    try:
        check_dbos_installed()  # imported later, while the desktop starts (demo/__main__.py)
        url = database_url(config.database_url, default=config.runs_dir / DEFAULT_DATABASE_FILE)
    except DurableError as e:
        raise ConfigError(str(e)) from None
    if url.startswith("sqlite:///"):
        _check_creatable(Path(url.removeprefix("sqlite:///")), "database (durable runs)")


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


def read_card(config: RunnerConfig, card_path: Path) -> str:
    """The card file's text; :class:`CardError` when it cannot be read (missing, a folder, above
    ``max_card_bytes``, not UTF-8): bad input, exit 2, the file is left as it is."""
    return read_card_text(card_path, max_bytes=config.max_card_bytes)


def refuse_invalid_card(
    config: RunnerConfig, card_path: Path, error: CardError, console: Console
) -> int:
    """A card that was read but is not valid: its log says why, it is marked Failed when it has
    front matter, a summary is shown; returns exit status 2."""
    from loopkit.middleware.run_log import RunLog

    runs_dir = config.runs_dir
    runs_dir.mkdir(parents=True, exist_ok=True)
    log_path = config.log or runs_dir / f"{slug(card_path.stem)}-invalid-card.jsonl"
    with RunLog(log_path) as log:
        log.result("failed", str(error), card_state=CardState.FAILED.value)
    marked = mark_failed_in_file(card_path, max_bytes=config.max_card_bytes)
    console.print(
        summary_table(
            status="failed",
            reason=str(error),
            totals=log.totals(),
            card_state="Failed" if marked else "unchanged (the file has no front matter)",
            commit=None,
            log_path=str(log_path),
            repo="none",
        )
    )
    return 2


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
    (a subagent's own transcript lies beside it)."""
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
        sources.append(
            tester or tester_tools(config, scratch, tools, scratch.repo.name, run_log=log.path)
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
        "metadata": {"role": role.name},
        "message": message,
    }
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
    role = role or find_role(config, DEFAULT_ROLE)
    from loopkit.cards import CardRunOutcome, RunResult
    from loopkit.middleware.run_log import RunLog
    from loopkit.middleware.transcript_recorder import TranscriptRecorder

    assert card.path is not None
    card_path = card.path
    console.print(first_line(config, card_path, role.name))
    console.print(role_line(role))
    if not config.scripted:
        from loopkit.providers.litellm import start_background_import

        start_background_import()  # litellm takes seconds to import; overlap it with set-up
    if card.state is not CardState.NEW:
        console.print(
            f"[yellow]note:[/yellow] the card is in state {card.state.value}; running it again"
        )
    if config.durable:
        from loopkit.demo.durable import run_durable_demo

        return await run_durable_demo(config, card, console, role=role, repo=repo, message=message)
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
            tester_tools(config, scratch, tools, card.title, run_log=log_path)
            if role.has("tester")
            else None
        )
    except (WorkspaceError, CardError, ConfigError, OSError) as e:
        if ui is not None:
            await ui.aclose()
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return 2
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
                tester=tester, ui=ui, transcript=played,
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
    if recorder is not None and config.record_transcript is not None:
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
        )
    )
    report = getattr(tester, "report_path", None)
    if report is not None:
        console.print(f"[bold]Test report:[/bold] {escape(str(report))}")
    if interrupted:
        return 130
    return 0 if result.done else 1
