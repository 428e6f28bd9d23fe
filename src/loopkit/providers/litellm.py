"""``LiteLLMChatClient``: Claude, OpenAI and every other model litellm supports, as a ChatClient.

litellm is imported lazily, on the first request (or by :func:`start_background_import`), never
at ``import loopkit``: importing it takes 5 to 8 seconds on the project's machines. Before the
import, ``LITELLM_LOCAL_MODEL_COST_MAP=True`` and ``LITELLM_OFFLINE_MODE=true`` are set (unless the
environment already sets them): otherwise litellm downloads its model price list from GitHub at
import, which hangs or fails without internet and makes runs depend on a third-party file.

One retry layer only: litellm's own retries (``num_retries``) and the OpenAI SDK's
(``max_retries``) are turned off; wrap the client in
:class:`~loopkit.middleware.retry.RetryingChatClient` (``ChatClientBuilder.use_retries()``) instead.
Every failure surfaces as a :class:`~loopkit.errors.ProviderError` saying whether it is worth
retrying, raised without litellm's exception attached (``__cause__`` and ``__context__`` are
empty): that exception may carry the API key in its message, attributes or request.

``timeout`` bounds a non-streaming request as a whole (connect, headers and body), and a streaming
one until its response starts and then any silence on the connection: a stream that goes on
delivering is not cut off, one that goes silent is. The first request of a process also spends
up to about a second in litellm's lazy set-up, which counts against it.

A stream that breaks off (reset, closed, truncated, ended without the provider's finish) is an
error, never an empty answer: retryable while nothing was handed to the caller, otherwise not (a
half-delivered answer cannot be replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from loopkit.abstractions.chat import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
)
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    FunctionCallContent,
    TextContent,
    UsageContent,
)
from loopkit.errors import ProviderError
from loopkit.providers.history_cache import HistoryCache
from loopkit.providers.litellm_errors import (
    classify,
    describe,
    is_timeout,
    redact,
    secret_values,
)
from loopkit.providers.litellm_mapping import (
    AUTH_HEADERS,
    attr,
    checked_litellm_params,
    function_call_from,
    map_finish_reason,
    map_usage,
    mark_cache_breakpoints,
    message_to_openai,
    options_to_kwargs,
    request_messages,
    str_mapping,
    to_response_format,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "LiteLLMChatClient",
    "is_anthropic_model",
    "litellm_loaded",
    "load_litellm",
    "preload",
    "start_background_import",
]

#: Seconds a request may take (a stream: until it starts, then any silence) before it fails as a
#: (retryable) timeout.
DEFAULT_TIMEOUT = 120.0

#: Defaults set before importing litellm (see the module docstring); existing values win.
OFFLINE_ENVIRONMENT = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}

_import_lock = threading.Lock()
_background: threading.Thread | None = None
_module: ModuleType | None = None


def load_litellm() -> ModuleType:
    """Import litellm (once) with the offline defaults and return the module. Blocks."""
    global _module
    if _module is not None:
        return _module
    with _import_lock:
        if _module is None:
            for key, value in OFFLINE_ENVIRONMENT.items():
                os.environ.setdefault(key, value)
            import litellm

            # litellm prints a "Give Feedback / Get Help" banner to stdout on every exception;
            # loopkit reports errors itself and stdout may carry a UI or a protocol.
            litellm.suppress_debug_info = True
            _module = litellm
    return _module


def start_background_import() -> threading.Thread:
    """Start importing litellm in a daemon thread and return the thread (idempotent).

    Call it early (e.g. while parsing configuration or starting MCP servers) where a run will
    need litellm, so the first request does not wait for the whole import.
    """
    global _background
    with _import_lock:
        if _background is None:
            _background = threading.Thread(
                target=_import_quietly, name="loopkit-litellm-import", daemon=True
            )
            _background.start()
        return _background


#: Alias of :func:`start_background_import`.
preload = start_background_import


def _import_quietly() -> None:
    # A failed background import is reported by the request that needs litellm, in context.
    with contextlib.suppress(Exception):
        load_litellm()


def litellm_loaded() -> bool:
    """True once litellm has been imported by this module."""
    return _module is not None


async def _litellm() -> ModuleType:
    if _module is not None:
        return _module
    # The import takes seconds: keep the event loop (UI, MCP pipes, timers) running meanwhile.
    return await asyncio.to_thread(load_litellm)


def _check_json_mode(model: str, options: ChatOptions | None) -> None:
    """Refuse ``ResponseFormat.json()`` for Anthropic models: litellm has no JSON mode for them
    and drops ``{"type": "json_object"}`` without a word (litellm 1.110; pinned by
    tests/providers/test_litellm_response_format.py), so the answer would be prose."""
    response_format = getattr(options, "response_format", None)
    if response_format is None or not is_anthropic_model(model):
        return
    if to_response_format(response_format) == {"type": "json_object"}:
        raise ValueError(
            f"ChatOptions.response_format asks for any JSON object, which {model!r} cannot be "
            "held to (litellm drops it for Anthropic models); give a schema: "
            "ResponseFormat.json_schema(...) or ResponseFormat.for_type(...)"
        )


def is_anthropic_model(model: str) -> bool:
    """True for Anthropic's models by any route (``anthropic/...``, Bedrock, Vertex, ...)."""
    lowered = model.lower()
    return lowered.startswith("anthropic/") or "claude" in lowered


