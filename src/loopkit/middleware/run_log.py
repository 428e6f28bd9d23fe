"""The run log: one JSON object a line for everything a run did, written as it happens.

Events: ``start`` (model, tools, limits), ``round`` (one model request: ms, tokens, calls, text),
``tool`` (one tool call: name, arguments, ms, the result as the model saw it), ``error`` (a request
that failed) and ``result`` (status, reason, totals). Each line is written whole and flushed, so a
run that dies leaves a log that is valid JSON lines up to its last line.

A line is ``{"time", "type", "run_id", "parent_run_id", "data"}``: ``run_id`` names the
:class:`~loopkit.run_context.RunContext` the line belongs to (absent for a line written outside
any run), ``parent_run_id`` the run that started it (a child run: an agent used as a tool).
Several runs, concurrent ones too, can share one log; each keeps its own totals. Events a run
reports through :meth:`RunContext.emit <loopkit.run_context.RunContext.emit>` (``compaction``,
``fallback``, ``retry``, ``child_run``, ...) become lines of their type with the event's data;
``run_end`` (status, error, output type) gets the run's totals added (and is not written for the
run a bare pipeline's loop opens for one request: its caller frames that run).

Every line goes through a :class:`~loopkit.redaction.Redactor` (secret shapes, and the values of
secret-looking environment variables as they are when the line is written). Odd text never stops
the log: lone surrogates (undecodable file names), bytes, objects whose ``str()`` raises, NaN and
cycles are spelled out and the line stays valid JSON in UTF-8.

A line is rendered straight to JSON by the redactor: no logging framework in between
(structlog's processor chain cost more than the rest of a line, and importing it pulled in rich).
Its start (type and run ids) is rendered once per run and type, its data at each line (the
round line searches only its text and call names for secret shapes: the rest are the log's own
keys and numbers). A file the log opened is written unbuffered, one ``write`` per line; a stream
it was given gets a ``write`` and a ``flush``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.redaction import Redactor
from loopkit.run_context import RunContext, RunEvent, current_run

if TYPE_CHECKING:  # annotations only: naming RunLog loads no pydantic model
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
    )
    from loopkit.abstractions.content import ChatMessage, UsageDetails
    from loopkit.middleware.function_invocation import ToolInvocation
# The wall clock by its own names: ``time.monotonic``/``time.perf_counter`` (durations) are read
# through the module, which tests replace with a fake clock.
_wall_time, _strftime, _localtime = time.time, time.strftime, time.localtime


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
    """Writes one line to a text stream and flushes, under a lock (threads may share a log)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Write ``line`` (which ends with its line break) and flush."""
        with self._lock:
            try:
                self._stream.write(line)
            except UnicodeEncodeError:  # a stream that cannot take non-ASCII: escape it
                self._stream.write(_ascii_line(line) + "\n")
            self._stream.flush()


class _FileLineWriter:
    """Writes one line to a file the log opened: unbuffered, so one ``write`` call hands the
    whole line to the operating system (what a text stream's write and flush did, without its
    buffer in between)."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Write ``line`` (which ends with its line break) whole."""
        data = line.encode("utf-8")  # lines are valid UTF-8 (the redactor sees to it)
        with self._lock:
            written = self._file.write(data)
            if written < len(data):  # a short write (a full disk, a signal): the rest follows
                view = memoryview(data)
                while written < len(data):
                    written += self._file.write(view[written:])


class _Clock:
    """Local wall-clock time as ``YYYY-MM-DDTHH:MM:SS.mmm`` (what ``datetime.isoformat`` gives
    with ``timespec="milliseconds"``): the date and time part made once a second, the whole
    once a millisecond (a round's lines mostly share one)."""

    __slots__ = ("_milli", "_prefix", "_second", "_text")

    def __init__(self) -> None:
        self._milli = self._second = -1
        self._prefix = self._text = ""

    def now(self) -> str:
        milli = int(_wall_time() * 1000)
        if milli == self._milli:
            return self._text
        second, part = divmod(milli, 1000)
        if second != self._second:
            self._prefix = _strftime("%Y-%m-%dT%H:%M:%S", _localtime(second))
            self._second = second
        self._text = text = f"{self._prefix}.{part:03d}"
        self._milli = milli
        return text


