from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from loopkit import (
    ChatClient,
    ChatClientBuilder,
    FunctionChatClient,
    RunContext,
    UsageDetails,
    run_scope,
    tool,
)
from tests.installed import import_or_unavailable

from .helpers import call, opts, script, user

sdk = import_or_unavailable("opentelemetry.sdk.trace", install="the otel and dev extras")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def boom() -> str:
    """Fails."""
    raise RuntimeError("no")


def provider() -> tuple[object, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tp = sdk.TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp, exporter


async def test_spans_for_each_round_and_tool_call() -> None:
    tp, exporter = provider()
    model = script(
        {
            "calls": [call("add", a=1, b=2), call("boom")],
            "usage": {"input_tokens": 100, "output_tokens": 7, "cached_input_tokens": 60},
        },
        {"text": "done", "usage": {"input_tokens": 150, "output_tokens": 3}},
    )
    client = (
        ChatClientBuilder(model)
        .use_function_invocation()
        .use_opentelemetry(tracer_provider=tp)
        .build()
    )
    await client.get_response(user(), opts(add, boom, model_id="claude-x"))
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert names == ["chat claude-x", "execute_tool add", "execute_tool boom", "chat claude-x"]
    first = spans[0].attributes
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "claude-x"
    assert first["gen_ai.usage.input_tokens"] == 100
    assert first["gen_ai.usage.cache_read_input_tokens"] == 60
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert "gen_ai.input.messages" not in first  # content only when asked
    assert spans[1].attributes["gen_ai.tool.name"] == "add"
    assert spans[2].status.status_code.name == "ERROR"
    assert spans[1].start_time <= spans[1].end_time


async def test_content_is_captured_only_when_asked_and_errors_are_recorded() -> None:
    tp, exporter = provider()
    client = (
        ChatClientBuilder(script({"text": "secret plans"}))
        .use_opentelemetry(tracer_provider=tp, capture_content=True)
        .build()
    )
    await client.get_response(user("tell me"), opts())
    [span] = exporter.get_finished_spans()
    assert "tell me" in span.attributes["gen_ai.input.messages"]
    assert "secret plans" in span.attributes["gen_ai.output.messages"]
    with pytest.raises(Exception, match="only 1 turns"):
        await client.get_response(user(), opts())
    failed = exporter.get_finished_spans()[-1]
    assert failed.status.status_code.name == "ERROR"


# --- model names, run spans, nesting -------------------------------------------------------------


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_chat_span_names_the_model_of_the_response_when_nothing_named_it_before() -> None:
    tp, exporter = provider()
    client = ChatClientBuilder(script({"text": "hi"})).use_opentelemetry(tracer_provider=tp).build()
    await client.get_response(user(), opts())  # no model_id; the scripted model has no `model`
    [span] = exporter.get_finished_spans()
    assert span.name == "chat scripted"
    assert span.attributes["gen_ai.response.model"] == "scripted"
    assert span.kind == SpanKind.CLIENT


async def test_chat_span_names_the_model_the_innermost_client_reports() -> None:
    tp, exporter = provider()
    inner = FunctionChatClient(lambda messages, options: "hi", model_id="anthropic/claude-x")
    client = (
        ChatClientBuilder(inner)
        .use_opentelemetry(tracer_provider=tp)
        .use_retries(initial_delay=0)  # a middleware between: the walk goes down to the model
        .build()
    )
    await client.get_response(user(), opts())
    [span] = exporter.get_finished_spans()
    assert span.name == "chat anthropic/claude-x"
    assert span.attributes["gen_ai.request.model"] == "anthropic/claude-x"
    assert span.attributes["gen_ai.system"] == "anthropic"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"


def traced_loop(tp: object, model: object) -> ChatClient:
    return (
        ChatClientBuilder(model)  # type: ignore[arg-type]
        .use_function_invocation()
        .use_opentelemetry(tracer_provider=tp)  # type: ignore[arg-type]
        .build()
    )


async def test_a_run_is_an_invoke_agent_span_with_chat_and_tool_spans_nested() -> None:
    tp, exporter = provider()
    client = traced_loop(
        tp,
        script(
            {"calls": [call("add", a=1, b=2)], "usage": {"input_tokens": 10, "output_tokens": 2}},
            {"text": "3", "usage": {"input_tokens": 20, "output_tokens": 1}},
        ),
    )
    run = RunContext(name="planner", metadata={"session_id": "s-1", "agent_id": "a-1"})
    with run_scope(run):
        run.start_middleware(client)
        agent_span = trace.get_current_span()  # current for the run
        await client.get_response(user(), opts(add))
        run.emit("retry", attempt=1, wait_s=0.5, reason="rate limited")
        run.usage = UsageDetails(input_tokens=30, output_tokens=3)  # the loop's job (contract 2)
        run.rounds, run.tool_calls = 2, 1
        run.emit("run_end", status="ok", error=None)
        assert trace.get_current_span() is not agent_span  # the caller's context is back
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "chat scripted",
        "execute_tool add",
        "chat scripted",
        "invoke_agent planner",
    ]
    first_chat, tool_span, second_chat, agent = spans
    assert agent.parent is None
    assert agent.context.span_id == agent_span.get_span_context().span_id
    assert parent_of(first_chat) == parent_of(second_chat) == agent.context.span_id
    assert parent_of(tool_span) == first_chat.context.span_id  # the chat span of its round
    assert {s.context.trace_id for s in spans} == {agent.context.trace_id}
    attributes = agent.attributes
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "planner"
    assert attributes["gen_ai.agent.id"] == "a-1"
    assert attributes["gen_ai.conversation.id"] == "s-1"
    assert attributes["loopkit.run.id"] == run.run_id
    assert attributes["gen_ai.usage.input_tokens"] == 30
    assert attributes["gen_ai.usage.output_tokens"] == 3
    assert attributes["loopkit.run.rounds"] == 2
    assert attributes["loopkit.run.status"] == "ok"
    assert agent.status.status_code == StatusCode.UNSET
    [event] = agent.events
    assert event.name == "retry"
    assert dict(event.attributes or {}) == {"attempt": 1, "wait_s": 0.5, "reason": "rate limited"}


