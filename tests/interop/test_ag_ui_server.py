"""``AGUIApp`` in-process: what the protocol test through the official client does not reach
(bad input, a busy thread, a client that goes away, typed output, a client-kept history,
context, errors of the run)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    AssistantMessage,
    Context,
    FunctionCall,
    RunAgentInput,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from pydantic import BaseModel

from loopkit import Agent, ChatMessage, ChatOptions, FunctionChatClient, InMemorySession
from loopkit.interop import AGUIApp


def _events(app: AGUIApp, **fields: Any) -> list[Any]:
    async def collect() -> list[Any]:
        return [e async for e in app.run_events(RunAgentInput(**fields))]

    return asyncio.run(collect())


def _user(text: str, id: str = "u1") -> UserMessage:
    return UserMessage(id=id, content=text)


class Answer(BaseModel):
    city: str
    degrees: int


def test_typed_output_is_the_json_result() -> None:
    agent = Agent(
        FunctionChatClient(lambda m, o: '{"city": "Oslo", "degrees": 18}'), output_type=Answer
    )
    events = _events(AGUIApp(agent), thread_id="t", run_id="r", messages=[_user("weather?")])
    assert events[-1].type == "RUN_FINISHED" and events[-1].result == {
        "city": "Oslo",
        "degrees": 18,
    }


def test_a_failing_run_is_run_error_and_the_thread_goes_on() -> None:
    def model(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        if messages[-1].text == "boom":
            raise RuntimeError("the provider is down")
        return "fine"

    app = AGUIApp(Agent(FunctionChatClient(model)))
    failed = _events(app, thread_id="t", run_id="r1", messages=[_user("boom")])
    assert failed[-1].type == "RUN_ERROR" and "the provider is down" in failed[-1].message
    ok = _events(app, thread_id="t", run_id="r2", messages=[_user("again", "u2")])
    assert ok[-1].type == "RUN_FINISHED" and ok[-1].result == "fine"


def test_a_client_kept_history_seeds_the_thread_and_context_reaches_the_model() -> None:
    seen: list[list[ChatMessage]] = []

    def model(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        seen.append(list(messages))
        return "ok"

    sessions: dict[str, InMemorySession] = {}
    app = AGUIApp(
        Agent(FunctionChatClient(model)),
        sessions=lambda t: sessions.setdefault(t, InMemorySession(t)),
    )
    call = ToolCall(id="c1", function=FunctionCall(name="lookup", arguments='{"city": "Oslo"}'))
    history = [
        _user("Weather in Oslo?", "u0"),
        AssistantMessage(id="a0", tool_calls=[call]),
        ToolMessage(id="t0", tool_call_id="c1", content="18 C"),
        AssistantMessage(id="a1", content="18 C in Oslo."),
        _user("And tomorrow?"),
    ]
    events = _events(app, thread_id="t", run_id="r", messages=history,
                     context=[Context(description="the user's city", value="Oslo")])  # fmt: skip
    assert events[-1].type == "RUN_FINISHED"
    texts = [m.text for m in seen[0]]
    assert texts[0] == "Weather in Oslo?" and "18 C in Oslo." in texts
    assert "Context from the application:\n- the user's city: Oslo" in texts
    assert texts[-1] == "And tomorrow?"
    stored = asyncio.run(sessions["t"].get_messages())
    assert [m.role for m in stored][:4] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"messages": []}, "nothing to run"),
        (
            {
                "messages": [
                    UserMessage(
                        id="u",
                        content=[
                            {"type": "image", "source": {"type": "url", "value": "http://x/y.png"}}
                        ],
                    )
                ]
            },
            "reads text parts only",
        ),
        (
            {"messages": [_user("x")], "tools": [Tool(name="echo_tool", description="clash")]},
            "is a tool of the agent",
        ),
    ],
)
def test_bad_input_is_run_error_naming_it(fields: dict[str, Any], expected: str) -> None:
    def echo_tool(text: str) -> str:
        """Echo."""
        return text

    app = AGUIApp(Agent(FunctionChatClient(lambda m, o: "hi"), tools=[echo_tool]))
    events = _events(app, thread_id="t", run_id="r", **fields)
    assert [e.type for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert expected in events[-1].message and events[-1].code == "bad_input"


def test_a_body_that_is_not_run_agent_input_is_422() -> None:
    app = AGUIApp(Agent(FunctionChatClient(lambda m, o: "hi")))

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app), base_url="http://app"
        ) as http:
            return await http.post("/", json={"threadId": "t", "messages": "nope"})

    response = asyncio.run(post())
    assert response.status_code == 422
    assert "the body is not an AG-UI RunAgentInput" in response.json()["error"]
    assert "runId" in response.json()["error"] or "run_id" in response.json()["error"]


def test_a_busy_thread_and_a_client_that_went_away() -> None:
    release = asyncio.Event()

    async def model(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        if messages[-1].text == "slow":
            await release.wait()
            return "slow done"
        return "quick"

    app = AGUIApp(Agent(FunctionChatClient(model)))

    async def scenario() -> tuple[list[str], list[str], list[str], str]:
        first = app.run_events(RunAgentInput(thread_id="t", run_id="r1", messages=[_user("slow")]))
        assert (await anext(first)).type == "RUN_STARTED"
        reading = asyncio.ensure_future(anext(first))  # the response waits on the model
        await asyncio.sleep(0.05)
        during = [e.type async for e in app.run_events(
            RunAgentInput(thread_id="t", run_id="r2", messages=[_user("hi", "u2")]))]  # fmt: skip
        reading.cancel()  # the client went away (the server cancels its response); the run goes on
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await first.aclose()
        after_leaving = [e.type async for e in app.run_events(
            RunAgentInput(thread_id="t", run_id="r3", messages=[_user("hi", "u3")]))]  # fmt: skip
        release.set()
        await asyncio.sleep(0.1)  # the run ends unread
        later = [e async for e in app.run_events(
            RunAgentInput(thread_id="t", run_id="r4", messages=[_user("hi", "u4")]))]  # fmt: skip
        await app.aclose()
        return during, after_leaving, [e.type for e in later], later[-1].result

    during, after_leaving, later, result = asyncio.run(scenario())
    assert during == ["RUN_STARTED", "RUN_ERROR"]
    assert after_leaving == ["RUN_STARTED", "RUN_ERROR"]
    assert later[-1] == "RUN_FINISHED" and result == "quick"


def test_events_serialise_as_the_encoder_writes_them() -> None:
    from ag_ui.encoder import EventEncoder

    app = AGUIApp(Agent(FunctionChatClient(lambda m, o: "hi")))
    events = _events(app, thread_id="t", run_id="r", messages=[_user("x")])
    text = "".join(EventEncoder().encode(e) for e in events)
    frames = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert [f["type"] for f in frames] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                          "TEXT_MESSAGE_END", "RUN_FINISHED"]  # fmt: skip
    assert frames[1]["messageId"] == frames[2]["messageId"] == "r-1"
