"""``FallbackChatClient``: when a provider fails for good, the next client answers.

A :class:`~loopkit.errors.ProviderError` that reaches this middleware is final for the client
that raised it: a non-retryable error (a 401, a 400, a model that does not exist), or a
transient one whose retries below were exhausted. The request then goes to the next client, in
order. Anything else (a bug, a :class:`~loopkit.abstractions.tools.ToolError`, a spent token
budget, cancellation) propagates untouched: another model cannot fix it.

Place retries *below* the fallback, so that each client is retried before the next one is
tried: ``ChatClientBuilder(primary).use_fallback([backup]).use_retries().build()`` retries the
primary, then falls back to the backup, retried the same way (the builder applies the
middleware added after ``use_fallback`` to every client). Keep the run log and the token budget
*above* it: they then see whichever client answered, once.

Every switch is a ``fallback`` run event (``from_client``, ``to_client``, ``reason``: the error
text, redacted); the response's ``model_id`` says which model answered. By default the choice
sticks for the rest of the run: once the primary failed, later requests of the same run start
with the client that answered (no failing request per round, and a warm prompt cache).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import ChatMessage
from loopkit.errors import ProviderError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.run_context import RunContext, current_run

__all__ = ["AllClientsFailedError", "FallbackChatClient", "client_label"]


class AllClientsFailedError(ProviderError):
    """Every client of a :class:`FallbackChatClient` failed; ``errors`` holds each failure (in
    order) and the message says what each one said. Retryable if the last failure was."""

    def __init__(self, labels: Sequence[str], errors: Sequence[ProviderError]) -> None:
        shown = "; ".join(f"{label}: {_reason(e)}" for label, e in zip(labels, errors, strict=True))
        last = errors[-1]
        super().__init__(
            f"all {len(errors)} clients failed: {shown}",
            retryable=last.retryable,
            status_code=last.status_code,
            retry_after=last.retry_after,
            provider=last.provider,
        )
        self.errors = list(errors)


def client_label(client: object) -> str:
    """A name for a client in logs: the model of the innermost client that names one (a
    ``model`` or ``model_id`` attribute, e.g. ``LiteLLMChatClient.model``), else its type."""
    current: object | None = client
    last: object = client
    while current is not None:
        for attribute in ("model", "model_id"):
            value = getattr(current, attribute, None)
            if isinstance(value, str) and value:
                return value
        last = current
        current = getattr(current, "inner", None)
    return type(last).__name__


def _reason(error: ProviderError) -> str:
    # Provider errors are redacted where they are made; redact again, the text goes to logs.
    from loopkit.providers.litellm_errors import redact

    return redact(str(error))[:600]


@dataclass(slots=True)
class _RunState:
    start: int = 0  # the client the run's requests start with (sticky)
    answered: int = 0  # the client that answered the run's latest request


class FallbackChatClient(DelegatingChatClient):
    """Sends each request to ``inner``, then to each of ``fallbacks`` in turn while the previous
    one fails with a :class:`ProviderError` (see the module docstring).

    ``names`` labels the clients in run events (one per client, ``inner`` first; default:
    :func:`client_label`). ``sticky`` (default True) makes later requests of the same run start
    with the client that last answered. A request that names a model (``options.model_id``) names
    it for ``inner``: the fallbacks get the options without it, and answer with their own model.
    """

    def __init__(
        self,
        inner: ChatClient,
        fallbacks: Sequence[ChatClient],
        *,
        names: Sequence[str] | None = None,
        sticky: bool = True,
    ) -> None:
        super().__init__(inner)
        if isinstance(fallbacks, ChatClient) or not isinstance(fallbacks, Sequence):
            raise TypeError(
                f"fallbacks must be a list of chat clients, got {type(fallbacks).__name__}"
            )
        if not fallbacks:
            raise ValueError("fallbacks is empty: give at least one client to fall back to")
        for i, client in enumerate(fallbacks):
            if not isinstance(client, ChatClient):
                raise TypeError(
                    f"fallbacks[{i}] is a {type(client).__name__}, not a chat client (an object "
                    "with get_response and get_streaming_response)"
                )
        self.fallbacks = list(fallbacks)
        self.clients: list[ChatClient] = [inner, *self.fallbacks]
        if names is None:
            labels = [client_label(c) for c in self.clients]
        else:
            labels = list(names)
            if len(labels) != len(self.clients):
                raise ValueError(
                    f"names must give one name per client ({len(self.clients)}: the primary, "
                    f"then each fallback), got {len(labels)}"
                )
        # Two clients of the same model still need telling apart in a log.
        self.names = [
            label if labels.count(label) == 1 else f"{label}#{i + 1}"
            for i, label in enumerate(labels)
        ]
        self.sticky = sticky

    def _state(self, run: RunContext | None) -> _RunState:
        if run is None:
            return _RunState()
        return run.state_for(self, _RunState)

    def _first(self, state: _RunState) -> int:
        return state.start if self.sticky else 0

    def answered_by(self) -> ChatClient | None:
        """The fallback client that answered the current run's latest request, or None when
        the primary did (or outside a run). Tracing names a request's span after it."""
        run = current_run()
        if run is None or not run.has_state(self):
            return None
        state: _RunState = run.state_for(self, _RunState)
        return self.clients[state.answered] if state.answered else None

    def _options(self, index: int, options: ChatOptions | None) -> ChatOptions | None:
        if index == 0 or options is None or options.model_id is None:
            return options
        return options.copy(model_id=None)

    def _switch(
        self,
        run: RunContext | None,
        index: int,
        error: ProviderError,
        failures: list[ProviderError],
    ) -> None:
        failures.append(error)
        if index + 1 >= len(self.clients):
            if len(failures) == 1:
                raise error
            raise AllClientsFailedError(self.names[index + 1 - len(failures) : index + 1], failures)
        if run is not None:
            run.emit(
                "fallback",
                from_client=self.names[index],
                to_client=self.names[index + 1],
                reason=_reason(error),
                status_code=error.status_code,
                retryable=error.retryable,
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        run = current_run()
        state = self._state(run)
        failures: list[ProviderError] = []
        for index in range(self._first(state), len(self.clients)):
            try:
                response = await self.clients[index].get_response(
                    messages, self._options(index, options)
                )
            except ProviderError as e:
                self._switch(run, index, e, failures)
                continue
            state.start = state.answered = index
            if response.model_id is None:
                response = response.model_copy(update={"model_id": self.names[index]})
            return response
        raise AssertionError("unreachable: the last client's failure is raised")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Falls back only while nothing was yielded: after the first update, a failure is
        re-raised (what the caller received cannot be taken back)."""
        run = current_run()
        state = self._state(run)
        failures: list[ProviderError] = []
        for index in range(self._first(state), len(self.clients)):
            yielded = False
            stream = self.clients[index].get_streaming_response(
                messages, self._options(index, options)
            )
            try:
                async for update in stream:
                    if not yielded:
                        yielded = True
                        state.start = state.answered = index
                    if update.model_id is None:
                        update = update.model_copy(update={"model_id": self.names[index]})
                    yield update
            except ProviderError as e:
                if yielded:
                    raise
                self._switch(run, index, e, failures)
                continue
            state.start = state.answered = index
            return

    def __repr__(self) -> str:
        return f"FallbackChatClient({self.inner!r}, fallbacks={self.fallbacks!r})"
