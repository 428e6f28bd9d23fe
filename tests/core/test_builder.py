from __future__ import annotations

import pytest

from loopkit import (
    ChatClientBuilder,
    DelegatingChatClient,
    FunctionInvokingChatClient,
    RetryingChatClient,
    RunLogChatClient,
    TokenBudgetChatClient,
)

from .helpers import script, user


def chain(client) -> list[str]:
    names = []
    while client is not None:
        names.append(type(client).__name__)
        client = getattr(client, "inner", None)
    return names


def test_first_added_is_outermost(tmp_path) -> None:
    model = script({"text": "x"})
    client = (
        ChatClientBuilder(model)
        .use_function_invocation(max_rounds=60)
        .use_run_log(tmp_path / "log.jsonl")
        .use_token_budget(400_000)
        .use_retries(max_attempts=2)
        .build()
    )
    assert chain(client) == [
        FunctionInvokingChatClient.__name__,
        RunLogChatClient.__name__,
        TokenBudgetChatClient.__name__,
        RetryingChatClient.__name__,
        "ScriptedChatClient",
    ]
    assert client.options.max_rounds == 60  # type: ignore[attr-defined]


async def test_plain_async_function_middleware() -> None:
    order: list[str] = []

    async def outer(messages, options, next_client):
        order.append("outer-before")
        response = await next_client.get_response(messages, options)
        order.append("outer-after")
        return response

    async def inner(messages, options, next_client):
        order.append("inner")
        return await next_client.get_response(messages, options)

    client = ChatClientBuilder(script({"text": "hi"})).use(outer).use(inner).build()
    response = await client.get_response(user())
    assert response.text == "hi"
    assert order == ["outer-before", "inner", "outer-after"]


async def test_delegating_subclass_as_middleware_and_find() -> None:
    class Upper(DelegatingChatClient):
        async def get_response(self, messages, options=None):
            r = await self.inner.get_response(messages, options)
            r.messages[-1].contents[0].text = r.text.upper()  # type: ignore[union-attr]
            return r

    client = ChatClientBuilder(script({"text": "hi"})).use(Upper).use_token_budget(10).build()
    assert (await client.get_response(user())).text == "HI"
    assert isinstance(client.find(TokenBudgetChatClient), TokenBudgetChatClient)  # type: ignore[attr-defined]


def test_use_rejects_what_is_not_middleware() -> None:
    with pytest.raises(TypeError, match="expects a client factory or an async function"):
        ChatClientBuilder(script({"text": "x"})).use(42)  # type: ignore[arg-type]


def test_configuration_is_per_instance() -> None:
    a = ChatClientBuilder(script({"text": "x"})).use_function_invocation(max_rounds=3).build()
    b = ChatClientBuilder(script({"text": "x"})).use_function_invocation().build()
    assert a.options.max_rounds == 3  # type: ignore[attr-defined]
    assert b.options.max_rounds == 40  # type: ignore[attr-defined]
