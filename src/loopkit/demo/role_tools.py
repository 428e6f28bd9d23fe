"""A role in a demo run: where roles are found, the tools its groups give, its rules, messages.

The bundled roles are ``loopkit/demo/roles/*.md`` and their reference files
``loopkit/demo/roles/reference/*.md``; the config's ``roles_dir`` (a folder of the user's own role
files, with an optional ``reference/`` folder) comes first, so a user role or reference overrides a
bundled one of the same name.

A role's tool groups decide which tools the model is offered, and only those:

========== ====================================================================
files      list_files, search_files, read_file, edit_file, write_file (edits and writes only
           in the role's ``writes``)
build_app  build_app, run_tests, start_app, stop_app
git        git_commit (commits the writable folders, the notes among them)
ui         every tool of the UI server (the server is not started without it)
memory     the memory tools of the repository's ``notes/`` (loopkit_tools.memory)
tester     record_step, record_finding, write_regression_script, write_test_report
           (loopkit_ui.tester_tools, see :mod:`loopkit.demo.tester`)
========== ====================================================================

Further groups (``id_fixer``) are built by the entries of
:data:`loopkit.demo.card_runner.GROUP_SOURCES`.

``read_reference`` is offered to every role. Every run reads the feedback rules of its role's
scope (and of ``all``) from ``notes/rules.md`` and puts them at the end of the instructions; a
message that comes with a run and starts with "remember" adds a rule before the run starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.tools import ToolError
from loopkit.cards.config import ConfigError, RunnerConfig
from loopkit.cards.references import REFERENCE_FOLDER, ReferenceShelf
from loopkit.cards.roles import Role, RoleCatalog
from loopkit.demo.tool_groups import StaticTools

__all__ = [
    "DEFAULT_ROLE",
    "LOCAL_TOOL_GROUPS",
    "NOTES_FOLDER",
    "ROLE_ALIASES",
    "RoleMemory",
    "bundled_roles_folder",
    "check_message",
    "check_roles_dir",
    "find_role",
    "local_tool_filter",
    "needs_local_tools",
    "reference_shelf",
    "role_catalog",
    "role_instructions",
    "take_message",
    "with_role_limits",
]

#: The role a run takes when none is named.
DEFAULT_ROLE = "develop"
#: Role names of earlier versions, still accepted (durable runs recorded with them).
ROLE_ALIASES = {"developer": DEFAULT_ROLE}
#: The memory's folder in the app's repository.
NOTES_FOLDER = "notes"
#: The group of each local tool; a local tool not named here is in ``files``.
LOCAL_TOOL_GROUPS = {
    "list_files": "files",
    "search_files": "files",
    "read_file": "files",
    "edit_file": "files",
    "write_file": "files",
    "build_app": "build_app",
    "run_tests": "build_app",
    "start_app": "build_app",
    "stop_app": "build_app",
    "git_commit": "git",
}
_LOCAL_GROUPS = ("files", "build_app", "git")
_REMEMBER = re.compile(r"^\s*remember\b[\s,:;.!-]*(?:that\s+)?", re.IGNORECASE)
#: The longest rule the memory takes (loopkit_tools.memory.rules).
MAX_RULE_CHARS = 500


def bundled_roles_folder() -> Path:
    """The folder of the roles shipped with the demo."""
    return Path(str(resources.files("loopkit.demo").joinpath("roles")))


def _folders(config: RunnerConfig) -> list[Path]:
    user = [config.roles_dir] if config.roles_dir is not None else []
    return [*user, bundled_roles_folder()]


def role_catalog(config: RunnerConfig) -> RoleCatalog:
    """The roles a run can take: the user's ``roles_dir`` first, then the bundled ones."""
    return RoleCatalog(_folders(config))


def check_roles_dir(config: RunnerConfig) -> None:
    """``roles_dir``, when set, is a folder."""
    if config.roles_dir is not None and not config.roles_dir.is_dir():
        raise ConfigError(f"roles_dir {config.roles_dir} is not a folder of role files")


def find_role(config: RunnerConfig, name: str) -> Role:
    """The role ``name`` (an old alias too), checked; a :class:`~loopkit.cards.roles.RoleError`
    naming the available roles when there is none, or naming the file and field when its file
    is not valid."""
    check_roles_dir(config)
    return role_catalog(config).get(ROLE_ALIASES.get(name, name))


def reference_shelf(config: RunnerConfig) -> ReferenceShelf:
    """The reference files: the user's ``roles_dir/reference`` first, then the bundled ones."""
    return ReferenceShelf([folder / REFERENCE_FOLDER for folder in _folders(config)])


