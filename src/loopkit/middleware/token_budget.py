"""Token budget: refuses the next model request once a run has spent its tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import ChatMessage, UsageContent, UsageDetails
from loopkit.errors import BudgetExceededError
from loopkit.middleware.delegating import DelegatingChatClient


class TokenBudgetChatClient(DelegatingChatClient):
    """Counts the tokens (input + output) of every request that passes; refuses once spent.

    Place it below the function-invocation loop so it sees each round: the input of a round is
    the whole conversation so far, so the total grows with every round. The request that crosses
    the budget still completes (its cost is known only afterwards); the next one is refused.
    """

    def __init__(self, inner: ChatClient, max_tokens: int) -> None:
        super().__init__(inner)
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive number of tokens, got {max_tokens}")
        self.max_tokens = max_tokens
        self.used = UsageDetails()
        self.requests = 0

    @property
    def spent(self) -> int:
        return self.used.input_tokens + self.used.output_tokens

    def _check(self) -> None:
        if self.spent >= self.max_tokens:
            raise BudgetExceededError(
                f"token budget spent: {self.spent:,} of {self.max_tokens:,} tokens used in "
                f"{self.requests} requests; the next request was refused. Raise the budget "
                "(e.g. --max-tokens) or give the model a smaller task.",
                used=self.spent,
                budget=self.max_tokens,
            )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self._check()
        response = await self.inner.get_response(messages, options)
        self.requests += 1
        if response.usage is not None:
            self.used = self.used + response.usage
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self._check()
        self.requests += 1
        async for update in self.inner.get_streaming_response(messages, options):
            for c in update.contents:
                if isinstance(c, UsageContent):
                    self.used = self.used + c.usage
            yield update
