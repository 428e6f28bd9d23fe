"""An agent as a tool of another agent (a subagent): each call is a child run."""

from __future__ import annotations

from typing import Any, Protocol

from loopkit.abstractions.tools import ToolError
from loopkit.errors import LoopkitError, describe_error
from loopkit.run_context import RunContext, current_run

__all__ = ["AgentTool", "Subagent"]


class Subagent(Protocol):
    """What an :class:`AgentTool` needs of the agent it runs (an
    :class:`~loopkit.agents.Agent` has it): a name, a new run, and an answer in that run."""

    @property
    def name(self) -> str: ...

    def new_run(self, metadata: dict[str, Any] | None = None) -> RunContext: ...

    async def answer_in(self, run: RunContext, task: str) -> str: ...


class AgentTool:
    """A :class:`~loopkit.abstractions.tools.Tool` that runs an agent on the ``task`` the
    calling model writes, in a child run of the caller's run, and returns its final text (or
    its output as JSON).

    The child has its own limits and token budget (the child agent's); its run-log lines carry
    ``parent_run_id``, and the parent run emits a ``child_run`` event (``child_run_id``,
    ``name``, ``tool``) before it starts. A call is refused, as a tool error the model reads,
    when the child would be deeper than ``max_depth`` (a top-level run is depth 0, its children
    1) or the calling run has already started ``max_child_runs`` child runs. A child that fails
    (its budget spent, its output invalid, ...) is an error result too, so the parent can go on.
    """

    def __init__(
        self,
        agent: Subagent,
        *,
        name: str | None = None,
        description: str | None = None,
        max_depth: int = 3,
        max_child_runs: int = 16,
    ) -> None:
        if max_depth < 1:
            raise ValueError(
                f"max_depth must be >= 1 (children of a top-level run), got {max_depth}"
            )
        if max_child_runs < 1:
            raise ValueError(f"max_child_runs must be >= 1, got {max_child_runs}")
        self.agent = agent
        self.name = name or agent.name
        self.description = description or (
            f"Ask the {agent.name} agent to do a task and return its answer."
        )
        self.max_depth = max_depth
        self.max_child_runs = max_child_runs
        self._parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task, with everything needed to do it: the agent does "
                    "not see this conversation.",
                }
            },
            "required": ["task"],
            "additionalProperties": False,
        }

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments: one string, ``task``."""
        return self._parameters

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Run the agent on ``arguments["task"]`` in a child run; its answer as text."""
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolError(f"{self.name} needs a task: a non-empty string in the 'task' argument")
        parent = current_run()
        depth = parent.depth + 1 if parent is not None else 1
        if depth > self.max_depth:
            raise ToolError(
                f"{self.name} was not started: it would run at depth {depth}, deeper than the "
                f"maximum of {self.max_depth}. Do the task yourself."
            )
        if parent is not None and parent.child_runs >= self.max_child_runs:
            raise ToolError(
                f"{self.name} was not started: this run has already started "
                f"{parent.child_runs} child runs, the maximum is {self.max_child_runs}. "
                "Do the task yourself or finish with what you have."
            )
        child = self.agent.new_run({"tool": self.name})
        if parent is not None:
            parent.emit(
                "child_run", child_run_id=child.run_id, name=self.agent.name, tool=self.name
            )
        try:
            return await self.agent.answer_in(child, task)
        except LoopkitError as e:
            raise ToolError(f"{self.name} failed: {describe_error(e)}") from e

    def __repr__(self) -> str:
        return f"AgentTool({self.name!r}, agent={self.agent.name!r})"
