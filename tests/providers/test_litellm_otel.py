"""OpenTelemetry over LiteLLMChatClient: the chat span names the model (it read ``chat unknown``
when no ChatOptions.model_id was given)."""

from __future__ import annotations

import pytest

from loopkit import ChatClientBuilder, ChatMessage, ChatRole
from tests.fakes.fake_llm_server import Turn
from tests.installed import import_or_unavailable
from tests.providers.conftest import Wire

pytestmark = pytest.mark.integration

sdk = import_or_unavailable("opentelemetry.sdk.trace", install="the otel and dev extras")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


async def test_chat_span_carries_the_litellm_model(wire: Wire) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = sdk.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    wire.server.enqueue(Turn.reply("hi"))
    client = ChatClientBuilder(wire.client()).use_opentelemetry(tracer_provider=tracer_provider)
    await client.build().get_response([ChatMessage.from_text(ChatRole.USER, "hello")])
    [span] = exporter.get_finished_spans()
    assert span.name == f"chat {wire.model}"
    assert span.attributes is not None
    assert span.attributes["gen_ai.request.model"] == wire.model
    assert span.attributes["gen_ai.system"] == wire.format  # openai / anthropic
    assert span.attributes["gen_ai.response.model"]  # what the server says it ran
