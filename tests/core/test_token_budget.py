from __future__ import annotations

import pytest

from loopkit import BudgetExceededError, ChatClientBuilder, TokenBudgetChatClient, tool

from .helpers import call, opts, script, user


@tool
def noop() -> str:
    """Nothing."""
    return "ok"


async def test_budget_refuses_the_request_after_it_is_spent() -> None:
    turns = [
        {"calls": [call("noop")], "usage": {"input_tokens": 400, "output_tokens": 100}}
        for _ in range(5)
    ]
    model = script(*turns, {"text": "never"})
    client = ChatClientBuilder(model).use_function_invocation().use_token_budget(1000).build()
    with pytest.raises(BudgetExceededError) as e:
        await client.get_response(user(), opts(noop))
    # 2 requests spend 1,000 tokens; the third is refused before reaching the model
    assert model.position == 2
    assert e.value.used == 1000 and e.value.budget == 1000
    assert "token budget spent: 1,000 of 1,000 tokens used in 2 requests" in str(e.value)


async def test_budget_counts_streaming_usage() -> None:
    budget = TokenBudgetChatClient(
        script({"text": "a", "usage": {"input_tokens": 7, "output_tokens": 3}}), 100
    )
    [u async for u in budget.get_streaming_response(user(), opts())]
    assert budget.spent == 10


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBudgetChatClient(script({"text": "x"}), 0)
