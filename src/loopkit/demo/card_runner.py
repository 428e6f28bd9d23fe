"""The card runner of a demo run: the role's tools (local tools, the UI server, the tester's, the
memory, further groups from :data:`GROUP_SOURCES`), its instructions and rules, the limits, retries
for a real model; in a durable run the durable runner, whose model requests and tool calls are
checkpoints. The in-process run (:mod:`loopkit.demo.run`) and the durable workflow
(:mod:`loopkit.demo.card_run_workflow`) both build their runner here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.chat import ChatClient
from loopkit.cards import Card, CardState, ConfigError, RunnerConfig
from loopkit.cards.roles import Role
from loopkit.demo.id_fixer_tools import GROUP as ID_FIXER_GROUP
from loopkit.demo.id_fixer_tools import id_fixer_group
from loopkit.demo.model import ScriptPosition
from loopkit.demo.role_tools import (
    DEFAULT_ROLE,
    RoleMemory,
    find_role,
    local_tool_filter,
    needs_local_tools,
    reference_shelf,
    role_instructions,
)
from loopkit.demo.tester import tester_tools
from loopkit.demo.tool_groups import GroupContext, GroupSource, SelectedTools, StaticTools
from loopkit.demo.workspace import ScratchRepo

if TYPE_CHECKING:
    from loopkit.cards import CardRunner, ToolSource
    from loopkit.cards.early_source import EarlyToolSource
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.remembered_tools import RememberedToolList
    from loopkit.mcp.waiting_server import WaitingPythonServer
    from loopkit.middleware.run_log import RunLog

__all__ = [
    "GROUP_SOURCES",
    "card_runner",
    "early_ui",
    "extra_group_sources",
    "remembered_ui",
    "ui_server_for",
]

# The runner (the agent layer, MCP, retries, the run log) is imported by the functions that use it:
# the process that only checks the settings and starts the headless desktop never needs it.

#: Builders of the tool sources of further groups (beyond files, build_app, git, ui, memory),
#: by group name: a new group is a name in ``loopkit.cards.roles.TOOL_GROUPS`` and an entry
#: here; :func:`card_runner` adds the source of every such group the role has.
GROUP_SOURCES: dict[str, GroupSource] = {ID_FIXER_GROUP: id_fixer_group}


def extra_group_sources(context: GroupContext) -> list[ToolSource]:
    """The sources of the role's groups that :data:`GROUP_SOURCES` builds."""
    return [build(context) for group, build in GROUP_SOURCES.items() if context.role.has(group)]


def ui_server_for(config: RunnerConfig, run_dir: Path) -> MCPServerConfig:
    """The UI server of a run: its trees and screenshots go into the run's folder."""
    ui_server = config.ui_server
    if ui_server.command is not None:
        ui_env = {"LOOPKIT_UI_OUTPUT_DIR": str(run_dir / "ui"), **ui_server.env}
        ui_server = ui_server.model_copy(update={"env": ui_env})
    return ui_server


def remembered_ui(config: RunnerConfig) -> RememberedToolList | None:
    """The UI server's tool list from an earlier start of the same code, so the first request
    does not wait for the server (which then starts while the run reads the code)."""
    from loopkit.mcp.remembered_tools import RememberedToolList

    ui = config.ui_server
    if ui.command is None:
        return None
    return RememberedToolList.for_python_server(ui.command, cwd=ui.cwd, packages=["loopkit"])


def early_ui(
    config: RunnerConfig, run_dir: Path, prestarted: WaitingPythonServer | None = None
) -> EarlyToolSource:
    """The run's UI server (its trees and screenshots in ``run_dir``), starting now: it takes
    about a second to start, so a role with the UI starts it first; its remembered tool list
    lets the first request go without waiting for it. ``prestarted``: the server started by
    the command before its checks (:func:`start_waiting_ui_server`), used when it runs the
    configured command."""
    from loopkit.cards.early_source import EarlyToolSource
    from loopkit.cards.runner import MCPToolSource

    source = MCPToolSource(ui_server_for(config, run_dir), prestarted=prestarted)
    ui = EarlyToolSource(source, remembered_ui(config))
    ui.start()
    return ui


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
