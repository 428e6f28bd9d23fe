"""What :meth:`Agent.run_stream <loopkit.agents.Agent.run_stream>` yields: typed events, each a
small pydantic model with a ``type`` discriminator (so a stream serialises to JSON as it is,
e.g. for a browser).

Order within a round: the model's ``TextDelta``\\ s and ``ToolCallStarted``\\ s as they stream,
then a ``ToolResultReceived`` per call once the tools ran, then ``RoundFinished``; after the
last round, one ``FinalResult`` carrying the :class:`~loopkit.agents.AgentRunResult`.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, SkipValidation

from loopkit.abstractions.content import FunctionCallContent, FunctionResultContent, UsageDetails
from loopkit.agents.result import AgentRunResult

__all__ = [
    "AgentEvent",
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
