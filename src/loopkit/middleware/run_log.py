"""The run log: one JSON object a line for everything a run did, written as it happens.

Events: ``start`` (model, tools, limits), ``round`` (one model request: ms, tokens, calls, text),
``tool`` (one tool call: name, arguments, ms, the result as the model saw it), ``error`` (a request
that failed) and ``result`` (status, reason, totals). Each line is written whole and flushed, so a
run that dies leaves a log that is valid JSON lines up to its last line.

Every line goes through a :class:`~loopkit.redaction.Redactor` (secret shapes, and the values of
secret-looking environment variables as they are when the line is written). Odd text never stops
the log: lone surrogates (undecodable file names), bytes, objects whose ``str()`` raises, NaN and
cycles are spelled out and the line stays valid JSON in UTF-8.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    response_from_updates,
)
from loopkit.abstractions.content import ChatMessage, UsageDetails
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import ToolInvocation
from loopkit.redaction import Redactor


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret (8 characters or more)."""
    return Redactor(environ=environ).secret_values()


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with the given ``secrets`` and every secret shape replaced by ``[redacted]``.

    Kept for callers of the old helper; :class:`~loopkit.redaction.Redactor` also reads the
    environment's secret values.
    """
    return Redactor(environ={}, secrets=secrets, min_secret_chars=1).redact(text)


def describe_error(error: BaseException) -> str:
    """``Type: message`` for a log line, even when the exception's ``str()`` raises."""
    try:
        return f"{type(error).__name__}: {error}"
    except Exception:
        return f"{type(error).__name__}: <message could not be read>"


def _ascii_line(line: str) -> str:
    """The same JSON line with every non-ASCII character as a ``\\u`` escape."""
    return json.dumps(json.loads(line), ensure_ascii=True, separators=(",", ":"))


class _LineWriter:
    """structlog logger factory target: writes one line and flushes, under a lock."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def msg(self, message: str) -> None:
        with self._lock:
            try:
                self._stream.write(message + "\n")
            except UnicodeEncodeError:  # a stream that cannot take non-ASCII: escape it
                self._stream.write(_ascii_line(message) + "\n")
            self._stream.flush()

    info = msg


class RunLog:
    """Writes run events as JSON lines (structlog underneath) and keeps the run's totals.

    ``target`` is a path (created, parents too; appended to) or an open text stream. Subscribers
    registered with :meth:`subscribe` receive every event dict, e.g. to draw progress (the data
    as given: redact what you show). ``redactor`` (default: one reading ``environ``, which
    defaults to ``os.environ`` at each line) redacts every line.
    """

    def __init__(
        self,
        target: str | Path | TextIO,
        *,
        max_text_chars: int | None = 2000,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        if isinstance(target, str | Path):
            self.path: Path | None = Path(target)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._stream: TextIO = self.path.open("a", encoding="utf-8")
            self._owns_stream = True
        else:
            self.path = None
            self._stream = target
            self._owns_stream = False
        self.max_text_chars = max_text_chars
        self.redactor = redactor or Redactor(environ=environ)
        self._logger = structlog.wrap_logger(
            _LineWriter(self._stream),
            processors=[self._add_time, structlog.processors.EventRenamer("type"), self._render],
        )
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self.started = False
        self.finished = False
        self.started_at = time.monotonic()
        self.rounds = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.usage = UsageDetails()

    # structlog processors --------------------------------------------------------------------
    @staticmethod
    def _add_time(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event["time"] = datetime.now().isoformat(timespec="milliseconds")
        return event

    def _render(self, _: Any, __: str, event: MutableMapping[str, Any]) -> str:
        ordered = {"time": event.pop("time"), "type": event.pop("type"), **event}
        return self.redactor.to_json(ordered)

    # events ----------------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call ``callback(event)`` for every event written (type + data)."""
        self._subscribers.append(callback)

    def write(self, event_type: str, **data: Any) -> None:
        """Write one event line now."""
        if self._stream.closed:
            return
        self._logger.info(event_type, data=data)
        for callback in self._subscribers:
            callback({"type": event_type, "data": data})

    def _cut(self, text: str) -> str:
        if self.max_text_chars is not None and len(text) > self.max_text_chars:
            return text[: self.max_text_chars] + f"… [cut, {len(text)} characters]"
        return text

    def start(
        self,
        *,
        tools: Sequence[str] = (),
        model: str | None = None,
        limits: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        """The first line: what the run has to work with."""
        self.started = True
        self.started_at = time.monotonic()
        self.write("start", model=model, tools=list(tools), limits=limits or {}, **extra)

    def round(self, response: ChatResponse, ms: float) -> None:
        self.rounds += 1
        usage = response.usage or UsageDetails()
        self.usage = self.usage + usage
        self.write(
            "round",
            round=self.rounds,
            ms=round(ms),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            calls=[c.name for c in response.function_calls],
            text=self._cut(response.text),
        )

    def tool(self, invocation: ToolInvocation) -> None:
        self.tool_calls += 1
        self.tool_errors += int(invocation.error)
        self.write(
            "tool",
            name=invocation.call.name,
            arguments=invocation.call.arguments,
            ms=round(invocation.ms, 1),
            error=invocation.error,
            result=invocation.result,
        )

    def error(self, message: str, **data: Any) -> None:
        self.write("error", message=message, **data)

    def totals(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cached_input_tokens": self.usage.cached_input_tokens,
            "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
            "seconds": round(time.monotonic() - self.started_at, 2),
        }

    def result(self, status: str, reason: str | None = None, **extra: Any) -> None:
        """The last line: how the run ended, with its totals."""
        self.finished = True
        self.write("result", status=status, reason=reason, totals=self.totals(), **extra)

    def close(self) -> None:
        if self._owns_stream and not self._stream.closed:
            self._stream.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunLogChatClient(DelegatingChatClient):
    """Logs each model request as a ``round`` and each tool call the loop above makes as a ``tool``.

    Put it below the function-invocation loop (add it after ``use_function_invocation``) so that
    it sees each round. The first request writes ``start`` unless the caller already did.
    """

    def __init__(self, inner: ChatClient, log: RunLog) -> None:
        super().__init__(inner)
        self.log = log

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        self.log.tool(invocation)

    def _ensure_started(self, options: ChatOptions | None) -> None:
        if not self.log.started:
            self.log.start(
                tools=[t.name for t in options.tools] if options else [],
                model=options.model_id if options else None,
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self._ensure_started(options)
        started = time.perf_counter()
        try:
            response = await self.inner.get_response(messages, options)
        except Exception as e:
            self.log.error(describe_error(e), round=self.log.rounds + 1)
            raise
        self.log.round(response, (time.perf_counter() - started) * 1000.0)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self._ensure_started(options)
        started = time.perf_counter()
        updates: list[ChatResponseUpdate] = []
        try:
            async for update in self.inner.get_streaming_response(messages, options):
                updates.append(update)
                yield update
        except Exception as e:
            self.log.error(describe_error(e), round=self.log.rounds + 1)
            raise
        self.log.round(response_from_updates(updates), (time.perf_counter() - started) * 1000.0)
