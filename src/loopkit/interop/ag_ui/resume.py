"""Taking up, after a restart of the server, a run that paused for the front-end.

The paused run's task died with the old process; what it waited on is in the thread's session
(:data:`~loopkit.interop.ag_ui.runs.PENDING_KEY`): the input not yet stored, the model's answer
of the paused round (its text and calls) and the frontend tools' names. The new process answers
the round's calls (the client's answers for frontend tools and approvals; the other tools run
here, again if the old process had already run them before it stopped: a call of the paused
round is run at least once, like a durable run's step in flight), then goes on with the agent
from there, in the same session.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    FunctionCallContent,
    FunctionResultContent,
)
from loopkit.abstractions.tools import Tool, ToolError
from loopkit.agents.events import AgentEvent, ToolResultReceived
from loopkit.middleware.tool_results import (
    cut_result,
    failure_text,
    not_approved_text,
    tool_result_to_text,
    unknown_tool_text,
)

if TYPE_CHECKING:
    from loopkit.agents.agent import Agent
    from loopkit.interop.ag_ui.runs import LiveRun

__all__ = ["answer_paused_round", "stored_wait"]


def stored_wait(pending: Any) -> tuple[list[ChatMessage], ChatMessage, list[str]]:
    """(inputs, the paused round's step, frontend tool names) from the session's metadata;
    ValueError when it is not what this module wrote."""
    try:
        inputs = [ChatMessage.model_validate(m) for m in pending["inputs"]]
        step = ChatMessage.model_validate(pending["step"])
        frontend = [str(name) for name in pending["frontend"]]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(
            f"the thread's stored wait cannot be read ({type(e).__name__}: {e}); clear the "
            "session's 'ag_ui_pending' metadata to start the thread over"
        ) from None
    return inputs, step, frontend


async def answer_paused_round(
    agent: Agent[Any],
    live: LiveRun,
    step: ChatMessage,
    frontend_tools: Sequence[Tool],
) -> AsyncIterator[AgentEvent[Any]]:
    """The events of the paused round's remaining work (its tool results), then of the agent's
    run from there."""
    tools: dict[str, Tool] = {t.name: t for t in agent.options.tools}
    tools.update({t.name: t for t in frontend_tools})
    options = agent.pipeline.options
    results: list[Content] = []
    for call in step.function_calls:
        text, error = await _answer(agent, live, call, tools)
        result = FunctionResultContent(
            call_id=call.call_id, result=cut_result(text, options.max_result_chars), error=error
        )
        results.append(result)
        yield ToolResultReceived(round=0, name=call.name, result=result)
    answered = ChatMessage(role=ChatRole.TOOL, contents=results)
    prompt = [*live.pending_inputs, step, answered]
    live.pending_inputs = prompt  # stored with the first step of the run below
    async for event in agent.run_stream(prompt, session=live.session, tools=frontend_tools):
        yield event


async def _answer(
    agent: Agent[Any], live: LiveRun, call: FunctionCallContent, tools: dict[str, Tool]
) -> tuple[str, bool]:
    """One call's result as the loop would have written it: (text, error)."""
    options = agent.pipeline.options
    tool = tools.get(call.name)
    if tool is None:
        return unknown_tool_text(call.name, tools), True
    if call.arguments_error is not None:
        return f"Error: {call.arguments_error}", True
    if call.name in options.approval_required and options.approver is not None:
        decision = options.approver(call)
        if inspect.isawaitable(decision):
            decision = await decision
        if not decision:
            return not_approved_text(call.name), True
    try:
        return tool_result_to_text(await tool.invoke(call.arguments)), False
    except ToolError as e:
        return f"Error: {e}", True
    except Exception as e:
        if getattr(e, "terminates_run", False):
            raise  # as in the loop: a dead MCP server ends the run
        return failure_text(call.name, e, options.include_detailed_errors), True
