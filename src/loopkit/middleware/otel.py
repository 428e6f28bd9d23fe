"""OpenTelemetry traces for runs, chat requests and tool calls (the ``otel`` extra).

Span names and attributes follow the OpenTelemetry semantic conventions for generative AI:

- ``invoke_agent {name}`` per run (``gen_ai.operation.name=invoke_agent``, ``gen_ai.agent.name``,
  ``gen_ai.agent.id`` and ``gen_ai.conversation.id`` from the run's metadata, the run's usage at
  its end). The client is :class:`~loopkit.run_context.RunAware`: the span starts when the run
  starts and is the current span for the run; it ends when the run emits ``run_end``. At the
  run's first request the client emits a ``trace`` run event (``trace_id``, ``span_id``: the
  run log writes it as a line, so a run can be linked to its trace). A child
  run (an agent used as a tool) nests under its parent run's span. Other run events
  (``retry``, ``fallback``, ``compaction``, ``child_run``, ...) become span events.
- ``chat {model}`` per model request (``gen_ai.request.model``, ``gen_ai.usage.*``,
  ``gen_ai.response.finish_reasons``, ``gen_ai.response.model``). The model is the request's
  ``ChatOptions.model_id``, else the one the innermost client reports (``LiteLLMChatClient.model``),
  else the one the response names; when a fallback client answered (a
  :class:`~loopkit.middleware.fallback.FallbackChatClient` below whose primary failed), that
  client's model.
- ``execute_tool {name}`` per tool call (when this client sits below the function-invocation loop),
  nested under the chat span of the round that asked for it.

Message contents are recorded only when asked (``capture_content=True``): they may hold personal
data or secrets.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from loopkit.run_context import RunContext, RunEvent, current_run

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

_SYSTEM = "gen_ai.system"
_PROVIDER = "gen_ai.provider.name"
_UNKNOWN_MODEL = "unknown"


def _tracer(tracer_provider: TracerProvider | None) -> Tracer:
    try:
        from opentelemetry import trace
    except ImportError as e:  # the extra is not installed
        raise ImportError(
            "OpenTelemetryChatClient needs opentelemetry-api: pip install 'loopkit[otel]'"
        ) from e
    provider = tracer_provider or trace.get_tracer_provider()
    return provider.get_tracer("loopkit")


def innermost_model(client: object) -> str | None:
    """The model the chain below ``client`` talks to, as its innermost client reports it
    (``model``, e.g. ``LiteLLMChatClient``, or ``model_id``), or None."""
    found: str | None = None
    seen: set[int] = set()
    current: object | None = client
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for name in ("model", "model_id"):
            value = getattr(current, name, None)
            if isinstance(value, str) and value:
                found = value
                break
        current = getattr(current, "inner", None)
    return found


def fallback_model(client: object) -> str | None:
    """The model of the fallback client that answered the current run's latest request through
    the chain below ``client`` (a :class:`~loopkit.middleware.fallback.FallbackChatClient`
    whose primary failed), or None when the primary answered or there is no fallback."""
    seen: set[int] = set()
    current: object | None = client
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        answered_by = getattr(current, "answered_by", None)
        if callable(answered_by):
            answering = answered_by()
            if answering is None:
                return None
            return fallback_model(answering) or innermost_model(answering)
        current = getattr(current, "inner", None)
    return None


def _attribute_value(value: Any) -> Any:
    """An event's data value as an OpenTelemetry attribute value (primitives, homogeneous
    sequences of them), else compact JSON."""
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple) and value:
        kinds = {type(v) for v in value}
        if len(kinds) == 1 and kinds <= {str, bool, int, float}:
            return tuple(value)
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


@dataclass(slots=True)
class _RunTrace:
    """This client's spans in one run (kept in the run, never on the client)."""

    span: Span
    #: The context token while the run's span is current (detached at ``run_end``).
    token: Token[Context] | None = None
    #: The latest chat span of the run: the parent of the tool calls of its round.
    chat: Span | None = None
    ended: bool = False
    #: The ``trace`` run event was emitted.
    announced: bool = False


