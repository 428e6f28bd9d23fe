"""Sending loopkit's OpenTelemetry spans over OTLP (the ``otel`` extra): to Arize Phoenix, Jaeger,
an OpenTelemetry Collector, or any backend that takes OTLP over HTTP.

- :func:`otlp_tracer_provider` builds a ``TracerProvider`` that exports every span in batches
  to an OTLP/HTTP endpoint, for :class:`~loopkit.middleware.otel.OpenTelemetryChatClient`'s
  ``tracer_provider=``.
- :func:`traced_from_environment` is what the demo and the workers do: when the standard
  variable ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set,
  the model is wrapped so that every card run is one trace (the agent's run, its model
  requests, its tool calls). The exporter reads the other ``OTEL_*`` variables itself
  (``OTEL_EXPORTER_OTLP_HEADERS`` for a backend that wants a key; ``OTEL_SERVICE_NAME``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from loopkit.abstractions.chat import ChatClient

__all__ = [
    "ENDPOINT_VARIABLES",
    "flush_traces",
    "otlp_tracer_provider",
    "traced_from_environment",
]

#: The standard variables that name where OTLP traces go (the first set wins).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

_FROM_ENVIRONMENT: dict[str, TracerProvider] = {}


def otlp_tracer_provider(
    endpoint: str | None = None,
    *,
    service_name: str | None = None,
    headers: dict[str, str] | None = None,
) -> TracerProvider:
    """A provider exporting spans in batches over OTLP/HTTP to ``endpoint`` (the traces URL,
    e.g. ``http://127.0.0.1:6006/v1/traces``; None: the exporter's ``OTEL_*`` variables).
    Call ``force_flush()`` or ``shutdown()`` on it to send what is pending (at exit it does)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise ImportError(
            "sending traces over OTLP needs the otel extra: pip install 'loopkit[otel]'"
        ) from e
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "loopkit"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def traced_from_environment(model: ChatClient) -> ChatClient:
    """``model`` traced to the OTLP endpoint the environment names (see the module docs), or
    ``model`` itself when none is set. One provider per endpoint for the process (its batches
    are sent from one background thread)."""
    endpoint = next((os.environ[v] for v in ENDPOINT_VARIABLES if os.environ.get(v)), None)
    if endpoint is None:
        return model
    from loopkit.middleware.otel import OpenTelemetryChatClient

    provider = _FROM_ENVIRONMENT.get(endpoint)
    if provider is None:
        # None: the exporter reads the variables itself (and appends /v1/traces to the
        # general endpoint, as the specification says).
        provider = _FROM_ENVIRONMENT[endpoint] = otlp_tracer_provider()
    return OpenTelemetryChatClient(model, tracer_provider=provider)


def flush_traces(timeout_millis: int = 10_000) -> bool:
    """Send the spans still pending in the providers :func:`traced_from_environment` made
    (they are sent at exit anyway, and every few seconds); False when one timed out."""
    return all(p.force_flush(timeout_millis) for p in _FROM_ENVIRONMENT.values())
