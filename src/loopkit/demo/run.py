"""One demo run: scratch repository, model, tools, the card runner, the summary."""

from __future__ import annotations

import asyncio
import importlib
import os
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.chat import ChatClient
from loopkit.cards import Card, CardState, mark_failed_in_file
from loopkit.config import ConfigError, RunnerConfig
from loopkit.demo.progress import LiveProgress, summary_table
from loopkit.demo.workspace import ScratchRepo, WorkspaceError, create_scratch_repo, slug
from loopkit.errors import CardError, describe_validation_error
from loopkit.middleware.retry import RetryPolicy
from loopkit.middleware.run_log import RunLog
from loopkit.result import RunResult
from loopkit.runner import CardRunner, CardRunOutcome, MCPToolSource, RunLimits, ToolSource

_KEY_VARIABLES = {"anthropic/": "ANTHROPIC_API_KEY", "openai/": "OPENAI_API_KEY"}


def instructions() -> str:
    """The system prompt shipped with the package."""
    return resources.files("loopkit.demo").joinpath("instructions.md").read_text(encoding="utf-8")


def bundled_transcripts() -> dict[str, Path]:
    folder = resources.files("loopkit.demo").joinpath("transcripts")
    return {
        Path(str(entry)).stem: Path(str(entry))
        for entry in folder.iterdir()
        if str(entry).endswith(".json")
    }


def transcript_for(config: RunnerConfig, card_path: Path) -> Path:
    if config.transcript is not None:
        return config.transcript
    available = bundled_transcripts()
    found = available.get(card_path.stem)
    if found is None:
        raise CardError(
            f"the scripted model has no transcript for {card_path.name} (bundled: "
            f"{', '.join(sorted(available)) or 'none'}). Give one with --transcript, or use a "
            "real model with --model / --config."
        )
    return found


def first_line(config: RunnerConfig, card_path: Path) -> str:
    if config.scripted:
        return (
            "[bold]Model: scripted[/bold] (no API key needed): it plays the bundled transcript for "
            f"{escape(card_path.name)}; every tool call is real. For Claude: set "
            "ANTHROPIC_API_KEY and add --config examples/configs/claude.toml; for OpenAI: "
            "OPENAI_API_KEY and --model openai/gpt-5."
        )
    return f"[bold]Model: {escape(config.model)}[/bold] via litellm" + (
        f" at {escape(config.api_base)}" if config.api_base else ""
    )


def make_model(config: RunnerConfig, card_path: Path) -> ChatClient:
    if config.scripted:
        from loopkit.providers.scripted import ScriptedChatClient

        return ScriptedChatClient(transcript_for(config, card_path), strict=config.strict)
    for prefix, variable in _KEY_VARIABLES.items():
        if config.model.startswith(prefix) and not config.api_base and not os.environ.get(variable):
            raise CardError(
                f"model {config.model} needs {variable} in the environment (or an api_base for a "
                "compatible server); without a key, leave --model out to use the scripted model"
            )
    from loopkit.providers.litellm import LiteLLMChatClient

    return LiteLLMChatClient(config.model, api_base=config.api_base)


def local_tools(config: RunnerConfig, scratch: ScratchRepo) -> ToolSource:
    """The local tools from the configured provider module (``loopkit_tools`` by default)."""
    try:
        module = importlib.import_module(config.tools_provider)
    except ImportError as e:
        raise ConfigError(
            f"tools_provider {config.tools_provider!r} cannot be imported: {e}. It names a module "
            "with ToolsConfig and LocalTools (default: loopkit_tools)"
        ) from None
    settings: dict[str, Any] = {
        "root": scratch.repo,
        "read_folders": [scratch.app_folder, "docs"],
        "write_folders": [scratch.app_folder],
        "app_output_file": scratch.run_dir / "app-output.log",
        **config.tools,
    }
    app_env = {
        "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
        "INVOICE_APP_LOG": str(scratch.run_dir / "app.log"),
        **settings.get("app_env", {}),
    }
    settings["app_env"] = app_env
    try:
        tools_config = module.ToolsConfig.model_validate(settings)
    except ValidationError as e:
        raise ConfigError(f"[tools]: {describe_validation_error(e)}") from None
    tools: ToolSource = module.LocalTools(tools_config)
    return tools


async def run_demo(config: RunnerConfig, card_path: Path, console: Console) -> int:
    """Run ``card_path``: first line, live line, summary; returns the exit code."""
    console.print(first_line(config, card_path))
    if not config.scripted:
        from loopkit.providers.litellm import start_background_import

        start_background_import()  # litellm takes seconds to import; overlap it with set-up
    runs_dir = config.runs_dir
    runs_dir.mkdir(parents=True, exist_ok=True)
    try:
        card = Card.load(card_path)
    except CardError as e:
        log_path = config.log or runs_dir / f"{slug(card_path.stem)}-invalid-card.jsonl"
        with RunLog(log_path) as log:
            log.result("failed", str(e), card_state=CardState.FAILED.value)
        marked = mark_failed_in_file(card_path)
        console.print(
            summary_table(
                status="failed",
                reason=str(e),
                totals=log.totals(),
                card_state="Failed" if marked else "unchanged (the file has no front matter)",
                commit=None,
                log_path=str(log_path),
                repo="none",
            )
        )
        return 2
    if card.state is not CardState.NEW:
        console.print(
            f"[yellow]note:[/yellow] the card is in state {card.state.value}; running it again"
        )
    try:
        model = make_model(config, card_path)
        scratch = create_scratch_repo(config.app_source, runs_dir, card_path.stem)
        tools = local_tools(config, scratch)
    except (WorkspaceError, CardError, ConfigError, OSError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return 2
    log_path = config.log or scratch.run_dir / "run.jsonl"
    base = scratch.head()
    with RunLog(log_path) as log:
        ui_server = config.ui_server
        if ui_server.command is not None:
            # Trees and screenshots of this run go into its folder.
            ui_env = {"LOOPKIT_UI_OUTPUT_DIR": str(scratch.run_dir / "ui"), **ui_server.env}
            ui_server = ui_server.model_copy(update={"env": ui_env})
        sources: list[ToolSource] = [tools, MCPToolSource(ui_server)]
        runner = CardRunner(
            model,
            instructions=instructions(),
            sources=sources,
            log=log,
            limits=RunLimits(config.max_rounds, config.max_tokens, config.max_output_tokens),
            retry=None if config.scripted else RetryPolicy(max_attempts=config.retries),
            model_name=config.model,
            sampling={"temperature": config.temperature} if config.temperature is not None else {},
        )
        progress = LiveProgress(console, config.max_rounds)
        log.subscribe(progress.on_event)
        interrupted = False
        with progress:
            try:
                outcome = await runner.run(card)
            except asyncio.CancelledError:
                # The runner has marked the card Failed and written the result line.
                interrupted = True
                outcome = CardRunOutcome(
                    result=RunResult(status="failed", reason="the run was interrupted"),
                    card=Card.load(card_path),
                    totals=log.totals(),
                )
    commits = scratch.commits_since(base)
    commit = commits[0].describe() if commits else None
    result: RunResult = outcome.result
    console.print(
        summary_table(
            status=result.status,
            reason=result.reason,
            totals=outcome.totals,
            card_state=outcome.card.state.value if outcome.card else "Failed",
            commit=commit,
            log_path=str(log_path),
            repo=str(scratch.repo),
        )
    )
    if interrupted:
        return 130
    return 0 if result.done else 1
