"""The assistant's tool-call ids and the results' ids pair up on the wire (issue 21: an outside
reviewer broke the ids of the calls in the request without any test noticing). litellm's real
request code, against the fake OpenAI and Anthropic servers of tests/fakes."""

from __future__ import annotations

from typing import Any

import pytest

from loopkit.abstractions import ChatMessage, ChatOptions, ChatRole, tool
from loopkit.middleware.function_invocation import FunctionInvokingChatClient
from tests.fakes.fake_llm_server import ScriptedToolCall, Turn
from tests.providers.conftest import Wire

pytestmark = pytest.mark.integration


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21 C"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return f"12:00 in {zone}"


def calls_and_results(wire: Wire, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The request's tool traffic in order: ("call", id, tool name) and ("result", id, text)."""
    found: list[tuple[str, str, str]] = []
    for m in body["messages"]:
        if wire.format == "openai":
            for c in m.get("tool_calls") or []:
                found.append(("call", c["id"], c["function"]["name"]))
            if m["role"] == "tool":
                found.append(("result", m["tool_call_id"], m["content"]))
            continue
        if not isinstance(m["content"], list):
            continue
        for block in m["content"]:
            if block.get("type") == "tool_use":
                found.append(("call", block["id"], block["name"]))
            elif block.get("type") == "tool_result":
                content = block["content"]
                text = content if isinstance(content, str) else content[0]["text"]
                found.append(("result", block["tool_use_id"], text))
    return found


@pytest.mark.parametrize("stream", [False, True])
async def test_each_result_answers_the_call_id_the_model_gave(wire: Wire, stream: bool) -> None:
    wire.server.enqueue(
        Turn.calls(
            ScriptedToolCall("get_weather", {"city": "Oslo"}, "toolu_01Weather"),
            ScriptedToolCall("get_time", {"zone": "CET"}, "toolu_02Time"),
            text="Checking.",
        ),
        Turn.tool_call("get_weather", {"city": "Bergen"}, call_id="toolu_03Again"),
        Turn.reply("Done."),
    )
    loop = FunctionInvokingChatClient(wire.client())
    conversation = [ChatMessage.from_text(ChatRole.USER, "Weather and time?")]
    options = ChatOptions(tools=[get_weather, get_time])
    if stream:
        updates = [u async for u in loop.get_streaming_response(conversation, options)]
        assert "Done." in "".join(u.text for u in updates)
    else:
        assert (await loop.get_response(conversation, options)).text == "Done."
    second, third = (r.body for r in wire.server.requests[1:])
    assert calls_and_results(wire, second) == [
        ("call", "toolu_01Weather", "get_weather"),
        ("call", "toolu_02Time", "get_time"),
        ("result", "toolu_01Weather", "Oslo: 21 C"),
        ("result", "toolu_02Time", "12:00 in CET"),
    ]
    assert calls_and_results(wire, third) == [
        *calls_and_results(wire, second),
        ("call", "toolu_03Again", "get_weather"),
        ("result", "toolu_03Again", "Bergen: 21 C"),
    ]
