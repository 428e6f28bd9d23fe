"""The id fixer: a subagent that adds missing accessible ids (AutomationIds) in the source.

The main agent finds the controls without an id in the live tree (the UI server's
``ui_missing_ids``, which also writes the task) and hands the task to this subagent through one
tool, ``fix_missing_ids``. The subagent is an :class:`~loopkit.agents.Agent` used as a tool
(:meth:`~loopkit.agents.Agent.as_tool`): each call is a child run with its own limits and token
budget, whose run-log lines carry the parent's run id. It has the file tools only
(``list_files``, ``read_file``, ``write_file`` of :class:`~loopkit_tools.LocalTools`, under the
same workspace guard): no UI, build, app or git tool. The main agent builds, checks the new ids
in the live tree, writes a note and commits.

Usage::

    async with IdFixer(model, ToolsConfig(root=repo, write_folders=["app"]), log=run_log) as fixer:
        agent = Agent(model, tools=[*fixer.tools, ...])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from loopkit.abstractions import Tool, ToolError
from loopkit.abstractions.chat import ChatClient
from loopkit.agents.agent import Agent
from loopkit.builder import ChatClientBuilder
from loopkit_tools.config import ToolsConfig
from loopkit_tools.local_tools import LocalTools

if TYPE_CHECKING:
    from loopkit.middleware.run_log import RunLog

__all__ = ["FILE_TOOLS", "ID_FIXER_INSTRUCTIONS", "ID_FIXER_TOOL", "MAX_IDS_A_RUN", "IdFixer"]

#: The tool the main agent calls.
ID_FIXER_TOOL = "fix_missing_ids"
#: The only tools the subagent gets.
FILE_TOOLS = ("list_files", "read_file", "write_file")
#: The most controls one run of the subagent gives an id (the UI server's task names no more).
MAX_IDS_A_RUN = 50

ID_FIXER_INSTRUCTIONS = f"""\
You add missing accessible ids (AutomationIds) to controls in the source code of a desktop app.
The task (the user message) lists the controls the live accessibility tree shows without an id:
their role, name, text, parent, the id of the nearest ancestor that has one, and their path.

You have file tools only: list_files, read_file, write_file. There is no shell, no build and no
UI: the agent that gave you the task builds the app and checks the ids in the live tree.

HOW TO WORK
1. Read the project's coding rules first if there are any (e.g. docs/CODING.md): how the code
   sets ids (Qt: setAccessibleIdentifier, and setObjectName with the same id).
2. Find where each listed control is created: search the files for its name or text and for the
   id of its nearest ancestor; read the code around it.
3. Name each id from area, control type and purpose, in the style of the ids that exist
   (PascalCase: area, purpose, then control type, e.g. CustomerSaveButton, DiscountInputLabel).
   Ids are unique in the app: never reuse one that exists.
4. Add only the lines that set the ids, right after the line that creates the control (or at
   the start of its constructor for the class itself), indented like the code there. Change
   nothing else: no other line changed, removed, moved or reformatted; no new imports, no
   helper functions, no behaviour change.
5. Write each file once, with all its new ids (write_file takes the complete file content).

LIMITS
- At most {MAX_IDS_A_RUN} controls a run; do only the controls the task lists.
- A control you cannot find in the source: leave it and say so.

