"""A round taken up after a restart answers its calls as the loop would have: the same text for
an unknown tool, arguments that were not JSON, a tool error, a tool that raised (with and
without detailed errors, one whose message cannot be printed) and a refused approval."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopkit import Agent, ChatMessage, ChatOptions, FunctionChatClient, ToolError, tool
from loopkit.abstractions.content import ChatRole, FunctionCallContent, FunctionResultContent
from loopkit.interop.ag_ui.resume import _answer


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@tool
def broken(kind: str) -> str:
    """Fails in the way it is asked to."""
    if kind == "tool-error":
        raise ToolError("the file is locked; close it and call again")
    if kind == "unprintable":
        raise Unprintable
    raise ValueError(f"bad {kind}")


@tool
def deploy(target: str) -> str:
    """Deploys (needs a person's yes)."""
    return f"deployed to {target}"


CALLS = [
    FunctionCallContent(call_id="c1", name="nowhere", arguments={}),
    FunctionCallContent(call_id="c2", name="broken", arguments={}, arguments_error="not JSON"),
    FunctionCallContent(call_id="c3", name="broken", arguments={"kind": "tool-error"}),
    FunctionCallContent(call_id="c4", name="broken", arguments={"kind": "value"}),
    FunctionCallContent(call_id="c5", name="broken", arguments={"kind": "unprintable"}),
    FunctionCallContent(call_id="c6", name="deploy", arguments={"target": "prod"}),
]


def _agent(detailed: bool) -> Agent[Any]:
    def model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatMessage | str:
        if messages[-1].role == ChatRole.TOOL:
            return "done"
        return ChatMessage(role=ChatRole.ASSISTANT, contents=list(CALLS))

    return Agent(
        FunctionChatClient(model),
        tools=[broken, deploy],
        include_detailed_errors=detailed,
        approval_required=["deploy"],
        approver=lambda call: False,
    )


@pytest.mark.parametrize("detailed", [False, True])
def test_the_resumed_round_reads_as_the_loop_wrote_it(detailed: bool) -> None:
    agent = _agent(detailed)
    result = asyncio.run(agent.run("go"))
    looped = {
        c.call_id: (c.result, c.error)
        for m in result.new_messages
        for c in m.contents
        if isinstance(c, FunctionResultContent)
    }
    assert set(looped) == {c.call_id for c in CALLS}
    tools = {t.name: t for t in agent.options.tools}

    async def resumed() -> dict[str, tuple[str, bool]]:
        return {c.call_id: await _answer(agent, None, c, tools) for c in CALLS}  # type: ignore[arg-type]

    assert asyncio.run(resumed()) == looped
    # What the texts say (so a change to both at once is seen too).
    assert looped["c1"][0].startswith('Error: there is no tool named "nowhere". Available tools:')
    assert looped["c4"][0] == (
        "Error: broken failed with ValueError: bad value"
        if detailed
        else "Error: broken failed with ValueError."
    )
    assert looped["c5"][0] == "Error: broken failed with Unprintable."
    assert looped["c6"][0].startswith("Error: the call to deploy was not approved")