@dataclass(slots=True)
class _Tokens:
    """Token counters (plain ints: a ``UsageDetails`` sum validates a new model each round)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, usage: UsageDetails | _Tokens) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_input_tokens += usage.cached_input_tokens
        self.cache_creation_input_tokens += usage.cache_creation_input_tokens

    def details(self) -> UsageDetails:
        from loopkit.abstractions.content import UsageDetails

        return UsageDetails(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
        )


# A response without usage counts as zero tokens: the same four counters as ``UsageDetails``,
# never changed (a plain object: naming RunLog loads no pydantic model).
_NO_USAGE = _Tokens()


@dataclass(slots=True)
class _RunTotals:
    """What one run wrote to one log."""

    started_at: float = field(default_factory=time.monotonic)
    started: bool = False
    subscribed: bool = False
    rounds: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens: _Tokens = field(default_factory=_Tokens)


class RunLog:
    """Writes run events as JSON lines and keeps each run's totals.

    The attributes ``rounds``, ``tool_calls``, ``tool_errors``, ``usage`` and ``started`` count
    everything written to this log (all its runs); :meth:`totals` gives one run's.

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
            # unbuffered bytes: every line is written whole, as it comes (UTF-8 whatever the
            # locale)
            file = self.path.open("ab", buffering=0)
            self._stream: TextIO | BinaryIO = file
            self._writer: _LineWriter | _FileLineWriter = _FileLineWriter(file)
            self._owns_stream = True
        else:
            self.path = None
            self._stream = target
            self._writer = _LineWriter(target)
            self._owns_stream = False
        self.max_text_chars = max_text_chars
        self.redactor = redactor or Redactor(environ=environ)
        self._clock = _Clock()
        # The start of each line of a run and type, up to its data: (type, run id) -> JSON text
        self._heads: dict[tuple[str, str | None], str] = {}
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        #: True once a ``start`` line was written (by any run, or by the caller outside a run).
        self.started = False
        #: True once the caller wrote ``start`` itself outside any run (it frames the runs).
        self.started_outside_runs = False
        self.finished = False
        self.started_at = time.monotonic()
        self.rounds = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self._tokens = _Tokens()

    @property
    def usage(self) -> UsageDetails:
        """Tokens of every round written to this log (all its runs)."""
        return self._tokens.details()

    # events ----------------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call ``callback(event)`` for every event written (type, data, and the run id when the
        line belongs to a run)."""
        self._subscribers.append(callback)

    def write(self, event_type: str, **data: Any) -> None:
        """Write one event line now (in the current run, if any)."""
        self._write(current_run(), event_type, data)

    def _write(
        self,
        run: RunContext | None,
        event_type: str,
        data: dict[str, Any],
        texts: Sequence[str] | None = None,
    ) -> None:
        """One line; ``texts``: see :meth:`Redactor.json_line`."""
        if self._stream.closed:
            return
        head = self._heads.get((event_type, None if run is None else run.run_id))
        if head is None:
            head = self._head(run, event_type)
        line = self.redactor.json_line(f'{{"time":"{self._clock.now()}",{head}', data, texts, "}\n")
        self._writer.write(line)
        if self._subscribers:  # subscribers get type, the run ids and the data
            for callback in self._subscribers:
                callback(self._envelope(run, event_type, data))

    @staticmethod
    def _envelope(run: RunContext | None, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
        """A line without its time: type, the run ids (in a run) and the data."""
        line: dict[str, Any] = {"type": event_type}
        if run is not None:
            line["run_id"] = run.run_id
            if run.parent is not None:
                line["parent_run_id"] = run.parent.run_id
        line["data"] = data
        return line

    def _head(self, run: RunContext | None, event_type: str) -> str:
        """The JSON of a line's type and run ids, up to ``"data":`` (made once per run and
        type). Redacted as it is made; :meth:`Redactor.json_line` replaces in it, at every
        line, the secret values the environment holds then."""
        fields = self._envelope(run, event_type, {})
        del fields["data"]
        head = self.redactor.to_json(fields)[1:-1] + ',"data":'
        if len(self._heads) >= 4096:  # a long-lived log of many runs: forget the old ones
            self._heads.clear()
        self._heads[(event_type, None if run is None else run.run_id)] = head
        return head

    def _cut(self, text: str) -> str:
        if self.max_text_chars is not None and len(text) > self.max_text_chars:
            return text[: self.max_text_chars] + f"… [cut, {len(text)} characters]"
        return text

    def _totals_of(self, run: RunContext) -> _RunTotals:
        return run.state_for(self, _RunTotals)

    def start(
        self,
        *,
        tools: Sequence[str] = (),
        model: str | None = None,
        limits: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        """The first line: what the run has to work with."""
        run = current_run()
        self.started = True
        if run is None:
            self.started_outside_runs = True
            self.started_at = time.monotonic()
        else:
            self._totals_of(run).started = True
        self._write(
            run, "start", {"model": model, "tools": list(tools), "limits": limits or {}, **extra}
        )

    def round(self, response: ChatResponse, ms: float) -> None:
        """A ``round`` line: one model request of the current run."""
        self._round(current_run(), response, ms)

    def _round(self, run: RunContext | None, response: ChatResponse, ms: float) -> None:
        usage: UsageDetails | _Tokens = response.usage or _NO_USAGE
        calls, text = _calls_and_text(response)
        text = self._cut(text)
        self.rounds += 1
        self._tokens.add(usage)
        number = self.rounds
        if run is not None:
            totals = self._totals_of(run)
            totals.rounds += 1
            totals.tokens.add(usage)
            number = totals.rounds
        self._write(
            run,
            "round",
            {
                "round": number,
                "ms": round(ms),
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "calls": calls,
                "text": text,
            },
            # the only text of the line: the rest are our keys and numbers (added up above)
            [text, *calls],
        )

    def tool(self, invocation: ToolInvocation) -> None:
        """A ``tool`` line: one tool call of the current run."""
        run = current_run()
        self.tool_calls += 1
        self.tool_errors += int(invocation.error)
        if run is not None:
            totals = self._totals_of(run)
            totals.tool_calls += 1
            totals.tool_errors += int(invocation.error)
        self._write(
            run,
            "tool",
            {
                "name": invocation.call.name,
                "arguments": invocation.call.arguments,
                "ms": round(invocation.ms, 1),
                "error": invocation.error,
                "result": invocation.result,
            },
        )

    def error(self, message: str, **data: Any) -> None:
        """An ``error`` line: a request that failed."""
        self.write("error", message=message, **data)

    def next_round(self, run: RunContext | None = None) -> int:
        """The number the next ``round`` line of ``run`` (default: the current run) will get."""
        run = run if run is not None else current_run()
        if run is not None and run.has_state(self):
            return self._totals_of(run).rounds + 1
        return self.rounds + 1

    def totals(self, run: RunContext | None = None) -> dict[str, Any]:
        """The totals of ``run`` (default: the current run, if it wrote here), else of every
        line this log has been given."""
        run = run if run is not None else current_run()
        if run is not None and run.has_state(self):
            t = self._totals_of(run)
            rounds, calls, errors, usage = t.rounds, t.tool_calls, t.tool_errors, t.tokens
            seconds = time.monotonic() - run.started
        else:
            rounds, calls, errors, usage = (
                self.rounds,
                self.tool_calls,
                self.tool_errors,
                self._tokens,
            )
            seconds = time.monotonic() - self.started_at
        return {
            "rounds": rounds,
            "tool_calls": calls,
            "tool_errors": errors,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "seconds": round(seconds, 2),
        }

    def result(self, status: str, reason: str | None = None, **extra: Any) -> None:
        """The last line: how the run ended, with its totals."""
        self.finished = True
        self.write("result", status=status, reason=reason, totals=self.totals(), **extra)

    def follow(self, run: RunContext) -> None:
        """Write ``run``'s events (:meth:`RunContext.emit`) as lines of this log (once per run)."""
        totals = self._totals_of(run)
        if totals.subscribed:
            return
        totals.subscribed = True
        run.subscribe(lambda event: self._event(run, event))

    def _event(self, run: RunContext, event: RunEvent) -> None:
        if event.type == "run_end":
            if run.implicit:
                return  # the caller of a bare pipeline writes its own ending (``result``)
            self._write(run, "run_end", {**event.data, "totals": self.totals(run)})
            return
        self._write(run, event.type, event.data)

    def close(self) -> None:
        """Close the file this log opened (a stream given to it stays open)."""
        if self._owns_stream and not self._stream.closed:
            self._stream.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunLogChatClient(DelegatingChatClient):
    """Logs each model request as a ``round`` and each tool call the loop above makes as a ``tool``.

    Put it below the function-invocation loop (add it after ``use_function_invocation``) so that
    it sees each round. A run's first request writes its ``start`` line (unless the caller wrote
    one itself outside any run). It is
    :class:`~loopkit.run_context.RunAware`: at the start of each run it follows the run's events,
    so what other middleware reports (compaction, fallback, retries, child runs, the end of the
    run) lands in the log too.
    """

    def __init__(self, inner: ChatClient, log: RunLog) -> None:
        super().__init__(inner)
        self.log = log

    def on_run_start(self, run: RunContext) -> None:
        """Follow ``run``'s events (called once per run by the agent or the loop)."""
        self.log.follow(run)

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        """A ``tool`` line for each call the loop above made."""
        self.log.tool(invocation)

    def _ensure_started(self, run: RunContext | None, options: ChatOptions | None) -> None:
        if run is None:
            if not self.log.started:
                self._start(run, options)
            return
        totals = self.log._totals_of(run)
        if totals.started:
            return
        totals.started = True
        if run.implicit and self.log.started_outside_runs:
            return  # the caller wrote the start line (and will write the result)
        self._start(run, options)

    def _start(self, run: RunContext | None, options: ChatOptions | None) -> None:
        extra: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        if run is not None:
            if run.name is not None:
                extra["agent"] = run.name
            for key, value in run.metadata.items():
                if key == "limits" and isinstance(value, dict):
                    limits = value
                elif key not in ("model", "tools"):
                    extra[key] = value
        self.log.start(
            tools=[t.name for t in options.tools] if options else [],
            model=(options.model_id if options else None) or _model_name(self.inner),
            limits=limits,
            **extra,
        )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Forward the request; a ``round`` line for the answer (``error`` if it failed)."""
        run = current_run()
        self._ensure_started(run, options)
        started = time.perf_counter()
        try:
            response = await self.inner.get_response(messages, options)
        except Exception as e:
            self.log._write(
                run, "error", {"message": describe_error(e), "round": self.log.next_round(run)}
            )
            raise
        self.log._round(run, response, (time.perf_counter() - started) * 1000.0)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Forward the stream; a ``round`` line once it ended (``error`` if it failed)."""
        run = current_run()
        self._ensure_started(run, options)
        started = time.perf_counter()
        updates: list[ChatResponseUpdate] = []
        try:
            async for update in self.inner.get_streaming_response(messages, options):
                updates.append(update)
                yield update
        except Exception as e:
            self.log._write(
                run, "error", {"message": describe_error(e), "round": self.log.next_round(run)}
            )
            raise
        from loopkit.abstractions.chat import response_from_updates

        self.log._round(
            run, response_from_updates(updates), (time.perf_counter() - started) * 1000.0
        )


