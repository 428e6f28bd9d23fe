"""The tools provider of a demo run (``tools_provider``, ``loopkit_tools`` by default): its
validated ``ToolsConfig`` for a run in a repository, its ``LocalTools`` and its ``MemoryTools``
(the role's memory).

The folders a role's file tools may read and write come from the role (:func:`role_folders`);
``start_app`` waits for the app's window when the UI server names the app.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from loopkit.cards import ConfigError, RunnerConfig
from loopkit.cards.roles import Role
from loopkit.demo.role_tools import NOTES_FOLDER, RoleMemory
from loopkit.demo.workspace import ScratchRepo
from loopkit.errors import describe_validation_error

if TYPE_CHECKING:
    from loopkit.cards import ToolSource

__all__ = ["local_tools", "role_folders", "role_memory", "tools_config"]


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
    ready = getattr(settings, "app_ready", None)
    if getattr(ready, "kind", None) == "window":
        # loopkit_tools does not know the desktop: the UI package's check is passed in (and
        # imported only then, so a provider or a run without it never loads it).
        from loopkit_ui.wait_app import window_shown

        tools: ToolSource = module.LocalTools(settings, window_check=window_shown)
    else:
        tools = module.LocalTools(settings)
    return tools


def role_memory(config: RunnerConfig, scratch: ScratchRepo) -> RoleMemory | None:
    """The memory of the run's repository (None: the tools provider has none). Its search index
    is in the run's folder, outside the repository."""
    module = _tools_module(config)
    if not hasattr(module, "MemoryTools"):
        return None
    return RoleMemory(module, scratch.repo, scratch.run_dir / "memory-index")
