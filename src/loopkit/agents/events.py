"""What :meth:`Agent.run_stream <loopkit.agents.Agent.run_stream>` yields: typed events, each a
small dataclass with a ``type`` discriminator.

Order within a round: the model's ``TextDelta``\\ s and ``ToolCallStarted``\\ s as they stream,
then a ``ToolResultReceived`` per call once the tools ran, then ``RoundFinished``; after the
last round, one ``FinalResult`` carrying the :class:`~loopkit.agents.AgentRunResult`.

Events are plain (slotted) dataclasses, not pydantic models: a streamed run makes several a
round from values that are validated already (the model's contents, the run's counters), and
validating them again made streaming cost several times a plain run. They still serialise as
pydantic models do: ``event.model_dump(mode="json")``, ``event.model_dump_json()`` (e.g. for a
browser), or ``pydantic.TypeAdapter(AgentEvent).dump_json(event)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeAlias, TypeVar

from loopkit.abstractions.chat import ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
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


class _Event:
    """Serialisation for the event dataclasses, as a pydantic model offers it."""

    __slots__ = ()
    _adapters: ClassVar[dict[type, Any]] = {}

    def _adapter(self) -> Any:
        kind = type(self)
        adapter = _Event._adapters.get(kind)
        if adapter is None:
            from pydantic import TypeAdapter

            adapter = _Event._adapters[kind] = TypeAdapter(kind)
        return adapter

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The event as a dict (``mode="json"``: JSON-compatible values only)."""
        dumped: dict[str, Any] = self._adapter().dump_python(self, mode=mode)
        return dumped

    def model_dump_json(self) -> str:
        """The event as a JSON object."""
        text: bytes = self._adapter().dump_json(self)
        return text.decode()


@dataclass(slots=True)
class TextDelta(_Event):
    """A piece of the model's text, as it streams."""

    #: The round (model request of the run) the text belongs to, from 1.
    round: int
    text: str
    type: Literal["text_delta"] = field(default="text_delta", init=False)


@dataclass(slots=True)
class ToolCallStarted(_Event):
    """The model called a tool (it runs once the model's answer is complete)."""

    round: int
    call: FunctionCallContent
    type: Literal["tool_call"] = field(default="tool_call", init=False)


@dataclass(slots=True)
class ToolResultReceived(_Event):
    """A tool call's result, as the model will read it."""

    round: int
    #: The tool's name (the result itself carries only the call id).
    name: str
    result: FunctionResultContent
    type: Literal["tool_result"] = field(default="tool_result", init=False)


@dataclass(slots=True)
class RoundFinished(_Event):
    """One round is over: the model answered and the tools it called have run."""

    round: int
    #: The round's tokens, when the model reported them.
    usage: UsageDetails | None = None
    #: Tool calls the model made in the round.
    tool_calls: int = 0
    type: Literal["round_finished"] = field(default="round_finished", init=False)


@dataclass(slots=True)
class FinalResult(_Event, Generic[OutputT]):
    """The run is over; ``result`` is what :meth:`Agent.run` would have returned."""

    result: AgentRunResult[OutputT]
    type: Literal["final_result"] = field(default="final_result", init=False)


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

    __slots__ = ("after_tools", "calls", "names", "open", "round", "run", "usage")

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.round = 0
        self.open = False
        self.after_tools = False
        self.usage: UsageDetails | None = None
        self.calls = 0
        self.names: dict[str, str] = {}

    def _finish_round(self) -> RoundFinished:
        event = RoundFinished(self.round, self.usage, self.calls)
        self.open = self.after_tools = False
        self.usage, self.calls = None, 0
        return event

    def feed(self, update: ChatResponseUpdate | ChatMessage) -> list[AgentEvent[Any]]:
        """The events ``update`` stands for (often none or one). A tool message (what the loop
        hands an agent in place of the tool update) gives the round's results."""
        events: list[AgentEvent[Any]] = []
        # Exact type tests (isinstance on a pydantic class goes through ABCMeta) and positional
        # constructors: this runs for every update of every streamed run.
        if update.role is _TOOL:
            names = self.names
            for c in update.contents:
                if type(c) is FunctionResultContent:
                    name = names.get(c.call_id, "")
                    events.append(ToolResultReceived(self.round, name, c))
            self.after_tools = True
            return events
        if self.open and (self.after_tools or self.run.rounds != self.round):
            events.append(self._finish_round())
        if not self.open:
            self.open = True
            self.round = self.run.rounds
        for c in update.contents:
            if type(c) is TextContent:
                if c.text:
                    events.append(TextDelta(self.round, c.text))
            elif type(c) is FunctionCallContent:
                self.names[c.call_id] = c.name
                self.calls += 1
                events.append(ToolCallStarted(self.round, c))
            elif type(c) is UsageContent:
                self.usage = c.usage if self.usage is None else self.usage + c.usage
        return events

    def end_of_stream(self) -> list[AgentEvent[Any]]:
        """The events that close the stream of one pipeline call."""
        return [self._finish_round()] if self.open else []


_TOOL = ChatRole.TOOL
