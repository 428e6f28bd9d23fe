"""Token budget: refuses the next model request once a run has spent its tokens."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from loopkit._checks import check_count
from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    UsageContent,
    UsageDetails,
)
from loopkit.errors import BudgetExceededError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.token_estimate import TokenEstimator, estimate_tokens
from loopkit.providers.history_cache import CachedHistory, HistoryCache
from loopkit.run_context import current_run


class UsageEstimatedWarning(UserWarning):
    """A token budget counts estimates: the client below reports no usage."""


@dataclass(slots=True)
class BudgetState:
    """What one run has spent against one budget (plain counters: adding ``UsageDetails``
    models every round validated a new model each time)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    requests: int = 0
    #: Requests whose tokens were estimated (the client reported no usage for them).
    estimated: int = 0

    @property
    def used(self) -> UsageDetails:
        """The tokens counted so far."""
        return UsageDetails(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
        )

    @property
    def spent(self) -> int:
        """Input plus output tokens counted so far."""
        return self.input_tokens + self.output_tokens

    def add(self, usage: UsageDetails) -> None:
        """Count ``usage``."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_input_tokens += usage.cached_input_tokens
        self.cache_creation_input_tokens += usage.cache_creation_input_tokens


class TokenBudgetChatClient(DelegatingChatClient):
    """Counts the tokens (input + output) of every request that passes; refuses once spent.

    The budget is per run: each :class:`~loopkit.run_context.RunContext` (an agent's run, or the
    run the loop opens for one request of a bare pipeline) counts against its own, so two
    concurrent runs through one built client never share it. Called outside any run (directly,
    without the loop above it), it counts on the instance, for the client's lifetime.

    Place it below the function-invocation loop so it sees each round: the input of a round is
    the whole conversation so far, so the total grows with every round. The request that crosses
    the budget still completes (its cost is known only afterwards); the next one is refused.

    A response without usage (a client that reports none: a local server, a test double) is
    counted by ``estimator`` (default :func:`~loopkit.middleware.token_estimate.estimate_tokens`,
    about four characters a token) over the request and the answer, so the budget still holds;
    the first time, an :class:`UsageEstimatedWarning` says so (once per budget), and the error
    that refuses a request says the count was estimated.
    """

    def __init__(
        self, inner: ChatClient, max_tokens: int, *, estimator: TokenEstimator | None = None
    ) -> None:
        super().__init__(inner)
        check_count("max_tokens", max_tokens, 1, what="a positive number of tokens")
        self.max_tokens = max_tokens
        self.estimator: TokenEstimator = estimator or estimate_tokens
        self._outside_runs = BudgetState()
        self._warned = False
        self._history: HistoryCache[int] = HistoryCache(lambda _, m: self.estimator([m]))
        self._tools: tuple[tuple[int, int] | None, int] = (None, 0)

    def state(self) -> BudgetState:
        """The current run's spending against this budget (the instance's outside any run)."""
        run = current_run()
        if run is None:
            return self._outside_runs
        return run.state_for(self, BudgetState)

    @property
    def used(self) -> UsageDetails:
        """Tokens the current run has used (outside a run: the instance's count)."""
        return self.state().used

    @property
    def requests(self) -> int:
        """Requests the current run has made through this budget."""
        return self.state().requests

    @property
    def spent(self) -> int:
        """Input plus output tokens the current run has used."""
        return self.state().spent

    def _check(self, state: BudgetState) -> None:
        if state.spent >= self.max_tokens:
            estimated = ""
            if state.estimated:
                estimated = (
                    f" ({state.estimated} of them estimated at about four characters a token: "
                    "the model reported no usage)"
                )
            raise BudgetExceededError(
                f"token budget spent: {state.spent:,} of {self.max_tokens:,} tokens used in "
                f"{state.requests} requests{estimated}; the next request was refused. Raise "
                "the budget (max_tokens= of the agent or of use_token_budget; --max-tokens in "
                "the demo) or give the model a smaller task.",
                used=state.spent,
                budget=self.max_tokens,
            )

    def _estimate(
        self,
        state: BudgetState,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        answer: Sequence[ChatMessage],
    ) -> None:
        """Count a request the client reported no usage for, by estimate (warned once)."""
        state.estimated += 1
        # Per message, kept between the rounds of a conversation: a run's estimates cost what
        # its new messages cost, not the whole history every round.
        sent = self._history.read(messages, _total)
        tools = 0
        if options is not None and options.tools:
            key = (id(options.tools), len(options.tools))
            if self._tools[0] != key:
                self._tools = (key, self.estimator([], options))
            tools = self._tools[1]
        state.add(UsageDetails(input_tokens=sent + tools, output_tokens=self.estimator(answer)))
        if not self._warned:
            self._warned = True
            model: object = self.inner
            while getattr(model, "inner", None) is not None:
                model = model.inner  # type: ignore[attr-defined]
            warnings.warn(
                f"the token budget ({self.max_tokens:,} tokens) counts estimates: the model "
                f"client ({type(model).__name__}) reports no usage. Make it report usage "
                "(ChatResponse.usage, or a UsageContent in a stream) for exact counts.",
                UsageEstimatedWarning,
                stacklevel=2,
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Refuse when the run's budget is spent; else forward and count the usage (estimated
        when the response has none)."""
        state = self.state()
        self._check(state)
        response = await self.inner.get_response(messages, options)
        state.requests += 1
        if response.usage is not None:
            state.add(response.usage)
        else:
            self._estimate(state, messages, options, response.messages)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Refuse when the run's budget is spent; else stream and count the usage pieces
        (estimated when the stream has none)."""
        state = self.state()
        self._check(state)
        state.requests += 1
        reported = False
        said: list[Content] = []
        async for update in self.inner.get_streaming_response(messages, options):
            for c in update.contents:
                if isinstance(c, UsageContent):
                    reported = True
                    state.add(c.usage)
                elif not reported:
                    said.append(c)
            yield update
        if not reported:
            answer = [ChatMessage(role=ChatRole.ASSISTANT, contents=said)]
            self._estimate(state, messages, options, answer)


def _total(history: CachedHistory[int]) -> int:
    return history.fold("total", int, int.__add__)