async def test_a_child_run_nests_under_its_parent_and_a_failed_run_is_an_error() -> None:
    tp, exporter = provider()
    client = traced_loop(tp, script({"text": "child answer"}, {"text": "parent answer"}))
    parent = RunContext(name="parent")
    with run_scope(parent):
        parent.start_middleware(client)
        parent_span = trace.get_current_span()
        child = parent.child("researcher")
        with run_scope(child):
            child.start_middleware(client)
            await client.get_response(user(), opts())
            child.emit("run_end", status="error", error="budget spent", output_type=None)
        assert trace.get_current_span() is parent_span  # the parent's span is current again
        await client.get_response(user(), opts())
        parent.emit("run_end", status="ok", error=None)
    spans = by_name(exporter.get_finished_spans())
    child_span, parent_out = spans["invoke_agent researcher"], spans["invoke_agent parent"]
    assert parent_of(child_span) == parent_out.context.span_id
    assert child_span.attributes["loopkit.run.parent_id"] == parent.run_id
    assert child_span.attributes["loopkit.run.depth"] == 1
    assert child_span.status.status_code == StatusCode.ERROR
    assert child_span.status.description == "budget spent"
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert [parent_of(s) for s in chats] == [child_span.context.span_id, parent_out.context.span_id]


async def test_concurrent_runs_on_one_client_get_their_own_spans() -> None:
    tp, exporter = provider()
    client = traced_loop(tp, FunctionChatClient(lambda messages, options: "ok", model_id="m"))

    async def one_run(name: str) -> None:
        run = RunContext(name=name)
        with run_scope(run):
            run.start_middleware(client)
            await asyncio.sleep(0)  # let the other run start in between
            await client.get_response(user(), opts())
            await asyncio.sleep(0)
            run.emit("run_end", status="ok", error=None)

    await asyncio.gather(one_run("a"), one_run("b"))
    spans = exporter.get_finished_spans()
    agents = {s.attributes["gen_ai.agent.name"]: s for s in spans if s.name.startswith("invoke")}
    chats = [s for s in spans if s.name == "chat m"]
    assert sorted(agents) == ["a", "b"]
    assert {parent_of(s) for s in chats} == {a.context.span_id for a in agents.values()}
    assert len({a.context.trace_id for a in agents.values()}) == 2  # two traces, not one


async def test_an_agent_run_with_a_session_names_the_conversation_on_its_span() -> None:
    from loopkit import Agent, InMemorySession

    tp, exporter = provider()
    model = script({"text": "hello"})
    agent = Agent(ChatClientBuilder(model).use_opentelemetry(tracer_provider=tp), name="greeter")
    await agent.run("hi", session=InMemorySession("conversation-42"))
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent greeter"]
    assert span.attributes is not None
    assert span.attributes["gen_ai.conversation.id"] == "conversation-42"


@pytest.mark.parametrize("stream", [False, True], ids=["get_response", "streamed"])
async def test_with_fallback_the_chat_span_is_named_after_the_model_that_answered(
    stream: bool,
) -> None:
    """The primary fails for good, the backup answers: the span of that request, and of the
    run's later requests (the choice sticks), names the backup; a run whose primary answers
    names the primary."""
    from loopkit import ProviderError

    def refuse(messages: object, options: object) -> str:
        raise ProviderError("invalid API key (HTTP 401)", retryable=False, status_code=401)

    tp, exporter = provider()
    primary = FunctionChatClient(refuse, model_id="anthropic/claude-x")
    backup = FunctionChatClient(lambda messages, options: "hi", model_id="openai/gpt-y")
    client = (
        ChatClientBuilder(primary)
        .use_opentelemetry(tracer_provider=tp)
        .use_fallback([backup])
        .build()
    )

    async def ask() -> None:
        if stream:
            [u async for u in client.get_streaming_response(user(), opts())]
        else:
            await client.get_response(user(), opts())

    with run_scope(RunContext(name="fallen-back")):
        await ask()
        await ask()
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["chat openai/gpt-y", "chat openai/gpt-y"]
    for span in exporter.get_finished_spans():
        assert span.attributes["gen_ai.request.model"] == "openai/gpt-y"

    exporter.clear()
    working = (
        ChatClientBuilder(FunctionChatClient(lambda m, o: "hi", model_id="anthropic/claude-x"))
        .use_opentelemetry(tracer_provider=tp)
        .use_fallback([backup])
        .build()
    )
    with run_scope(RunContext(name="primary")):
        await working.get_response(user(), opts())
    assert [s.name for s in exporter.get_finished_spans()] == ["chat anthropic/claude-x"]
