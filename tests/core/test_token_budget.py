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


async def test_each_request_of_a_bare_pipeline_has_its_own_budget() -> None:
    """Two concurrent requests through one built client each spend 900 of a 1,000 budget; a
    budget kept on the client (the old behaviour) refuses one of them."""
    import asyncio

    from loopkit import FunctionChatClient
    from tests.agents.helpers import answer, calls

    def reply(messages: list, options: object) -> object:
        done = sum(1 for m in messages if m.role == "tool")
        return calls(("noop", {}), usage=400) if done < 2 else answer("done", usage=100)

    client = (
        ChatClientBuilder(FunctionChatClient(reply))
        .use_function_invocation()
        .use_token_budget(1000)
        .build()
    )
    first, second = await asyncio.gather(
        client.get_response(user(), opts(noop)), client.get_response(user(), opts(noop))
    )
    assert first.text == second.text == "done"
    assert first.usage is not None and first.usage.input_tokens == 900


async def test_inside_a_run_the_budget_counts_every_request_of_the_run() -> None:
    from loopkit.run_context import run_scope

    turn = {"text": "x", "usage": {"input_tokens": 600, "output_tokens": 0}}
    budget = TokenBudgetChatClient(script(turn, turn, turn), 1000)
    with run_scope():
        await budget.get_response(user(), opts())
        await budget.get_response(user(), opts())
        assert budget.spent == 1200 and budget.requests == 2
        with pytest.raises(BudgetExceededError):
            await budget.get_response(user(), opts())
    with run_scope():
        await budget.get_response(user(), opts())  # a new run starts from zero
        assert budget.spent == 600
    assert budget.spent == 0  # outside any run: the instance's own count, untouched


async def test_a_client_without_usage_is_counted_by_estimate_and_warned_about_once() -> None:
    """FunctionChatClient reports no usage: the budget counts about four characters a token
    over each request and answer, refuses once that is spent, says the count was estimated,
    and warns once per budget (not once per request or run)."""
    from loopkit import FunctionChatClient
    from loopkit.middleware.token_budget import UsageEstimatedWarning
    from tests.agents.helpers import calls

    def reply(messages: list, options: object) -> object:
        return calls(("noop", {"n": len(messages)}), text="x" * 400)  # about 100 tokens out

    client = (
        ChatClientBuilder(FunctionChatClient(reply))
        .use_function_invocation(max_rounds=50)
        .use_token_budget(1000)
        .build()
    )
    with pytest.warns(UsageEstimatedWarning, match="counts estimates") as warned:
        for _ in range(2):  # two runs, one warning
            with pytest.raises(BudgetExceededError) as e:
                await client.get_response(user("y" * 800), opts(noop))
    assert len(warned) == 1
    assert "estimated at about four characters a token" in str(e.value)
    assert 1000 <= e.value.used < 1600  # refused soon after the budget, not never
    assert "FunctionChatClient" in str(warned[0].message)


async def test_a_stream_without_usage_is_counted_by_estimate() -> None:
    import warnings

    from loopkit import FunctionChatClient

    budget = TokenBudgetChatClient(FunctionChatClient(lambda m, o: "z" * 400), 10_000)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        [u async for u in budget.get_streaming_response(user("q" * 40), opts())]
    assert budget.used.output_tokens == 100 + 4  # 400 characters, plus a message's overhead
    assert budget.used.input_tokens == 10 + 4
    assert budget.state().estimated == 1
