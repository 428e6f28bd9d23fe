from __future__ import annotations

import pytest

from loopkit import ChatClientBuilder, tool
from tests.installed import import_or_unavailable

from .helpers import call, opts, script, user

sdk = import_or_unavailable("opentelemetry.sdk.trace", install="the otel and dev extras")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


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
