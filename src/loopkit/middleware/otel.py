"""OpenTelemetry traces for chat requests and tool calls (the ``otel`` extra).

Span names and attributes follow the OpenTelemetry semantic conventions for generative AI:
a ``chat {model}`` span per model request (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons``) and an
``execute_tool {name}`` span per tool call. Message contents are recorded only when asked
(``capture_content=True``): they may hold personal data or secrets.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    response_from_updates,
)
from loopkit.abstractions.content import ChatMessage
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import ToolInvocation

_SYSTEM = "gen_ai.system"


def _tracer(tracer_provider: Any | None) -> Any:
    try:
        from opentelemetry import trace
    except ImportError as e:  # the extra is not installed
        raise ImportError(
            "OpenTelemetryChatClient needs opentelemetry-api: pip install 'loopkit[otel]'"
        ) from e
    provider = tracer_provider or trace.get_tracer_provider()
    return provider.get_tracer("loopkit")


class OpenTelemetryChatClient(DelegatingChatClient):
    """Traces every request that passes, and (below the loop) every tool call the loop makes.

    ``tracer_provider`` defaults to the globally configured one; pass your own to keep the
    configuration on this instance. ``system`` names the provider (``gen_ai.system``).
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        tracer_provider: Any | None = None,
        system: str = "loopkit",
        capture_content: bool = False,
    ) -> None:
        super().__init__(inner)
        self._tracer = _tracer(tracer_provider)
        self.system = system
        self.capture_content = capture_content

    def _start(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        model = (options.model_id if options else None) or "unknown"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            _SYSTEM: self.system,
            "gen_ai.request.model": model,
        }
        if options is not None:
            if options.max_output_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = options.max_output_tokens
            if options.temperature is not None:
                attributes["gen_ai.request.temperature"] = options.temperature
            attributes["gen_ai.request.tool_count"] = len(options.tools)
        if self.capture_content:
            attributes["gen_ai.input.messages"] = json.dumps(
                [m.model_dump(mode="json") for m in messages], ensure_ascii=False
            )
        return self._tracer.start_as_current_span(f"chat {model}", attributes=attributes)

    def _finish(self, span: Any, response: ChatResponse) -> None:
        if response.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
            if response.usage.cached_input_tokens:
                span.set_attribute(
                    "gen_ai.usage.cache_read_input_tokens", response.usage.cached_input_tokens
                )
        if response.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        if response.model_id:
            span.set_attribute("gen_ai.response.model", response.model_id)
        if self.capture_content:
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([m.model_dump(mode="json") for m in response.messages]),
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        with self._start(messages, options) as span:
            response = await self.inner.get_response(messages, options)
            self._finish(span, response)
            return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        with self._start(messages, options) as span:
            updates: list[ChatResponseUpdate] = []
            async for update in self.inner.get_streaming_response(messages, options):
                updates.append(update)
                yield update
            self._finish(span, response_from_updates(updates))

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        """An ``execute_tool`` span covering the call (the loop reports it when it is done)."""
        end = time.time_ns()
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": invocation.call.name,
            "gen_ai.tool.call.id": invocation.call.call_id,
            "loopkit.round": invocation.round,
            "loopkit.tool.error": invocation.error,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(invocation.call.arguments)
            attributes["gen_ai.tool.call.result"] = invocation.result
        span = self._tracer.start_span(
            f"execute_tool {invocation.call.name}",
            attributes=attributes,
            start_time=end - int(invocation.ms * 1_000_000),
        )
        if invocation.error:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, invocation.result[:200]))
        span.end(end_time=end)
