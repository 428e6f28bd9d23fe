"""``ChatClientBuilder``: compose middleware around a chat client; the first added is outermost.

Importing the builder loads no pydantic model (the chat types are annotations here), and each
``use_...`` method imports its middleware when it is called.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias, TypedDict, Unpack

from loopkit.middleware.delegating import DelegatingChatClient

if TYPE_CHECKING:
    from pathlib import Path

    from opentelemetry.trace import TracerProvider

    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
    )
    from loopkit.abstractions.content import ChatMessage
    from loopkit.middleware.compaction import CompactionOptions, TokenEstimator
    from loopkit.middleware.function_invocation import Approver, FunctionInvocationOptions
    from loopkit.middleware.retry import RetryHook, RetryPolicy
    from loopkit.middleware.run_log import RunLog
    from loopkit.redaction import Redactor


class FunctionInvocationSettings(TypedDict, total=False):
    """Keyword arguments of :meth:`ChatClientBuilder.use_function_invocation`: the fields of
    :class:`~loopkit.middleware.function_invocation.FunctionInvocationOptions`."""

    max_rounds: int
    max_consecutive_errors: int
    include_detailed_errors: bool
    terminate_on_unknown_calls: bool
    allow_concurrent_invocation: bool
    max_result_chars: int | None
    final_request_without_tools: bool
    approval_required: Collection[str]
    approver: Approver | None


class RetrySettings(TypedDict, total=False):
    """Keyword arguments of :meth:`ChatClientBuilder.use_retries`: the fields of
    :class:`~loopkit.middleware.retry.RetryPolicy`."""

    max_attempts: int
    initial_delay: float
    max_delay: float
    max_retry_after: float


class RunLogSettings(TypedDict, total=False):
    """Keyword arguments of :meth:`ChatClientBuilder.use_run_log`: those of
    :class:`~loopkit.middleware.run_log.RunLog`."""

    max_text_chars: int | None
    environ: Mapping[str, str] | None
    redactor: Redactor | None


def _check_keywords(method: str, given: Mapping[str, object], accepted: Collection[str]) -> None:
    """A clear TypeError for a misspelt keyword (a typed call site also fails the type check)."""
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise TypeError(
            f"{method}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"expected any of: {', '.join(sorted(accepted))}"
        )


#: The signature of a plain async function used as middleware: it gets the messages, the options
#: and the next client, and returns the response (calling ``next_client`` or not). (Type aliases
#: as strings: the chat types they name load on first use.)
MiddlewareFunction: TypeAlias = (
    "Callable[[Sequence[ChatMessage], ChatOptions | None, ChatClient], Awaitable[ChatResponse]]"
)
#: What :meth:`ChatClientBuilder.use` takes: a client factory or a :data:`MiddlewareFunction`.
Middleware: TypeAlias = "Callable[[ChatClient], ChatClient] | MiddlewareFunction"


class FunctionMiddleware(DelegatingChatClient):
    """Wraps a plain async function as middleware (streaming passes through unchanged)."""

    def __init__(self, inner: ChatClient, fn: MiddlewareFunction) -> None:
        super().__init__(inner)
        self.fn = fn

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self.fn(messages, options, self.inner)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return self.inner.get_streaming_response(messages, options)


def _is_function_middleware(fn: Callable[..., Any]) -> bool:
    import inspect

    if not inspect.iscoroutinefunction(fn):
        return False
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return len(params) == 3


class ChatClientBuilder:
    """Builds a pipeline around ``inner``.

    ``ChatClientBuilder(model).use_function_invocation().use_run_log(path).build()`` gives
    ``FunctionInvokingChatClient(RunLogChatClient(model))``: the first middleware added is the
    outermost, as in Microsoft.Extensions.AI.
    """

    def __init__(self, inner: ChatClient) -> None:
        self._inner = inner
        self._factories: list[Callable[[ChatClient], ChatClient]] = []

    def use(self, middleware: Middleware) -> ChatClientBuilder:
        """Add middleware: a factory ``client -> client`` (e.g. a DelegatingChatClient subclass)
        or a plain ``async def mw(messages, options, next_client) -> ChatResponse``."""
        if isinstance(middleware, type):
            factory: Callable[[ChatClient], ChatClient] = middleware
        elif _is_function_middleware(middleware):
            fn: MiddlewareFunction = middleware  # type: ignore[assignment]

            def factory(inner: ChatClient) -> ChatClient:
                return FunctionMiddleware(inner, fn)

        elif callable(middleware):
            factory = middleware  # type: ignore[assignment]
        else:
            raise TypeError(
                f"use() expects a client factory or an async function (messages, options, "
                f"next_client); got {middleware!r}"
            )
        self._factories.append(factory)
        return self

    def use_function_invocation(
        self,
        options: FunctionInvocationOptions | None = None,
        **settings: Unpack[FunctionInvocationSettings],
    ) -> ChatClientBuilder:
        """Add the function-invocation loop: ``options``, or keyword arguments that set
        :class:`~loopkit.middleware.function_invocation.FunctionInvocationOptions` fields (not
        both), e.g. ``use_function_invocation(max_rounds=10)``."""
        import dataclasses

        from loopkit.middleware.function_invocation import (
            FunctionInvocationOptions,
            FunctionInvokingChatClient,
        )

        fields = [f.name for f in dataclasses.fields(FunctionInvocationOptions)]
        _check_keywords("use_function_invocation", settings, fields)
        if options is not None and settings:
            raise TypeError(
                "use_function_invocation() takes FunctionInvocationOptions or its fields as "
                f"keywords, not both; got options and {sorted(settings)}"
            )
        if options is None:
            values: dict[str, Any] = dict(settings)
            if "approval_required" in values:
                values["approval_required"] = frozenset(values["approval_required"])
            options = FunctionInvocationOptions(**values)
        opts = options
        return self.use(lambda inner: FunctionInvokingChatClient(inner, opts))

    def use_run_log(
        self, target: str | Path | TextIO | RunLog, **settings: Unpack[RunLogSettings]
    ) -> ChatClientBuilder:
        """Add the JSON-lines run log: a path, an open text stream (keyword arguments as for
        :class:`~loopkit.middleware.run_log.RunLog`) or a ready :class:`RunLog`."""
        import inspect

        from loopkit.middleware.run_log import RunLog, RunLogChatClient

        accepted = [
            p.name
            for p in inspect.signature(RunLog).parameters.values()
            if p.kind is p.KEYWORD_ONLY
        ]
        _check_keywords("use_run_log", settings, accepted)
        if isinstance(target, RunLog):
            if settings:
                raise TypeError(
                    "use_run_log() takes a RunLog or a target with RunLog settings, not both; "
                    f"got a RunLog and {sorted(settings)}"
                )
            log = target
        else:
            log = RunLog(target, **settings)
        return self.use(lambda inner: RunLogChatClient(inner, log))

    def use_token_budget(self, max_tokens: int) -> ChatClientBuilder:
        """Refuse further requests once ``max_tokens`` (input + output) are spent."""
        from loopkit.middleware.token_budget import TokenBudgetChatClient

        return self.use(lambda inner: TokenBudgetChatClient(inner, max_tokens))

    def use_retries(
        self,
        policy: RetryPolicy | None = None,
        *,
        on_retry: RetryHook | None = None,
        sleep: Callable[[float], object] | None = None,
        **settings: Unpack[RetrySettings],
    ) -> ChatClientBuilder:
        """Retry transient provider errors: ``policy``, or keyword arguments that set
        :class:`~loopkit.middleware.retry.RetryPolicy` fields (not both). ``on_retry(attempt,
        error, delay)`` is called before each retry, e.g. to write it to a run log."""
        import dataclasses

        from loopkit.middleware.retry import RetryingChatClient, RetryPolicy

        _check_keywords("use_retries", settings, [f.name for f in dataclasses.fields(RetryPolicy)])
        if policy is not None and settings:
            raise TypeError(
                f"use_retries() takes a RetryPolicy or its fields as keywords, not both; got "
                f"policy={policy!r} and {sorted(settings)}"
            )
        pol = policy or RetryPolicy(**settings)
        return self.use(
            lambda inner: RetryingChatClient(inner, pol, sleep=sleep, on_retry=on_retry)
        )

    def use_opentelemetry(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        system: str | None = None,
        capture_content: bool = False,
    ) -> ChatClientBuilder:
        """Trace runs, requests and (below the loop) tool calls with OpenTelemetry (``otel``
        extra); arguments as for :class:`~loopkit.middleware.otel.OpenTelemetryChatClient`."""
        from loopkit.middleware.otel import OpenTelemetryChatClient

        return self.use(
            lambda inner: OpenTelemetryChatClient(
                inner,
                tracer_provider=tracer_provider,
                system=system,
                capture_content=capture_content,
            )
        )

    def build(self) -> ChatClient:
        """The composed client: factories applied innermost first."""
        client = self._inner
        for factory in reversed(self._factories):
            client = factory(client)
        return client

    def use_compaction(
        self,
        options: CompactionOptions | None = None,
        *,
        max_input_tokens: int | None = None,
        trigger: float | None = None,
        target: float | None = None,
        trigger_tokens: int | None = None,
        target_tokens: int | None = None,
        keep_recent_steps: int | None = None,
        min_elide_chars: int | None = None,
        summarize: bool | None = None,
        summary_max_tokens: int | None = None,
        summary_prompt: str | None = None,
        summarizer: ChatClient | None = None,
        estimator: TokenEstimator | None = None,
    ) -> ChatClientBuilder:
        """Compact the conversation before a request that would exceed a token threshold:
        elide old tool results, then summarise the oldest steps (see
        :class:`~loopkit.middleware.compaction.CompactionChatClient`). Add it right after
        :meth:`use_function_invocation` so it sees every round.

        Give ``options``, or its fields as keywords (not both): ``max_input_tokens`` (the
        model's input window; compaction starts above ``trigger`` of it, default 0.8, and goes
        down to ``target``, default 0.5) or explicit ``trigger_tokens`` / ``target_tokens``;
        ``keep_recent_steps`` (4) steps stay verbatim; results under ``min_elide_chars`` (400)
        stay; ``summarize`` (True) allows a model call, ``summary_max_tokens`` (1000) long,
        instructed by ``summary_prompt``. ``summarizer`` writes the summaries (default: the
        next client); ``estimator`` replaces the character-based token estimate.
        """
        from loopkit.middleware.compaction import CompactionChatClient, CompactionOptions

        fields: dict[str, Any] = {
            "max_input_tokens": max_input_tokens,
            "trigger": trigger,
            "target": target,
            "trigger_tokens": trigger_tokens,
            "target_tokens": target_tokens,
            "keep_recent_steps": keep_recent_steps,
            "min_elide_chars": min_elide_chars,
            "summarize": summarize,
            "summary_max_tokens": summary_max_tokens,
            "summary_prompt": summary_prompt,
        }
        given = {name: value for name, value in fields.items() if value is not None}
        if options is not None and given:
            raise TypeError(
                f"use_compaction() takes a CompactionOptions or its fields as keywords, not "
                f"both; got options={options!r} and {sorted(given)}"
            )
        opts = options or CompactionOptions(**given)
        return self.use(
            lambda inner: CompactionChatClient(
                inner, opts, summarizer=summarizer, estimator=estimator
            )
        )

    def use_fallback(
        self,
        clients: Sequence[ChatClient],
        *,
        names: Sequence[str] | None = None,
        sticky: bool = True,
    ) -> ChatClientBuilder:
        """When the client below fails with a provider error (non-retryable, or retries
        exhausted), let each of ``clients`` answer in turn (see
        :class:`~loopkit.middleware.fallback.FallbackChatClient`).

        The middleware added after this call sits below the fallback and is built once for
        every client, so ``.use_fallback([backup]).use_retries()`` retries the primary, then the
        backup. Add the run log and the token budget before it (above), so that they count
        whichever client answers, once. ``names`` labels the clients in the ``fallback`` run
        events (the primary first); ``sticky`` keeps a run on the client that answered.
        """
        from loopkit.middleware.fallback import FallbackChatClient

        if not isinstance(clients, Sequence) or isinstance(clients, str):
            raise TypeError(
                "use_fallback() takes a list of chat clients, e.g. use_fallback([backup]); got "
                f"{type(clients).__name__}"
            )
        fallbacks = list(clients)
        position = len(self._factories)
        factories = self._factories

        def factory(inner: ChatClient) -> ChatClient:
            # The factories added after this one wrap the primary (``inner``) already; they wrap
            # each fallback the same way, innermost first, as build() does.
            below = factories[position + 1 :]
            wrapped = []
            for client in fallbacks:
                for make in reversed(below):
                    client = make(client)
                wrapped.append(client)
            return FallbackChatClient(inner, wrapped, names=names, sticky=sticky)

        return self.use(factory)
