"""run_stream: typed events in order, and exactly the history a non-streamed run leaves."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from loopkit import FunctionChatClient, Script, ScriptedChatClient
from loopkit.agents import (
    Agent,
    FinalResult,
    RoundFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
)
from loopkit.run_context import RunEvent, current_run
from loopkit.sessions import InMemorySession

from .helpers import Replies, add, answer, calls

# Three rounds: text and a call; two calls; the final text (usage on every turn).
TURNS: list[dict[str, Any]] = [
    {
        "text": "Let me add.",
        "calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, "expect": {"equals": "3"}}],
        "usage": {"input_tokens": 10, "output_tokens": 2},
    },
    {
        "calls": [
            {"name": "add", "arguments": {"a": 3, "b": 4}, "expect": {"equals": "7"}},
            {"name": "add", "arguments": {"a": 5, "b": 6}, "expect": {"equals": "11"}},
        ],
        "usage": {"input_tokens": 20, "output_tokens": 3},
    },
    {"text": "Sums: 3, 7 and 11.", "usage": {"input_tokens": 30, "output_tokens": 4}},
]


def scripted() -> ScriptedChatClient:
    return ScriptedChatClient(Script.model_validate({"turns": TURNS}))


async def streamed(agent: Agent[Any], prompt: str, **kw: Any) -> list[Any]:
    return [event async for event in agent.run_stream(prompt, **kw)]


async def test_a_streamed_run_leaves_exactly_the_history_of_a_plain_run() -> None:
    plain_session, stream_session = InMemorySession(), InMemorySession()
    plain = await Agent(scripted(), instructions="Add.", tools=[add]).run(
        "Add three sums.", session=plain_session
    )
    events = await streamed(
        Agent(scripted(), instructions="Add.", tools=[add]),
        "Add three sums.",
        session=stream_session,
    )
    final = events[-1]
    assert isinstance(final, FinalResult)
    result = final.result
    assert result.new_messages == plain.new_messages
    assert [m.role for m in result.new_messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert await stream_session.get_messages() == await plain_session.get_messages()
    assert (result.output, result.rounds, result.tool_calls) == (plain.output, 3, 3)
    assert result.usage == plain.usage and result.usage.input_tokens == 60


async def test_events_come_in_order_calls_then_results_then_the_next_rounds_text() -> None:
    events = await streamed(Agent(scripted(), tools=[add]), "Add three sums.")
    shape = [(type(e).__name__, getattr(e, "round", None)) for e in events]
    assert shape == [
        ("TextDelta", 1),
        ("ToolCallStarted", 1),
        ("ToolResultReceived", 1),
        ("RoundFinished", 1),
        ("ToolCallStarted", 2),
        ("ToolCallStarted", 2),
        ("ToolResultReceived", 2),
        ("ToolResultReceived", 2),
        ("RoundFinished", 2),
        ("TextDelta", 3),
        ("RoundFinished", 3),
        ("FinalResult", None),
    ]
    results = [e for e in events if isinstance(e, ToolResultReceived)]
    assert [(r.name, r.result.result) for r in results] == [
        ("add", "3"),
        ("add", "7"),
        ("add", "11"),
    ]
    calls_seen = [e.call.arguments for e in events if isinstance(e, ToolCallStarted)]
    assert calls_seen == [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert [(r.tool_calls, r.usage.input_tokens if r.usage else None) for r in rounds] == [
        (1, 10),
        (2, 20),
        (0, 30),
    ]
    assert (
        "".join(e.text for e in events if isinstance(e, TextDelta))
        == "Let me add.Sums: 3, 7 and 11."
    )
    assert events[-1].model_dump(mode="json")["type"] == "final_result"  # events serialise


class Total(BaseModel):
    total: int


async def test_a_streamed_typed_run_retries_invalid_output_like_a_plain_run() -> None:
    def replies() -> Replies:
        return Replies(calls(("add", {"a": 1, "b": 2})), answer("three"), answer('{"total": 3}'))

    plain = await Agent(replies().client(), tools=[add], output_type=Total).run("sum")
    events = await streamed(Agent(replies().client(), tools=[add], output_type=Total), "sum")
    final = events[-1]
    assert isinstance(final, FinalResult)
    assert final.result.output == Total(total=3) == plain.output
    assert final.result.new_messages == plain.new_messages
    assert final.result.output_retries == 1
    assert [e.round for e in events if isinstance(e, RoundFinished)] == [1, 2, 3]


async def test_the_run_is_current_only_while_the_stream_advances() -> None:
    """Between two events the consumer's code is outside the run (a run it starts there is its
    own, not a child), while the agent's tools see the run."""
    seen_by_tool: list[str] = []

    async def probe() -> str:
        """Look at the current run."""
        run = current_run()
        seen_by_tool.append(run.run_id if run else "none")
        return "ok"

    replies = Replies(calls(("probe", {})), answer("done"))
    outside: list[object] = []
    final = None
    async for event in Agent(replies.client(), tools=[probe]).run_stream("go"):
        outside.append(current_run())
        final = event
    assert isinstance(final, FinalResult)
    assert outside == [None] * len(outside)
    assert seen_by_tool == [final.result.run_id]


