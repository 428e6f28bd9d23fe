"""The function-invocation loop calling a real MCP server's tools (stdio child process)."""

from __future__ import annotations

from typing import Any

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionCallContent,
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    FunctionResultContent,
)
from loopkit.errors import MCPServerError
from loopkit.providers.scripted import FunctionChatClient, Script, ScriptedChatClient

from .helpers import process_state, stdio_server

pytestmark = pytest.mark.integration


def _results(messages: list[ChatMessage]) -> list[FunctionResultContent]:
    return [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


async def test_loop_gets_plain_text_and_tool_errors_from_mcp_tools() -> None:
    quoted = 'a "quoted" line'
    model = ScriptedChatClient(
        Script.model_validate(
            {
                "turns": [
                    {
                        "calls": [
                            {"name": "t_echo", "arguments": {"text": quoted}},
                            {"name": "t_add", "arguments": {"a": 2, "b": 3}},
                        ]
                    },
                    {"calls": [{"name": "t_fail", "arguments": {"reason": "no such file"}}]},
                    {"text": "RESULT: done"},
                ]
            }
        )
    )
    async with stdio_server(tool_prefix="t_") as server:
        tools: list[Any] = list(await server.list_tools())
        loop = FunctionInvokingChatClient(model, FunctionInvocationOptions())
        user = [ChatMessage.from_text(ChatRole.USER, "go")]
        response = await loop.get_response(user, ChatOptions(tools=tools))
    assert response.text == "RESULT: done"
    results = _results(response.messages)
    assert [r.result for r in results[:2]] == [quoted, "5"]
    assert not results[0].error and not results[1].error
    assert results[2].error and "no such file" in results[2].result


async def test_server_killed_mid_run_ends_the_run_with_the_server_error() -> None:
    turn = 0

    def model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatMessage:
        nonlocal turn  # first the server dies; then the model keeps trying another tool
        turn += 1
        name, args = ("die", {"message": "widget store corrupt"}) if turn == 1 else ("echo", {})
        call = FunctionCallContent(call_id=f"c{turn}", name=name, arguments=args)
        return ChatMessage(role=ChatRole.ASSISTANT, contents=[call])

    async with stdio_server() as server:
        tools: list[Any] = list(await server.list_tools())
        pid = int(await next(t for t in tools if t.name == "pid").invoke({}))
        loop = FunctionInvokingChatClient(FunctionChatClient(model), FunctionInvocationOptions())
        user = [ChatMessage.from_text(ChatRole.USER, "go")]
        with pytest.raises(MCPServerError) as ended:
            await loop.get_response(user, ChatOptions(tools=tools))
    # A dead server ends the run at once: no answer of the model can revive it.
    assert turn == 1
    assert "widget store corrupt" in str(ended.value)  # the server's last words, from stderr
    assert process_state(pid) is None
