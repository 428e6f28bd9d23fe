"""The script a :class:`~tests.fakes.fake_llm_server.FakeLLMServer` plays: one :class:`Turn` per
request (a reply, tool calls, an HTTP error, a malformed body), optionally broken on the way
(:class:`Cut`: a reset or close at a chosen point, a stall, a trickle, an in-band error event).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

WireFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call the fake model makes. ``arguments`` may be a raw string (e.g. invalid JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class ScriptedUsage:
    """Token counts in Anthropic's terms: ``input_tokens`` excludes cache reads and writes.

    For the OpenAI format the server reports ``prompt_tokens = input + cache_read + cache_creation``
    and ``prompt_tokens_details.cached_tokens = cache_read`` (OpenAI has no cache-write count).
    """

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class Cut:
    """Where and how the server breaks the connection instead of finishing its answer.

    ``events`` (streaming) is how many SSE events are sent before the cut, counted like a slice:
    ``0`` cuts right after the headers, ``-1`` sends all but the last (``[DONE]`` or
    ``message_stop``). ``body_bytes`` (non-streaming) is how many bytes of the JSON body are sent;
    the headers announce the whole length, or (``announce_length`` False) none, so the body is
    delimited by the close and the client sees EOF inside the JSON. With neither, the cut comes
    before the status line. ``reset`` sends a TCP RST (``SO_LINGER`` 0, then close), otherwise the server closes in
    order (FIN), as a proxy that gives up does. ``stall`` waits that many seconds at the cut point
    first (cut short when the server stops).
    """

    events: int | None = None
    body_bytes: int | None = None
    reset: bool = True
    stall: float = 0.0
    announce_length: bool = True

    @property
    def before_headers(self) -> bool:
        return self.events is None and self.body_bytes is None


@dataclass(frozen=True)
class Turn:
    """One scripted response: a model reply (text and/or tool calls) or a failure.

    Build them with the class methods: :meth:`reply`, :meth:`tool_call`, :meth:`calls`,
    :meth:`error`, :meth:`rate_limited`, :meth:`overloaded`, :meth:`malformed`; any turn may carry a
    ``delay`` (seconds before the server answers, e.g. longer than the client's timeout).
    """

    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: ScriptedUsage = field(default_factory=ScriptedUsage)
    #: For a reply: overrides the natural stop reason. For an error: the HTTP status.
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Sent verbatim as the body (a malformed response), with status ``status``.
    raw_body: str | None = None
    delay: float = 0.0
    #: Split every text and argument string into this many stream deltas (streaming only).
    stream_pieces: int = 3
    #: Break the connection instead of finishing the answer (see :class:`Cut`).
    cut: Cut | None = None
    #: Streamed: after this many events, an in-band error event (``error_type``, ``error_message``)
    #: and the end of the stream, as Anthropic does when it overloads mid-answer.
    error_after_events: int | None = None
    #: ``(pause, pieces)``: send the body in ``pieces`` parts (streamed: each event) ``pause``
    #: seconds apart.
    trickle: tuple[float, int] | None = None

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def reply(cls, text: str, *, usage: ScriptedUsage | None = None, delay: float = 0.0) -> Turn:
        """A plain text answer."""
        return cls(text=text, usage=usage or ScriptedUsage(), delay=delay)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
        text: str | None = None,
        usage: ScriptedUsage | None = None,
    ) -> Turn:
        """One tool call, optionally preceded by text."""
        args = {} if arguments is None else arguments
        call = ScriptedToolCall(name, args, call_id) if call_id else ScriptedToolCall(name, args)
        return cls(text=text, tool_calls=(call,), usage=usage or ScriptedUsage())

    @classmethod
    def calls(
        cls,
        *calls: ScriptedToolCall,
        text: str | None = None,
        usage: ScriptedUsage | None = None,
    ) -> Turn:
        """Several tool calls in one turn."""
        return cls(text=text, tool_calls=tuple(calls), usage=usage or ScriptedUsage())

    @classmethod
    def error(
        cls,
        status: int,
        error_type: str = "api_error",
        message: str = "scripted failure",
        *,
        headers: dict[str, str] | None = None,
    ) -> Turn:
        """An HTTP error with the provider's JSON error body."""
        return cls(
            status=status, error_type=error_type, error_message=message, headers=headers or {}
        )

    @classmethod
    def rate_limited(cls, retry_after: str | float = 1) -> Turn:
        """A 429 with a ``Retry-After`` header (seconds or an HTTP date)."""
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        return cls.error(
            429, "rate_limit_error", "rate limit exceeded", headers={"retry-after": value}
        )

    @classmethod
    def overloaded(cls) -> Turn:
        """Anthropic's 529 ``overloaded_error``."""
        return cls.error(529, "overloaded_error", "Overloaded")

    @classmethod
    def malformed(cls, body: str = "<html>this is not JSON</html>", status: int = 200) -> Turn:
        """A body that is not the JSON the format promises (sent whole, with its length)."""
        return cls(status=status, raw_body=body)

    def reset_before_headers(self, *, reset: bool = True) -> Turn:
        """This turn, but the server reads the request and drops the connection unanswered."""
        return replace(self, cut=Cut(reset=reset))

    def cut_after(self, events: int, *, reset: bool = True) -> Turn:
        """This turn streamed, but the connection breaks after ``events`` SSE events."""
        return replace(self, cut=Cut(events=events, reset=reset))

    def truncated(
        self, body_bytes: int, *, reset: bool = False, announce_length: bool = True
    ) -> Turn:
        """This turn answered without streaming, but only ``body_bytes`` of its JSON arrive."""
        cut = Cut(body_bytes=body_bytes, reset=reset, announce_length=announce_length)
        return replace(self, cut=cut)

    def trickled(self, pause: float, pieces: int = 4) -> Turn:
        """This turn sent slowly: without streaming, its body in ``pieces`` parts with ``pause``
        seconds between them; streamed, ``pause`` seconds between any two SSE events."""
        return replace(self, trickle=(pause, pieces))

    def error_event_after(
        self, events: int, error_type: str = "overloaded_error", message: str = "Overloaded"
    ) -> Turn:
        """This turn streamed, but after ``events`` events the server sends an error event
        (Anthropic: ``event: error``; OpenAI format: a ``data:`` line with an ``error`` object)."""
        return replace(
            self, error_after_events=events, error_type=error_type, error_message=message
        )

    def stall_after(self, events: int, seconds: float) -> Turn:
        """This turn streamed, but the server goes silent after ``events`` events for
        ``seconds`` (then closes)."""
        return replace(self, cut=Cut(events=events, reset=False, stall=seconds))

    @property
    def is_failure(self) -> bool:
        return self.status >= 400 or self.raw_body is not None
