"""``AgentRunResult``: what one agent run produced."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from loopkit.abstractions.chat import FinishReason
from loopkit.abstractions.content import ChatMessage, ChatRole, UsageDetails

__all__ = ["AgentRunResult"]

OutputT = TypeVar("OutputT")


class AgentRunResult(BaseModel, Generic[OutputT]):
    """The outcome of :meth:`Agent.run <loopkit.agents.Agent.run>`: the typed output and what
    the run did to get it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    #: The final answer as the agent's output type (its text for a text agent).
    output: OutputT
    #: The run's id (in every run-log line and event of the run).
    run_id: str
    #: The run that started this one (an agent used as a tool), if any.
    parent_run_id: str | None = None
    #: The agent's name.
    agent_name: str | None = None
    #: Exactly what this run added to the conversation: its input message(s), then every
    #: assistant and tool message, and, after an answer that did not validate, the message
    #: asking again. The agent's instructions are not among them (they are sent, not stored).
    new_messages: list[ChatMessage] = Field(default_factory=list)
    #: The conversation after the run (the session's or ``history``'s messages, then
    #: ``new_messages``), without the instructions.
    all_messages: list[ChatMessage] = Field(default_factory=list)
    #: Tokens of every model request of the run (child runs count in their own results).
    usage: UsageDetails = Field(default_factory=UsageDetails)
    #: Model requests of the run.
    rounds: int = 0
    #: Tool calls of the run.
    tool_calls: int = 0
    #: Answers that did not validate and were sent back (0 when the first one fit).
    output_retries: int = 0
    #: Why the model stopped its last answer (``stop``, ``length``, ...), as it reported.
    finish_reason: FinishReason | None = None
    #: True when the round limit ended the tool loop (the last answer came without tools).
    max_rounds_reached: bool = False
    #: Tools the model called that do not exist, when the agent stops on them.
    unknown_tools: list[str] = Field(default_factory=list)
    #: The model that wrote the last answer, as the provider named it.
    model_id: str | None = None

    @property
    def text(self) -> str:
        """The text of the last assistant message (the final answer as written)."""
        for message in reversed(self.new_messages):
            if message.role == ChatRole.ASSISTANT and message.text:
                return message.text
        return ""

    def __repr__(self) -> str:
        shown: Any = self.output
        return (
            f"AgentRunResult(output={shown!r}, run_id={self.run_id!r}, rounds={self.rounds}, "
            f"tool_calls={self.tool_calls}, new_messages={len(self.new_messages)})"
        )