def local_tool_filter(role: Role) -> Callable[[str], bool]:
    """Whether a local tool (by name) is in one of the role's groups. A role that writes no
    folder (``writes: []``) is not offered write_file nor edit_file, nor git_commit unless its
    memory group gives it ``notes/`` to commit."""
    read_only = not role.front_matter.writes
    writers = ["write_file", "edit_file"]
    hidden = {*writers, *([] if role.has("memory") else ["git_commit"])} if read_only else set()
    return lambda name: name not in hidden and role.has(LOCAL_TOOL_GROUPS.get(name, "files"))


def needs_local_tools(role: Role) -> bool:
    return any(role.has(g) for g in _LOCAL_GROUPS)


class RoleMemory:
    """The memory of a run's repository (``notes/``), from the tools provider's ``MemoryTools``:
    its tools for the ``memory`` group, the rules of the role's scope for every run."""

    def __init__(self, module: ModuleType, repo: Path, index_dir: Path) -> None:
        memory_tools = getattr(module, "MemoryTools", None)
        if memory_tools is None:
            raise ConfigError(
                f"tools_provider {module.__name__!r} has no MemoryTools; the memory and the "
                "feedback rules need it (default: loopkit_tools)"
            )
        self.tools: Any = memory_tools(repo, NOTES_FOLDER, cache_dir=index_dir)

    def rules(self, scope: str) -> list[tuple[int, str]]:
        """The rules of ``scope`` (and of ``all``): their numbers and lines."""
        return [(r.number, r.render()) for r in self.tools.rules.in_scope(scope)]

    def remember(self, message: str, scope: str) -> str | None:
        """Add the rule a "remember ..." ``message`` asks for, in ``scope``; returns what the
        memory answered, or None when the message asks nothing to be remembered."""
        if not _REMEMBER.match(message):
            return None
        try:
            answer: str = self.tools.add_rule(message, scope)
        except ToolError as e:  # the memory refused it (empty, too long): bad input
            raise ConfigError(f"--message: {e}") from None
        return answer

    def close(self) -> None:
        """Close the search index (when the run does not take the tools: :meth:`source`)."""
        self.tools.close()

    def source(self, offered: bool) -> StaticTools:
        """The memory's tools (none when the role is not ``offered`` them); closes the index."""
        return StaticTools(self.tools.tools if offered else [], close=self.tools.close)


def role_instructions(role: Role, rules: Sequence[tuple[int, str]]) -> str:
    """The role's instructions with the feedback rules of its scope at the end."""
    if not rules:
        return role.instructions
    lines = "\n".join(line for _, line in rules)
    return (
        f"{role.instructions.rstrip()}\n\n"
        f"FEEDBACK RULES (scope {role.rules_scope!r} and 'all')\n"
        "-------------------------------------------\n"
        f"{lines}\n"
        "Follow them. In your final message, cite the numbers of the rules you applied "
        '("Applied rules: 1, 3").\n'
    )


def with_role_limits(config: RunnerConfig, role: Role, given: Collection[str] = ()) -> RunnerConfig:
    """``config`` with the role's limits, except those in ``given`` (set on the command line,
    which beats the role)."""
    limits = {k: v for k, v in role.front_matter.limits.given().items() if k not in given}
    return config.model_copy(update=limits) if limits else config


def check_message(message: str | None) -> None:
    """A message that asks to remember something says what, in at most 500 characters
    (:class:`ConfigError` otherwise: bad input, checked before anything starts)."""
    if message is None:
        return
    m = _REMEMBER.match(message)
    if m is None:
        return
    rule = " ".join(message[m.end() :].split())
    if not rule:
        raise ConfigError(f"--message {message!r} says to remember nothing; say what")
    if len(rule) > MAX_RULE_CHARS:
        raise ConfigError(
            f"--message: the rule to remember has {len(rule)} characters; keep a rule under "
            f"{MAX_RULE_CHARS}"
        )


def take_message(
    memory: RoleMemory | None, role: Role, message: str | None, console: Console
) -> str | None:
    """A message that comes with the run: one that starts with "remember" becomes a feedback
    rule of the role's scope (returns None: the rule reaches the model with the rules); any
    other message is returned, to go with the card."""
    if message is None or not message.strip():
        return None
    if memory is None:
        return message
    added = memory.remember(message, role.rules_scope)
    if added is None:
        return message
    console.print(f"[bold]Feedback:[/bold] {escape(added)}")
    return None
