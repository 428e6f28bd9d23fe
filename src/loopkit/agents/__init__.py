"""Agents: a model with instructions, tools, limits and a typed output, run many times.

``Agent(model, instructions=..., tools=[...], output_type=...)``; ``await agent.run(prompt)``
returns an :class:`AgentRunResult`; ``agent.run_stream(prompt)`` yields typed events;
``agent.as_tool(name, description)`` makes it a subagent of another agent.
"""

from __future__ import annotations

from loopkit.agents.agent import Agent, AgentSettings, Prompt
from loopkit.agents.as_tool import AgentTool
from loopkit.agents.events import (
    AgentEvent,
    FinalResult,
    RoundFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
)
from loopkit.agents.output import OutputSpec
from loopkit.agents.result import AgentRunResult
from loopkit.agents.stream import AgentStream

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentRunResult",
    "AgentSettings",
    "AgentStream",
    "AgentTool",
    "FinalResult",
    "OutputSpec",
    "Prompt",
    "RoundFinished",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultReceived",
]