Your final message: one line per control, `<control> -> <Id> (<file>)`, then the controls you
could not find, if any.
"""

AnyModel: TypeAlias = ChatClient | ChatClientBuilder
ModelSource: TypeAlias = AnyModel | Callable[[], AnyModel]


class IdFixer:
    """The id fixer as a tool source: ``tools`` is one tool, ``fix_missing_ids``, that runs the
    subagent on the task the calling model writes (an async context manager, like
    :class:`~loopkit_tools.LocalTools`).

    Args:
        model: the subagent's model: a client, a :class:`~loopkit.ChatClientBuilder` with its
            middleware, or a function that makes one on the first call (an error it raises,
            ``ValueError`` or ``OSError``, is the tool's error, so a run without the subagent's
            model can still do everything else).
        config: the workspace of the file tools (the same guard as the main agent's).
        log: the run log; the child run's lines go there (with ``parent_run_id``).
        name: the tool's name.
        max_rounds, max_tokens: the limits of one child run.
        max_child_runs: how many times one run of the main agent may call the subagent.
        max_output_tokens: per request (the subagent writes whole files).
        model_id: the model id to ask for (``ChatOptions.model_id``), when the client needs one.
    """

    def __init__(
        self,
        model: ModelSource,
        config: ToolsConfig,
        *,
        log: RunLog | None = None,
        name: str = ID_FIXER_TOOL,
        max_rounds: int = 30,
        max_tokens: int = 200_000,
        max_child_runs: int = 3,
        max_output_tokens: int | None = None,
        model_id: str | None = None,
    ) -> None:
        self._model = model
        self._log = log
        self._files = LocalTools(config)
        self._settings: dict[str, Any] = {
            "max_rounds": max_rounds,
            "max_tokens": max_tokens,
            "max_output_tokens": max_output_tokens,
            "model_id": model_id,
        }
        self._max_child_runs = max_child_runs
        self.name = name
        self.file_tools: list[Tool] = [
            _AddOnlyWrite(t, self._files) if t.name == "write_file" else t
            for t in self._files.tools
            if t.name in FILE_TOOLS
        ]
        """The subagent's tools: the file tools, nothing else; its ``write_file`` only adds
        lines to a file that exists (every line there stays, in its place)."""
        self._tool: Tool | None = None
        self.tools: list[Tool] = [_LazyAgentTool(self)]
        """The one tool for the main agent."""

    def agent(self) -> Agent[str]:
        """The subagent (its model made now, if ``model`` is a function)."""
        model = self._model
        if not isinstance(model, ChatClient | ChatClientBuilder):
            model = model()
        if self._log is not None:
            builder = model if isinstance(model, ChatClientBuilder) else ChatClientBuilder(model)
            model = builder.use_run_log(self._log)
        from loopkit.abstractions.chat import ChatOptions

        model_id = self._settings["model_id"]
        return Agent(
            model,
            instructions=ID_FIXER_INSTRUCTIONS,
            tools=self.file_tools,
            name="id_fixer",
            max_rounds=self._settings["max_rounds"],
            max_tokens=self._settings["max_tokens"],
            max_output_tokens=self._settings["max_output_tokens"],
            include_detailed_errors=True,
            options=ChatOptions(model_id=model_id) if model_id else None,
        )

    def tool(self) -> Tool:
        """The subagent as a tool (made on first use)."""
        if self._tool is None:
            self._tool = self.agent().as_tool(
                self.name,
                _DESCRIPTION,
                max_depth=1,
                max_child_runs=self._max_child_runs,
            )
        return self._tool

    async def __aenter__(self) -> IdFixer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._files.aclose()


_DESCRIPTION = (
    "Hand the task text of ui_missing_ids to the id fixer, a subagent with file tools only: it "
    "finds each listed control in the source and adds an id named from area, control type and "
    f"purpose, changing nothing else (at most {MAX_IDS_A_RUN} controls a run). It answers which "
    "id it gave each control, in which file. Then build, check the ids in the live tree and "
    "commit: the subagent cannot."
)


class _AddOnlyWrite:
    """``write_file`` for the id fixer: the new content keeps every line of the existing file,
    in order, and only adds lines; anything else is refused before the file is touched. "Change
    nothing else" is then the tool's guarantee, not only the instructions' request."""

    def __init__(self, inner: Tool, files: LocalTools) -> None:
        self._inner = inner
        self._files = files
        self.name = inner.name
        self.description = (
            f"{inner.description} The id fixer may only add lines to a file that exists: every "
            "line there must stay as it is, in its place."
        )
        self.parameters = inner.parameters

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        path, content = arguments.get("path"), arguments.get("content")
        if isinstance(path, str) and isinstance(content, str):
            old = self._files.guard.read_text(path)  # refused (a ToolError) when it is missing
            lost = _first_lost_line(old.splitlines(), content.splitlines())
            if lost is not None:
                raise ToolError(
                    f"write_file refused: {path} line {lost + 1} "
                    f"({old.splitlines()[lost].strip()!r}) is changed, moved or missing in the "
                    "new content. Only add the lines that set ids; keep every other line exactly "
                    "as it is. Read the file again and write it whole."
                )
        return await self._inner.invoke(arguments)


def _first_lost_line(old: list[str], new: list[str]) -> int | None:
    """The index of the first line of ``old`` that ``new`` does not keep in order (``old`` is
    not a subsequence of ``new``), or None when ``new`` only adds lines."""
    kept = 0
    for line in new:
        if kept < len(old) and line == old[kept]:
            kept += 1
    return None if kept == len(old) else kept


# A numbered control of the task ("12. push button 'Save': ..."), as ui_missing_ids lists them.
_LISTED = re.compile(r"^\s*\d+\. ", re.MULTILINE)


class _LazyAgentTool:
    """``fix_missing_ids`` before its agent exists: the agent (and its model) is made on the
    first call, so a run that never calls it never needs the subagent's model."""

    def __init__(self, fixer: IdFixer) -> None:
        self._fixer = fixer
        self.name = fixer.name
        self.description = _DESCRIPTION
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "the task text of ui_missing_ids, as it is (the subagent "
                    "does not see this conversation)",
                }
            },
            "required": ["task"],
            "additionalProperties": False,
        }

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        task = arguments.get("task")
        listed = len(_LISTED.findall(task)) if isinstance(task, str) else 0
        if listed > MAX_IDS_A_RUN:
            raise ToolError(
                f"{self.name}: the task lists {listed} controls; the id fixer takes at most "
                f"{MAX_IDS_A_RUN} a run. Call ui_missing_ids (limit {MAX_IDS_A_RUN} at most) and "
                "hand over its task; the rest waits for the next run."
            )
        try:
            tool = self._fixer.tool()
        except (ValueError, OSError) as e:
            raise ToolError(f"{self.name} cannot start the id fixer: {e}") from None
        return await tool.invoke(arguments)
