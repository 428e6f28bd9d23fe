"""The model chain below an :class:`~loopkit.agents.Agent`'s function-invocation loop: the given
middleware, over a token budget (when ``max_tokens`` is set), over the model."""

from __future__ import annotations

from collections.abc import Sequence

from loopkit.abstractions.chat import ChatClient
from loopkit.builder import ChatClientBuilder, Middleware
from loopkit.middleware.function_invocation import FunctionInvokingChatClient
from loopkit.middleware.token_budget import TokenBudgetChatClient

__all__ = ["model_chain"]


def model_chain(
    model: ChatClient | ChatClientBuilder, middleware: Sequence[Middleware], max_tokens: int | None
) -> ChatClient:
    """The chain below the agent's loop: middleware, then the budget, then the model."""
    chain = model.build() if isinstance(model, ChatClientBuilder) else model
    if max_tokens is not None:
        chain = TokenBudgetChatClient(chain, max_tokens)
    if middleware:
        builder = ChatClientBuilder(chain)
        for m in middleware:
            builder.use(m)
        chain = builder.build()
    client: object = chain
    while client is not None:
        if isinstance(client, FunctionInvokingChatClient):
            raise ValueError(
                "the model or middleware given to Agent already contains a function-invocation "
                "loop; the agent adds its own: set its limits on the Agent (max_rounds=, ...)"
            )
        client = getattr(client, "inner", None)
    return chain
