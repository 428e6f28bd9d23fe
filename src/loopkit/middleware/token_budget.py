"""Token budget: refuses the next model request once a run has spent its tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import ChatMessage, UsageContent, UsageDetails
from loopkit.errors import BudgetExceededError
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.run_context import current_run


@dataclass(slots=True)
class BudgetState:
    """What one run has spent against one budget (plain counters: adding ``UsageDetails``
    models every round validated a new model each time)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    requests: int = 0

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
    """

    def __init__(self, inner: ChatClient, max_tokens: int) -> None:
        super().__init__(inner)
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive number of tokens, got {max_tokens}")
        self.max_tokens = max_tokens
        self._outside_runs = BudgetState()

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
            raise BudgetExceededError(
                f"token budget spent: {state.spent:,} of {self.max_tokens:,} tokens used in "
                f"{state.requests} requests; the next request was refused. Raise the budget "
                "(max_tokens= of the agent or of use_token_budget; --max-tokens in the demo) or "
                "give the model a smaller task.",
                used=state.spent,
                budget=self.max_tokens,
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Refuse when the run's budget is spent; else forward and count the usage."""
        state = self.state()
        self._check(state)
        response = await self.inner.get_response(messages, options)
        state.requests += 1
        if response.usage is not None:
            state.add(response.usage)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Refuse when the run's budget is spent; else stream and count the usage pieces."""
        state = self.state()
        self._check(state)
        state.requests += 1
        async for update in self.inner.get_streaming_response(messages, options):
            for c in update.contents:
                if isinstance(c, UsageContent):
                    state.add(c.usage)
            yield update
