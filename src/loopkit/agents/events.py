"""What :meth:`Agent.run_stream <loopkit.agents.Agent.run_stream>` yields: typed events, each a
small pydantic model with a ``type`` discriminator (so a stream serialises to JSON as it is,
e.g. for a browser).

Order within a round: the model's ``TextDelta``\\ s and ``ToolCallStarted``\\ s as they stream,
then a ``ToolResultReceived`` per call once the tools ran, then ``RoundFinished``; after the
last round, one ``FinalResult`` carrying the :class:`~loopkit.agents.AgentRunResult`.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, SkipValidation

from loopkit.abstractions.chat import ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UsageContent,
    UsageDetails,
)
from loopkit.agents.result import AgentRunResult
from loopkit.run_context import RunContext

__all__ = [
    "AgentEvent",
    "EventMaker",
    "FinalResult",
    "RoundFinished",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultReceived",
]

OutputT = TypeVar("OutputT")


class TextDelta(BaseModel):
    """A piece of the model's text, as it streams."""

    type: Literal["text_delta"] = "text_delta"
    #: The round (model request of the run) the text belongs to, from 1.
    round: int
    text: str


class ToolCallStarted(BaseModel):
    """The model called a tool (it runs once the model's answer is complete)."""

    type: Literal["tool_call"] = "tool_call"
    round: int
    call: FunctionCallContent


class ToolResultReceived(BaseModel):
    """A tool call's result, as the model will read it."""

    type: Literal["tool_result"] = "tool_result"
    round: int
    #: The tool's name (the result itself carries only the call id).
    name: str
    result: FunctionResultContent


class RoundFinished(BaseModel):
    """One round is over: the model answered and the tools it called have run."""

    type: Literal["round_finished"] = "round_finished"
    round: int
    #: The round's tokens, when the model reported them.
    usage: UsageDetails | None = None
    #: Tool calls the model made in the round.
    tool_calls: int = 0


class FinalResult(BaseModel, Generic[OutputT]):
    """The run is over; ``result`` is what :meth:`Agent.run` would have returned."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    type: Literal["final_result"] = "final_result"
    result: SkipValidation[AgentRunResult[OutputT]]


#: Any event of an agent's stream.
AgentEvent: TypeAlias = (
    TextDelta | ToolCallStarted | ToolResultReceived | RoundFinished | FinalResult[OutputT]
)


class EventMaker:
    """Turns the loop's streamed updates into the events above, for one run.

    A round's text and calls become :class:`TextDelta` and :class:`ToolCallStarted`; the tool
    message that follows, :class:`ToolResultReceived`\\ s; the next round's first update (or the
    end of the stream) closes the round with :class:`RoundFinished`. Round numbers are the run's
    (:attr:`RunContext.rounds <loopkit.run_context.RunContext.rounds>`), so they continue across
    an agent's output retries.
    """

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.round = 0
        self.open = False
        self.after_tools = False
        self.usage: UsageDetails | None = None
        self.calls = 0
        self.names: dict[str, str] = {}

    def _finish_round(self) -> RoundFinished:
        event = RoundFinished(round=self.round, usage=self.usage, tool_calls=self.calls)
        self.open = self.after_tools = False
        self.usage, self.calls = None, 0
        return event

    def feed(self, update: ChatResponseUpdate) -> list[AgentEvent[Any]]:
        """The events ``update`` stands for (often none or one)."""
        events: list[AgentEvent[Any]] = []
        if update.role == ChatRole.TOOL:
            for c in update.contents:
                if isinstance(c, FunctionResultContent):
                    name = self.names.get(c.call_id, "")
                    events.append(ToolResultReceived(round=self.round, name=name, result=c))
            self.after_tools = True
            return events
        if self.open and (self.after_tools or self.run.rounds != self.round):
            events.append(self._finish_round())
        if not self.open:
            self.open = True
            self.round = self.run.rounds
        for c in update.contents:
            if isinstance(c, TextContent):
                if c.text:
                    events.append(TextDelta(round=self.round, text=c.text))
            elif isinstance(c, FunctionCallContent):
                self.names[c.call_id] = c.name
                self.calls += 1
                events.append(ToolCallStarted(round=self.round, call=c))
            elif isinstance(c, UsageContent):
                self.usage = c.usage if self.usage is None else self.usage + c.usage
        return events

    def end_of_stream(self) -> list[AgentEvent[Any]]:
        """The events that close the stream of one pipeline call."""
        return [self._finish_round()] if self.open else []
