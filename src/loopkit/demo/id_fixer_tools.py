"""The ``id_fixer`` tool group of a demo run: the demo's wiring of the subagent that adds missing
ids in the source (:class:`loopkit_tools.id_fixer.IdFixer`, file tools only), offered to the main
agent as one tool, ``fix_missing_ids``.

Its model: with a real model, the same model as the main agent (a new client of the same model
string, with the same retries); with the scripted model, a transcript of its own, the child run's:
``id_fixer/<name>`` beside the transcript the main agent plays (for the bundled
``transcripts/<card>.json``: ``transcripts/id_fixer/<card>.json``). It is loaded when the main
agent first calls the tool, so a run that never calls it needs none; a missing one is that call's
error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.demo.tool_groups import GroupContext
from loopkit.demo.tool_provider import tools_config

if TYPE_CHECKING:
    from loopkit.abstractions.chat import ChatClient
    from loopkit.builder import ChatClientBuilder
    from loopkit.cards import RunnerConfig, ToolSource
    from loopkit.middleware.run_log import RunLog

__all__ = ["GROUP", "child_transcript", "id_fixer_group", "id_fixer_model", "id_fixer_source"]

#: The tool group's name in a role's front matter.
GROUP = "id_fixer"


def child_transcript(parent: Path) -> Path:
    """The id fixer's transcript for the main agent's transcript ``parent``."""
    return parent.parent / GROUP / parent.name


def id_fixer_model(
    config: RunnerConfig, parent_transcript: Path | None
) -> ChatClient | ChatClientBuilder:
    """The subagent's model (see the module): raises ``ValueError`` when the scripted model has
    no transcript for it."""
    if config.scripted:
        from loopkit.providers.scripted import ScriptedChatClient

        if parent_transcript is None:
            raise ValueError("the scripted model plays no transcript, so the id fixer has none")
        path = child_transcript(parent_transcript)
        if not path.is_file():
            raise ValueError(
                f"the scripted model has no transcript for the id fixer: {path} does not exist "
                f"(it is {GROUP}/{parent_transcript.name} beside the main transcript)"
            )
        return ScriptedChatClient(path, strict=config.strict)
    from loopkit.builder import ChatClientBuilder
    from loopkit.middleware.retry import RetryPolicy
    from loopkit.providers.litellm import LiteLLMChatClient

    client = LiteLLMChatClient(
        config.model, api_base=config.api_base, timeout=config.request_timeout
    )
    return ChatClientBuilder(client).use_retries(RetryPolicy(max_attempts=config.retries))


def id_fixer_source(
    config: RunnerConfig,
    tools_settings: Any,
    log: RunLog | None,
    *,
    parent_transcript: Path | None = None,
    model: Callable[[], ChatClient | ChatClientBuilder] | None = None,
) -> ToolSource:
    """The group's tool source: ``fix_missing_ids`` over the file tools of ``tools_settings``
    (the run's validated ``ToolsConfig``: the same workspace guard as the main agent's); the
    child run's lines go into ``log``; ``model`` makes the subagent's model (default: see
    :func:`id_fixer_model`)."""
    from loopkit_tools.id_fixer import IdFixer

    return IdFixer(
        model or (lambda: id_fixer_model(config, parent_transcript)),
        tools_settings,
        log=log,
        max_output_tokens=config.max_output_tokens,
        model_id=config.model,
    )


def id_fixer_group(context: GroupContext) -> ToolSource:
    """The ``id_fixer`` group of a run (``loopkit.demo.card_runner.GROUP_SOURCES``): the id
    fixer over the run's own tools settings (its workspace guard), writing only in the role's
    ``writes`` (not in the notes: the main agent writes those). A role that writes no folder
    gets the tool, and each call says it cannot change anything."""
    _, settings = tools_config(
        context.config,
        root=context.repo,
        app_folder=context.app_folder,
        run_dir=context.run_dir,
        role=context.role,
    )
    writes = context.role.write_folders(context.app_folder)
    if not writes:
        role = context.role.name

        def refused() -> ChatClient:
            raise ValueError(f"the role {role!r} writes no folder: the id fixer may change nothing")

        return id_fixer_source(context.config, settings, context.log, model=refused)
    settings = settings.model_copy(update={"write_folders": writes})
    return id_fixer_source(
        context.config, settings, context.log, parent_transcript=context.transcript
    )
