"""Retries of transient provider failures (rate limits, overload, timeouts, 5xx) with tenacity.

Each retry is a run event: inside a run (an agent's, or the one the function-invocation loop opens)
the layer emits ``retry`` (attempt, wait_s, status_code, round, reason) with
:meth:`RunContext.emit <loopkit.run_context.RunContext.emit>`, so the run log writes it as a line of
the run and every other listener (a progress display, a trace) sees it. It is also logged as a
warning on ``loopkit.retry`` and passed to ``on_retry(attempt, error, delay)`` when given. The
reason in the event and the warning has credential-shaped text redacted.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import ChatMessage
from loopkit.errors import ProviderError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.run_context import current_run

_log = logging.getLogger("loopkit.retry")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry.

    ``max_attempts`` counts the first try. Waits grow exponentially with jitter from
    ``initial_delay`` up to ``max_delay``; a provider's Retry-After replaces the computed wait but
    is capped at ``max_retry_after`` (a server asking for ten minutes ends the run instead).
    """

    max_attempts: int = 4
    initial_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.initial_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("RetryPolicy delays must be >= 0")


def is_transient(error: BaseException) -> bool:
    """True for provider errors marked retryable (never for 4xx client errors)."""
    return isinstance(error, ProviderError) and error.retryable


#: Called before each retry with the attempt that failed (1 for the first), its error and the
#: seconds the retry layer will wait.
RetryHook = Callable[[int, ProviderError, float], None]


class RetryingChatClient(DelegatingChatClient):
    """Retries ``get_response`` on transient :class:`ProviderError`\\ s.

    Streaming requests are retried only until the first update arrives. After that a failure
    propagates, never retried, because what the caller received cannot be taken back; a
    retryable error is re-raised as a non-retryable one saying so, so that no layer above
    resends the request either. (``LiteLLMChatClient`` classifies its own stream failures the
    same way: retryable only while nothing was handed over.)

    Before each wait the current run (if any) gets a ``retry`` event (``attempt`` that failed, 1
    for the first; ``wait_s``; the error's ``status_code``; the run's ``round``; ``reason``, the
    error's text redacted), and ``on_retry(attempt, error, delay)`` is called; ``sleep`` replaces
    the wait (tests).
    """

    def __init__(
        self,
        inner: ChatClient,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], object] | None = None,
        on_retry: RetryHook | None = None,
    ) -> None:
        super().__init__(inner)
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._on_retry = on_retry
        self.retries = 0  #: retries made so far by this instance (for logs and tests)

    def _wait(self, state: RetryCallState) -> float:
        computed = wait_random_exponential(
            multiplier=self.policy.initial_delay, max=self.policy.max_delay
        )(state)
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, ProviderError) and error.retry_after is not None:
            if error.retry_after > self.policy.max_retry_after:
                # Waiting that long is worse than failing: surface the error now.
                raise error
            return max(0.0, error.retry_after)
        return float(computed)

    def _before_sleep(self, state: RetryCallState) -> None:
        self.retries += 1
        error = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        # Imported here: only a retry needs it.
        from loopkit.providers.litellm_errors import redact

        reason = redact(str(error))
        _log.warning(
            "transient provider error, retry %d in %.2fs: %s", state.attempt_number, delay, reason
        )
        run = current_run()
        if run is not None:
            run.emit(
                "retry",
                attempt=state.attempt_number,
                wait_s=round(delay, 2),
                status_code=error.status_code if isinstance(error, ProviderError) else None,
                # the loop counts a request before making it: this is the round being retried
                round=run.rounds,
                reason=reason,
            )
        if self._on_retry and isinstance(error, ProviderError):
            self._on_retry(state.attempt_number, error, delay)

    def _retrying(self) -> AsyncRetrying:
        kwargs: dict[str, object] = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        return AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(is_transient),
            before_sleep=self._before_sleep,
            reraise=True,
            **kwargs,  # type: ignore[arg-type]
        )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        # The first attempt runs without tenacity: its machinery costs more per request than
        # the rest of the middleware together, and almost every request succeeds at once.
        try:
            return await self.inner.get_response(messages, options)
        except ProviderError as e:
            if not is_transient(e) or self.policy.max_attempts < 2:
                raise
            failed: ProviderError | None = e
        async for attempt in self._retrying():
            with attempt:
                if failed is not None:  # tenacity's attempt 1 is the one that failed above
                    error, failed = failed, None
                    raise error
                return await self.inner.get_response(messages, options)
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _first_update(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> tuple[AsyncIterator[ChatResponseUpdate], ChatResponseUpdate | None]:
        """The inner stream and its first update (None: it ended at once)."""
        stream = aiter(self.inner.get_streaming_response(messages, options))
        try:
            return stream, await anext(stream)
        except StopAsyncIteration:
            return stream, None

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        # As in get_response, the first attempt runs without tenacity.
        failed: ProviderError | None = None
        try:
            stream, first = await self._first_update(messages, options)
        except ProviderError as e:
            if not is_transient(e) or self.policy.max_attempts < 2:
                raise
            failed = e
        if failed is not None:
            async for attempt in self._retrying():
                with attempt:
                    if failed is not None:  # tenacity's attempt 1 is the one that failed above
                        error, failed = failed, None
                        raise error
                    stream, first = await self._first_update(messages, options)
        if first is None:
            return
        yield first
        failure: ProviderError | None = None
        try:
            async for update in stream:
                yield update
        except ProviderError as e:
            if not e.retryable:
                raise
            failure = ProviderError(
                f"{e} (not retried: the stream had already handed updates over, which cannot be "
                "replayed)",
                retryable=False,
                status_code=e.status_code,
                provider=e.provider,
            )
            failure.__cause__ = e
        if failure is not None:
            raise failure