class OpenTelemetryChatClient(DelegatingChatClient):
    """Traces runs, every request that passes and (below the loop) every tool call the loop makes.

    ``tracer_provider`` defaults to the globally configured one; pass your own to keep the
    configuration on this instance. ``system`` names the provider (``gen_ai.system`` and
    ``gen_ai.provider.name``); by default the prefix of the model string (``anthropic`` for
    ``anthropic/claude-sonnet-4-5``), else ``loopkit``.
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        tracer_provider: TracerProvider | None = None,
        system: str | None = None,
        capture_content: bool = False,
    ) -> None:
        super().__init__(inner)
        self._tracer = _tracer(tracer_provider)
        self._system = system
        self.capture_content = capture_content
        # The key of this client's state in a run (RunContext.start_middleware marks the client
        # itself as started under its own identity).
        self._run_key = object()

    # -- model names --------------------------------------------------------------------------
    def _request_model(self, options: ChatOptions | None) -> str | None:
        return (options.model_id if options else None) or innermost_model(self.inner)

    def _system_for(self, model: str | None) -> str:
        if self._system is not None:
            return self._system
        if model and "/" in model:
            return model.split("/", 1)[0]
        return "loopkit"

    # -- runs ---------------------------------------------------------------------------------
    def _run_trace(self, run: RunContext | None) -> _RunTrace | None:
        if run is None or not run.has_state(self._run_key):
            return None
        trace: _RunTrace = run.state_for(self._run_key, _no_state)
        return trace

    def on_run_start(self, run: RunContext) -> None:
        """Start the run's ``invoke_agent`` span, nested under the parent run's span (a child run)
        or the current span, and make it current until the run emits ``run_end``."""
        if run.implicit:
            # A run the loop opened for a bare pipeline's request is no agent invocation: its
            # chat and tool spans stay where they were (under the caller's current span).
            return
        from opentelemetry import context, trace

        parent = self._run_trace(run.parent)
        parent_context = trace.set_span_in_context(parent.span) if parent is not None else None
        name = run.name or ""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "loopkit.run.id": run.run_id,
            "loopkit.run.depth": run.depth,
        }
        if run.name:
            attributes["gen_ai.agent.name"] = run.name
        if run.parent is not None:
            attributes["loopkit.run.parent_id"] = run.parent.run_id
        for key, attribute in (
            ("agent_id", "gen_ai.agent.id"),
            ("session_id", "gen_ai.conversation.id"),
            ("conversation_id", "gen_ai.conversation.id"),
        ):
            value = run.metadata.get(key)
            if isinstance(value, str | int):
                attributes[attribute] = str(value)
        model = innermost_model(self.inner)
        if model:
            attributes["gen_ai.request.model"] = model
        attributes[_SYSTEM] = attributes[_PROVIDER] = self._system_for(model)
        span = self._tracer.start_span(
            f"invoke_agent {name}".strip(), context=parent_context, attributes=attributes
        )
        state = _RunTrace(span)
        run.state_for(self._run_key, lambda: state)
        state.token = context.attach(trace.set_span_in_context(span))
        unsubscribe = run.subscribe(lambda event: self._on_event(run, state, event, unsubscribe))

    def _on_event(
        self, run: RunContext, state: _RunTrace, event: RunEvent, unsubscribe: Any
    ) -> None:
        if state.ended or event.type == "trace":  # the span's own id: not an event of it
            return
        if event.type != "run_end":
            attributes = {k: _attribute_value(v) for k, v in event.data.items() if v is not None}
            state.span.add_event(event.type, attributes=attributes)
            return
        from opentelemetry import context, trace
        from opentelemetry.trace import Status, StatusCode

        state.ended = True
        unsubscribe()
        span = state.span
        span.set_attribute("gen_ai.usage.input_tokens", run.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", run.usage.output_tokens)
        if run.usage.cached_input_tokens:
            span.set_attribute(
                "gen_ai.usage.cache_read_input_tokens", run.usage.cached_input_tokens
            )
        span.set_attribute("loopkit.run.rounds", run.rounds)
        span.set_attribute("loopkit.run.tool_calls", run.tool_calls)
        status = event.data.get("status")
        if isinstance(status, str):
            span.set_attribute("loopkit.run.status", status)
        if status == "error":
            error = event.data.get("error")
            span.set_status(Status(StatusCode.ERROR, str(error or "the run failed")[:200]))
        span.end()
        # Restore the context the run started in, when the run ends where it started (an agent
        # opens and closes its run in one task). Elsewhere the token cannot be reset; that
        # context is another task's copy and ends with it.
        if state.token is not None and trace.get_current_span() is span:
            context.detach(state.token)
        state.token = None

    # -- chat spans ---------------------------------------------------------------------------
    @contextmanager
    def _chat_span(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> Iterator[Span]:
        from opentelemetry.trace import SpanKind

        model = self._request_model(options)
        system = self._system_for(model)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            _SYSTEM: system,
            _PROVIDER: system,
            "gen_ai.request.model": model or _UNKNOWN_MODEL,
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
        name = f"chat {model or _UNKNOWN_MODEL}"
        with self._tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            run = current_run()
            run_trace = self._run_trace(run)
            if run_trace is not None:
                run_trace.chat = span
                if not run_trace.announced and run is not None:
                    # The run's trace id, once, as a run event: the run log writes it (after
                    # its `start` line), and the board links the run to its trace with it.
                    run_trace.announced = True
                    if model:  # the run's model, as its requests name it (ChatOptions.model_id)
                        run_trace.span.set_attribute("gen_ai.request.model", model)
                    context = run_trace.span.get_span_context()
                    run.emit(
                        "trace",
                        trace_id=format(context.trace_id, "032x"),
                        span_id=format(context.span_id, "016x"),
                    )
            yield span

    def _finish(self, span: Span, response: ChatResponse, request_model: str | None) -> None:
        backup = fallback_model(self.inner)
        if backup is not None:
            # A fallback answered: the span is named after the model that did the work.
            span.update_name(f"chat {backup}")
            span.set_attribute("gen_ai.request.model", backup)
            request_model = backup
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
            if request_model is None:
                # Nothing named the model before the request; the answer does.
                span.update_name(f"chat {response.model_id}")
        if response.response_id:
            span.set_attribute("gen_ai.response.id", response.response_id)
        if self.capture_content:
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([m.model_dump(mode="json") for m in response.messages]),
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        with self._chat_span(messages, options) as span:
            response = await self.inner.get_response(messages, options)
            self._finish(span, response, self._request_model(options))
            return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        with self._chat_span(messages, options) as span:
            updates: list[ChatResponseUpdate] = []
            async for update in self.inner.get_streaming_response(messages, options):
                updates.append(update)
                yield update
            self._finish(span, response_from_updates(updates), self._request_model(options))

    # -- tool spans ---------------------------------------------------------------------------
    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        """An ``execute_tool`` span covering the call (the loop reports it when it is done),
        nested under the chat span of its round (else the run's span, else the current one)."""
        from opentelemetry import trace

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
        run_trace = self._run_trace(current_run())
        parent = None
        if run_trace is not None:
            parent = trace.set_span_in_context(run_trace.chat or run_trace.span)
        span = self._tracer.start_span(
            f"execute_tool {invocation.call.name}",
            context=parent,
            attributes=attributes,
            start_time=end - int(invocation.ms * 1_000_000),
        )
        if invocation.error:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, invocation.result[:200]))
        span.end(end_time=end)


def _no_state() -> _RunTrace:
    raise AssertionError("has_state was checked first")  # pragma: no cover