async def test_a_stream_closed_early_ends_its_run_as_an_error_and_keeps_whole_steps() -> None:
    ended: list[RunEvent] = []

    class Watch:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def on_run_start(self, run: Any) -> None:
            run.subscribe(lambda e: ended.append(e) if e.type == "run_end" else None)

        async def get_response(self, messages: Any, options: Any = None) -> Any:
            return await self.inner.get_response(messages, options)

        def get_streaming_response(self, messages: Any, options: Any = None) -> Any:
            return self.inner.get_streaming_response(messages, options)

    replies = Replies(calls(("add", {"a": 1, "b": 2})), answer("never read"))
    session = InMemorySession()
    agent = Agent(replies.client(), tools=[add], middleware=[Watch])
    stream = agent.run_stream("go", session=session)
    async for event in stream:
        if isinstance(event, ToolResultReceived):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert [e.data["status"] for e in ended] == ["error"]
    assert "closed before the run ended" in ended[0].data["error"]
    assert [m.role for m in await session.get_messages()] == ["user", "assistant", "tool"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_function_model_with_text_and_calls_in_one_message(stream: bool) -> None:
    """Text before calls in one assistant message stays one message either way."""
    model = FunctionChatClient(
        Replies(calls(("add", {"a": 2, "b": 2}), text="Adding."), answer("4")).__call__
    )
    agent = Agent(model, tools=[add])
    if stream:
        final = (await streamed(agent, "2+2"))[-1]
        messages = final.result.new_messages
    else:
        messages = (await agent.run("2+2")).new_messages
    assert [(m.role, m.text) for m in messages] == [
        ("user", "2+2"),
        ("assistant", "Adding."),
        ("tool", ""),
        ("assistant", "4"),
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_unknown_tool_ends_the_run_when_asked_either_way(stream: bool) -> None:
    agent = Agent(
        Replies(calls(("nope", {})), answer("never")).client(),
        tools=[add],
        terminate_on_unknown_calls=True,
    )
    if stream:
        result = (await streamed(agent, "x"))[-1].result
    else:
        result = await agent.run("x")
    assert result.unknown_tools == ["nope"] and result.rounds == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_the_round_limit_is_reported_either_way(stream: bool) -> None:
    agent = Agent(
        Replies(calls(("add", {"a": 1, "b": 1})), answer("stopped")).client(),
        tools=[add],
        max_rounds=1,
    )
    result = (await streamed(agent, "x"))[-1].result if stream else await agent.run("x")
    assert result.max_rounds_reached and result.output == "stopped" and result.rounds == 2


async def test_what_streaming_builds_without_validation_equals_its_validated_twin() -> None:
    """The fold's messages, the loop's tool updates and the events are built from values that
    were validated already (loopkit.abstractions.trusted, dataclass events): each must equal
    what validation gives, serialise the same and hold watched contents."""
    from loopkit import ChatMessage, ChatResponseUpdate, ChatRole, TextContent
    from loopkit.abstractions.chat import response_from_updates
    from loopkit.abstractions.content import ContentList
    from loopkit.run_context import RunContext, run_scope

    pieces = [
        ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text="Let ")]),
        ChatResponseUpdate(contents=[TextContent(text="me add.")]),
    ]
    [joined] = response_from_updates(pieces).messages  # text pieces joined
    [whole] = response_from_updates(pieces[:1]).messages  # one update: the short path
    for message in (joined, whole):
        assert message == ChatMessage.model_validate(message.model_dump())
        assert type(message.contents) is ContentList
        assert (
            message.model_dump_json()
            == ChatMessage.model_validate_json(message.model_dump_json()).model_dump_json()
        )
    assert joined.text == "Let me add." and whole.text == "Let "

    agent = Agent(scripted(), tools=[add])
    with run_scope(RunContext(name="updates")):
        updates = [
            u
            async for u in agent.pipeline.get_streaming_response(
                [ChatMessage.from_text("user", "Add three sums.")], agent.options
            )
        ]
    tool_updates = [u for u in updates if u.role == ChatRole.TOOL]
    assert len(tool_updates) == 2
    for update in tool_updates:
        assert update == ChatResponseUpdate.model_validate(update.model_dump())

    events = await streamed(Agent(scripted(), tools=[add]), "Add three sums.")
    for event in events[:-1]:
        dumped = event.model_dump(mode="json")
        assert dumped["type"] == event.type and dumped["round"] == event.round
        assert type(event)(**{k: getattr(event, k) for k in dumped if k != "type"}) == event


async def test_a_stream_that_is_never_iterated_never_starts_its_run() -> None:
    replies = Replies(answer("never"))
    stream = Agent(replies.client()).run_stream("hi")
    await stream.aclose()
    assert replies.sent == []
    with pytest.raises(TypeError, match="async for event in"):
        iter(stream)  # type: ignore[call-overload]
