from __future__ import annotations

import io

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


# --- typed keyword arguments ------------------------------------------------------------------
# A misspelt keyword is a type error (tests/typing) and, for untyped callers, a TypeError that
# names it and lists what is accepted; it never reaches a middleware or the wire.


@pytest.mark.parametrize(
    ("call", "typo"),
    [
        (lambda b: b.use_function_invocation(max_round=3), "'max_round'"),
        (lambda b: b.use_retries(max_attempt=2), "'max_attempt'"),
        (lambda b: b.use_run_log(io.StringIO(), max_chars=10), "'max_chars'"),
        (lambda b: b.use_opentelemetry(capture=True), "'capture'"),
    ],
)
def test_a_misspelt_builder_keyword_is_a_type_error_naming_it(call, typo: str) -> None:
    builder = ChatClientBuilder(script({"text": "x"}))
    with pytest.raises(TypeError, match=typo):
        call(builder)
    assert builder.build() is builder._inner  # nothing was added


def test_the_typo_error_lists_the_accepted_keywords() -> None:
    with pytest.raises(TypeError, match=r"expected any of: .*max_rounds"):
        ChatClientBuilder(script({"text": "x"})).use_function_invocation(max_round=3)  # type: ignore[call-arg]


def test_options_and_their_fields_together_are_refused() -> None:
    from loopkit import FunctionInvocationOptions, RunLog

    builder = ChatClientBuilder(script({"text": "x"}))
    with pytest.raises(TypeError, match="not both"):
        builder.use_function_invocation(FunctionInvocationOptions(), max_rounds=3)
    with pytest.raises(TypeError, match="not both"):
        builder.use_run_log(RunLog(io.StringIO()), max_text_chars=10)


def test_approval_required_may_be_any_collection_of_names() -> None:
    client = (
        ChatClientBuilder(script({"text": "x"}))
        .use_function_invocation(approval_required={"git_commit"}, approver=lambda call: True)
        .build()
    )
    assert client.options.approval_required == frozenset({"git_commit"})  # type: ignore[attr-defined]


def test_keyword_types_list_exactly_the_fields_they_set() -> None:
    """The TypedDicts behind ``**settings`` name every field of the options they build, so a
    field added to the options is a keyword at once (and a typo stays an error)."""
    import dataclasses
    import inspect

    from loopkit.builder import FunctionInvocationSettings, RetrySettings, RunLogSettings
    from loopkit.middleware.function_invocation import FunctionInvocationOptions
    from loopkit.middleware.retry import RetryPolicy
    from loopkit.middleware.run_log import RunLog

    def fields(cls: type) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    assert set(FunctionInvocationSettings.__annotations__) == fields(FunctionInvocationOptions)
    assert set(RetrySettings.__annotations__) == fields(RetryPolicy)
    keyword_only = {
        p.name for p in inspect.signature(RunLog).parameters.values() if p.kind is p.KEYWORD_ONLY
    }
    assert set(RunLogSettings.__annotations__) == keyword_only