def _provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "litellm"


class LiteLLMChatClient:
    """A :class:`~loopkit.abstractions.chat.ChatClient` over ``litellm.acompletion``.

    ``model`` is a litellm model string (``anthropic/claude-sonnet-4-5``, ``openai/gpt-5``,
    ``ollama/qwen2.5-coder``, ``openai/<name>`` with ``api_base`` for any OpenAI-compatible server).
    Without ``api_key`` litellm reads the usual environment variables (``ANTHROPIC_API_KEY``,
    ``OPENAI_API_KEY``, ...). ``api_version`` is for hosts that version their API (Azure).
    ``prompt_caching`` (default: on for Anthropic models) marks cache breakpoints on the system
    prompt, the last tool and the latest turn.

    ``temperature`` and ``max_tokens`` are defaults for every request (``ChatOptions.temperature``
    and ``ChatOptions.max_output_tokens`` win for one request); left ``None`` they are not sent.
    ``extra_headers`` go with every request, ``extra_body`` is merged into the JSON body of
    OpenAI-compatible requests. ``litellm_params`` is the one escape hatch: any other
    ``litellm.acompletion`` argument (``aws_region_name``, ``reasoning_effort``, ...), sent with
    every request; ``ChatOptions.additional_properties`` win over it for one request. Every other
    keyword is a ``TypeError`` (and a type error), so a typo is never sent on the wire.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_caching: bool | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        litellm_params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(
                f"model must be a litellm model string such as 'anthropic/claude-sonnet-4-5', "
                f"got {model!r}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float)
        ):
            raise ValueError(f"temperature must be a number, got {temperature!r}")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be a positive whole number, got {max_tokens!r}")
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.api_version = api_version
        self.timeout = float(timeout)
        self.prompt_caching = (
            is_anthropic_model(model) if prompt_caching is None else prompt_caching
        )
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_headers = str_mapping("extra_headers", extra_headers)
        self.extra_body = str_mapping("extra_body", extra_body)
        self.litellm_params = checked_litellm_params(litellm_params)
        # Each message is put into the wire format once, not once per request (see
        # loopkit.providers.history_cache for when a kept one is used again).
        self._wire_cache: HistoryCache[list[dict[str, Any]]] = HistoryCache(message_to_openai)

    def __repr__(self) -> str:
        # Never show the key, nor a password in api_base.
        base = f", api_base={redact(self.api_base, self._secrets())!r}" if self.api_base else ""
        return f"LiteLLMChatClient({self.model!r}{base})"

    def _secrets(self) -> list[str | None]:
        """What this client knows to be secret: its key, secret-named ``litellm_params`` and
        headers (``x-api-key``, an ``Authorization`` value)."""
        auth = [
            v
            for k, v in self.extra_headers.items()
            if k.lower() in AUTH_HEADERS and isinstance(v, str)
        ]
        return [
            self._api_key,
            *secret_values(self.litellm_params),
            *secret_values(self.extra_headers),
            *auth,
        ]

    # -- request -----------------------------------------------------------------------------
    def build_request(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> dict[str, Any]:
        """The keyword arguments for ``litellm.acompletion`` (without the API key).

        The message dicts in it are kept for the next request of the same conversation: read
        them, never change them (copy first).
        """
        model = options.model_id if options and options.model_id else self.model
        wire_messages, last_system = self._wire_cache.read(messages, request_messages)
        if not wire_messages:
            raise ValueError("messages must contain at least one message with content")
        request: dict[str, Any] = {
            "model": model,
            "messages": wire_messages,
            "timeout": self.timeout,
            # One retry layer only (RetryingChatClient): litellm's and the OpenAI SDK's are off.
            "num_retries": 0,
            "max_retries": 0,
        }
        optional = {
            "api_base": self.api_base,
            "api_version": self.api_version,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra_headers": dict(self.extra_headers) or None,
            "extra_body": dict(self.extra_body) or None,
        }
        request.update({k: v for k, v in optional.items() if v is not None})
        request.update(self.litellm_params)
        request.update(options_to_kwargs(options))
        _check_json_mode(model, options)
        if self.prompt_caching:
            mark_cache_breakpoints(wire_messages, request.get("tools"), last_system)
        return request

    def _call_kwargs(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._api_key is not None:
            return {**request, "api_key": self._api_key}
        return request

    def _error(self, error: BaseException, model: str) -> ProviderError:
        if isinstance(error, ProviderError):
            return error
        return classify(
            error,
            model=model,
            provider=_provider_of(model),
            timeout=self.timeout,
            secrets=self._secrets(),
        )

    # -- ChatClient ---------------------------------------------------------------------------
    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Send the conversation and return the model's answer (one assistant message)."""
        request = self.build_request(messages, options)
        model = request["model"]
        litellm = await _litellm()
        failure: ProviderError | None = None
        try:
            # litellm's timeouts are per phase (connect, each read): a server that trickles its
            # body would never trip them. This deadline covers the whole request.
            async with asyncio.timeout(self.timeout):
                raw = await litellm.acompletion(**self._call_kwargs(request))
        except asyncio.CancelledError:
            raise
        except Exception as e:
            failure = self._error(e, model)
        if failure is not None:
            # Raised outside the handler, so litellm's exception is neither its __cause__ nor its
            # __context__ (a traceback, a debugger or an error reporter would show it, key and all).
            raise failure
        return self._to_response(raw, model)

    def _to_response(self, raw: Any, model: str) -> ChatResponse:
        choices = attr(raw, "choices")
        if not choices:
            raise ProviderError(
                f"{_provider_of(model)} model {model!r} returned a response without choices "
                "(malformed response body)",
                retryable=False,
                provider=_provider_of(model),
            )
        choice = choices[0]
        message = attr(choice, "message")
        contents: list[Content] = []
        text = attr(message, "content")
        if isinstance(text, str) and text:
            contents.append(TextContent(text=text))
        for call in attr(message, "tool_calls") or []:
            function = attr(call, "function")
            contents.append(
                function_call_from(
                    attr(call, "id"), attr(function, "name"), attr(function, "arguments")
                )
            )
        return ChatResponse(
            messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=contents)],
            usage=map_usage(attr(raw, "usage")),
            finish_reason=map_finish_reason(attr(choice, "finish_reason")),
            model_id=attr(raw, "model") or model,
            response_id=attr(raw, "id"),
        )

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Stream the answer: text deltas as they arrive, each tool call once complete, usage last.

        Raises :class:`ProviderError` (classified like :meth:`get_response`) on failure, before or
        during the stream. A stream that breaks off is retryable only while nothing has been
        yielded yet; the last update (finish reason, usage) comes only once the provider finished.
        """
        request = self.build_request(messages, options)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        model = request["model"]
        litellm = await _litellm()
        failure: ProviderError | None = None
        try:
            async with asyncio.timeout(self.timeout):
                stream = await litellm.acompletion(**self._call_kwargs(request))
            chunks = aiter(stream)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            failure = self._error(e, model)
        if failure is not None:
            raise failure  # outside the handler: no litellm exception attached (see get_response)

        progress = _StreamProgress()
        while True:
            try:
                # No deadline of our own here: litellm drops events that carry nothing for the
                # caller (Anthropic's pings), so only its transport sees that data still flows.
                # Its read timeout (``timeout`` per read) cuts a stream that goes silent.
                chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except asyncio.CancelledError:
                raise
            except Exception as e:
                failure = self._stream_error(e, model, progress)
                break
            update = progress.take(chunk)
            if update is not None:
                yield update
        if failure is None and not progress.finished_by_provider(stream):
            failure = self._stream_error(None, model, progress)
        if failure is not None:
            raise failure
        yield progress.last_update(model)

    def _stream_error(
        self, error: BaseException | None, model: str, progress: _StreamProgress
    ) -> ProviderError:
        """A failure while reading the stream (``error`` None: it ended without the provider's
        finish), retryable only if nothing was handed to the caller yet."""
        provider = _provider_of(model)
        where = f"{provider} model {model!r}"
        if error is not None:
            classified = self._error(error, model)
            if classified.status_code is not None and not progress.delivered:
                return classified  # an HTTP error the provider sent inside the stream
            silent = f"went silent for {self.timeout:g} s (timed out)"
            what = silent if is_timeout(error) else "broke off"
            detail = describe(error, self._secrets())
            status, retry_after = classified.status_code, classified.retry_after
        else:
            what = "ended without the provider's finish (no finish reason, no usage)"
            detail = "the stream ended early"
            status, retry_after = None, None
        if not progress.delivered:
            return ProviderError(
                f"{where}: the response stream {what} before any content arrived (nothing "
                f"was handed over; retryable): {detail}",
                retryable=True,
                status_code=status,
                retry_after=retry_after,
                provider=provider,
            )
        return ProviderError(
            f"{where}: the response stream {what} after {progress.delivered_summary()} had been "
            "handed over; the partial answer was discarded and cannot be replayed "
            f"(not retryable): {detail}",
            retryable=False,
            status_code=status,
            provider=provider,
        )


class _StreamProgress:
    """What a stream has brought so far, and what of it was handed to the caller."""

    def __init__(self) -> None:
        self.calls = _ToolCallAccumulator()
        self.text_chars = 0
        self.calls_delivered = 0
        self.usage: Any = None
        self.finish: FinishReason | None = None
        self.model_id: str | None = None
        self.response_id: str | None = None

    @property
    def delivered(self) -> bool:
        """True once any text or complete tool call has been yielded to the caller."""
        return self.text_chars > 0 or self.calls_delivered > 0

    def delivered_summary(self) -> str:
        calls = self.calls_delivered
        return (
            f"{self.text_chars} characters of text and {calls} tool call{'' if calls == 1 else 's'}"
        )

    def take(self, chunk: Any) -> ChatResponseUpdate | None:
        """Fold one litellm chunk in; the update to yield, if it carries content."""
        self.model_id = attr(chunk, "model") or self.model_id
        self.response_id = attr(chunk, "id") or self.response_id
        self.usage = attr(chunk, "usage") or self.usage
        contents: list[Content] = []
        for choice in attr(chunk, "choices") or []:
            delta = attr(choice, "delta")
            self.finish = map_finish_reason(attr(choice, "finish_reason")) or self.finish
            text = attr(delta, "content")
            if isinstance(text, str) and text:
                contents.append(TextContent(text=text))
            for piece in attr(delta, "tool_calls") or []:
                contents.extend(self.calls.add(piece))
        if not contents:
            return None
        for content in contents:
            if isinstance(content, TextContent):
                self.text_chars += len(content.text)
            else:
                self.calls_delivered += 1
        return ChatResponseUpdate(
            role=ChatRole.ASSISTANT,
            contents=contents,
            model_id=self.model_id,
            response_id=self.response_id,
        )

    def finished_by_provider(self, stream: Any) -> bool:
        """True when the provider itself ended the answer, not the connection.

        litellm makes up a final "stop" chunk when a stream ends with nothing in it, so that chunk
        proves nothing. The provider's usage (requested with ``include_usage``; Anthropic always
        sends it) does, and so does the finish reason litellm's stream wrapper records as
        received from the provider. For a stream that is not litellm's wrapper, a finish reason
        after delivered content is trusted.
        """
        usage = map_usage(self.usage)
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            return True
        if hasattr(stream, "received_finish_reason"):
            received = getattr(stream, "received_finish_reason", None)
            return bool(received or getattr(stream, "intermittent_finish_reason", None))
        return self.finish is not None and self.delivered

    def last_update(self, model: str) -> ChatResponseUpdate:
        """The closing update: the remaining tool calls, the usage and the finish reason."""
        tail: list[Content] = list(self.calls.finish())
        mapped = map_usage(self.usage)
        if mapped is not None:
            tail.append(UsageContent(usage=mapped))
        return ChatResponseUpdate(
            role=ChatRole.ASSISTANT,
            contents=tail,
            finish_reason=self.finish,
            model_id=self.model_id or model,
            response_id=self.response_id,
        )


class _ToolCallAccumulator:
    """Joins streamed tool-call pieces (keyed by index) into complete calls.

    A call is complete when a piece for a later index arrives or the stream ends; the OpenAI and
    Anthropic streams (as litellm relays them) send one call's pieces contiguously.
    """

    def __init__(self) -> None:
        self._order: list[int] = []
        self._parts: dict[int, dict[str, Any]] = {}
        self._emitted: set[int] = set()

    def add(self, piece: Any) -> list[FunctionCallContent]:
        index = attr(piece, "index")
        if not isinstance(index, int):
            index = self._order[-1] if self._order else 0
        done: list[FunctionCallContent] = []
        if index not in self._parts:
            # A new call starts: the previous ones are complete.
            done = self._complete(before=index)
            self._order.append(index)
            self._parts[index] = {"id": None, "name": "", "arguments": ""}
        part = self._parts[index]
        function = attr(piece, "function")
        if attr(piece, "id"):
            part["id"] = attr(piece, "id")
        name = attr(function, "name")
        if name:
            part["name"] = name
        arguments = attr(function, "arguments")
        if isinstance(arguments, str):
            part["arguments"] += arguments
        return done

    def _complete(self, before: int | None = None) -> list[FunctionCallContent]:
        done: list[FunctionCallContent] = []
        for index in self._order:
            if index in self._emitted or (before is not None and index >= before):
                continue
            part = self._parts[index]
            self._emitted.add(index)
            done.append(function_call_from(part["id"], part["name"], part["arguments"]))
        return done

    def finish(self) -> list[FunctionCallContent]:
        return self._complete()