_CONTENT_TYPES: tuple[Any, Any, Any] | None = None


def _content_types() -> tuple[Any, Any, Any]:
    """The content classes and the assistant role, imported on first use (naming ``RunLog``
    loads no pydantic model) and kept: a round's line reads them every time."""
    global _CONTENT_TYPES
    if _CONTENT_TYPES is None:
        from loopkit.abstractions.content import ChatRole, FunctionCallContent, TextContent

        _CONTENT_TYPES = (FunctionCallContent, TextContent, ChatRole.ASSISTANT)
    return _CONTENT_TYPES


def _calls_and_text(response: ChatResponse) -> tuple[list[str], str]:
    """The names of ``response.function_calls`` and ``response.text`` (the text of the last
    assistant message that has some), in one pass over the contents: the two properties walk
    them twice and cost a round's line more than its encoding."""
    call_type, text_type, assistant = _content_types()
    calls: list[str] = []
    text = ""
    for message in response.messages:
        pieces: list[str] | None = None
        for content in message.contents:
            if isinstance(content, call_type):
                calls.append(content.name)
            elif isinstance(content, text_type):
                if pieces is None:
                    pieces = [content.text]
                else:
                    pieces.append(content.text)
        if pieces is not None and message.role == assistant:
            joined = "".join(pieces)
            if joined:
                text = joined
    return calls, text


def _model_name(client: object) -> str | None:
    """The model the innermost client names (``model`` or ``model_id``), if any."""
    while getattr(client, "inner", None) is not None:
        client = client.inner  # type: ignore[attr-defined]
    for attribute in ("model", "model_id"):
        value = getattr(client, attribute, None)
        if isinstance(value, str):
            return value
    return None
