"""The mistake tour: what a pydantic-ai user gets wrong on a first afternoon with loopkit, and the
answer each mistake gets (issue 25).

Each row is the user's code, run as written (in an async function, with the names of ``SETUP``),
the exception it must raise and a fragment of its message that names the fix. A row that stops
raising, raises something else or loses its hint fails here. Mistakes whose answer is not an
exception (a warning, a message to the model, a span name) are tested in the files of their
parts: test_function_invocation.py, test_token_budget.py, test_compaction.py, test_otel.py and
tests/typing.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from loopkit import ChatClient, LiteLLMChatClient, ProviderError, SessionStoreError
from loopkit.agents import Agent

SETUP = '''
import io

from pydantic import BaseModel

from loopkit import (
    Agent,
    ChatClientBuilder,
    ChatMessage,
    CompactionOptions,
    FunctionChatClient,
    InMemorySession,
    RunLog,
    RunLogChatClient,
    tool,
)

model = FunctionChatClient(lambda messages, options: "Hi!")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Invoice(BaseModel):
    customer: str
    total: float


agent = Agent(model, tools=[add])
'''


@dataclass(frozen=True)
class Mistake:
    """One row of the tour: ``code`` raises ``error`` with ``says`` in its message."""

    code: str
    error: type[BaseException]
    says: str

    @property
    def id(self) -> str:
        return self.code.strip().splitlines()[-1][:60]


TOUR = [
    # -- the model ---------------------------------------------------------------------------
    Mistake('Agent("openai:gpt-5")', ValueError, "litellm's, with a slash: 'openai/gpt-5'"),
    Mistake("Agent(42)", TypeError, "model must be a model string such as 'openai/gpt-5'"),
    Mistake("Agent(FunctionChatClient)", TypeError, "not a client: create one"),
    # -- settings: other frameworks' names, typos, wrong types ----------------------------------
    Mistake('Agent(model, system_prompt="Be brief.")', TypeError, "use instructions="),
    Mistake("Agent(model, max_round=5)", TypeError, "(did you mean 'max_rounds'?)"),
    Mistake(
        'Agent(model, instructions=["Be brief.", "Be kind."])', TypeError, "join them into one"
    ),
    Mistake('Agent(model, max_rounds="10")', TypeError, "max_rounds must be a whole number"),
    Mistake("Agent(model, max_tokens=0)", ValueError, "positive number of tokens, got 0"),
    Mistake(
        'Agent(model, options={"temperature": 0.2})',
        TypeError,
        "options must be a ChatOptions, e.g. ChatOptions(temperature=0.2)",
    ),
    # -- tools -------------------------------------------------------------------------------
    Mistake("Agent(model, tools=add)", TypeError, "(wrap it in a list)"),
    Mistake('Agent(model, tools=["add"])', TypeError, "pass the function (or Tool) itself"),
    Mistake("Agent(model, tools=[add, add])", ValueError, "tool names must be unique"),
    Mistake(
        "@tool\ndef total(*amounts: float) -> float:\n    return sum(amounts)",
        TypeError,
        "tools need named parameters",
    ),
    # -- approvals ---------------------------------------------------------------------------
    Mistake(
        'await Agent(model, tools=[add], approval_required={"ad"}, approver=lambda call: True)'
        '.run("1 + 2?")',
        ValueError,
        "Did you mean 'ad' -> 'add'?",
    ),
    Mistake(
        'Agent(model, tools=[add], approval_required="add", approver=lambda call: True)',
        TypeError,
        "collection of tool names, e.g. {'add'}",
    ),
    Mistake('Agent(model, tools=[add], approval_required={"add"})', ValueError, "pass approver="),
    Mistake(
        'Agent(model, tools=[add], approval_required={"add"}, approver=True)',
        TypeError,
        "approver must be a function (call) -> bool",
    ),
    # -- output types ------------------------------------------------------------------------
    Mistake("Agent(model, output_type=42)", TypeError, "output_type must be a type such as"),
    Mistake(
        'Agent(model, output_type=Invoice(customer="Ann", total=9.5))',
        TypeError,
        "pass the class: output_type=Invoice",
    ),
    Mistake('Agent(model, output_type="Invoice")', TypeError, "pass the class itself"),
    # -- middleware order --------------------------------------------------------------------
    Mistake(
        "Agent(model, middleware=[RunLogChatClient(model, RunLog(io.StringIO()))])",
        TypeError,
        "not a factory: give its class or `lambda inner: RunLogChatClient(inner, ...)`",
    ),
    Mistake(
        "Agent(ChatClientBuilder(model).use_function_invocation())",
        ValueError,
        "the agent adds its own: set its limits on the Agent",
    ),
    Mistake(
        "ChatClientBuilder(model).use_compaction(max_input_tokens=100_000)"
        ".use_function_invocation().build()",
        ValueError,
        "use_compaction() after use_function_invocation()",
    ),
    Mistake(
        "ChatClientBuilder(model).use_fallback(model)",
        TypeError,
        "use_fallback() takes a list of chat clients, e.g. use_fallback([backup])",
    ),
    Mistake(
        'ChatClientBuilder(model).use_token_budget("100k").build()',
        TypeError,
        "max_tokens must be a positive number of tokens",
    ),
    Mistake("CompactionOptions()", ValueError, "needs max_input_tokens"),
    # -- sessions and history ----------------------------------------------------------------
    Mistake(
        'await agent.run("Hi", session="user-42")',
        TypeError,
        "pass session=InMemorySession('user-42')",
    ),
    Mistake(
        'await agent.run("Hi", session=InMemorySession)',
        TypeError,
        "create one, e.g. InMemorySession('user-42')",
    ),
    Mistake(
        'session = InMemorySession("user-42")\nawait session.close()\n'
        'await agent.run("Hi", session=session)',
        SessionStoreError,
        "is closed",
    ),
    Mistake('await agent.run("Hi", message_history=[])', TypeError, "use history="),
    Mistake('await agent.run("Hi", deps={"db": None})', TypeError, "no dependency injection"),
    Mistake(
        'await agent.run("Hi", history="We said hello.")',
        TypeError,
        "history must be a list of ChatMessages (e.g. an earlier result.all_messages)",
    ),
    Mistake('await agent.run(["Hi", "there"])', TypeError, "a list of ChatMessages; got list"),
    # -- sync and async mixed up -------------------------------------------------------------
    Mistake('agent.run_sync("Hi")', RuntimeError, "use `await agent.run(...)` there"),
    Mistake(
        'for event in agent.run_stream("Hi"):\n    print(event)',
        TypeError,
        "use `async for event in agent.run_stream(...)`",
    ),
    Mistake('await agent.run_stream("Hi")', TypeError, "is iterated, not awaited"),
    # -- messages ----------------------------------------------------------------------------
    Mistake(
        'ChatMessage(role="user", content="Hi")', TypeError, "ChatMessage.from_text('user', 'Hi')"
    ),
    Mistake(
        'ChatMessage(role="asistant", contents=[])',
        ValidationError,
        "Input should be 'system', 'user', 'assistant' or 'tool'",
    ),
]


async def _run(code: str) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(SETUP, "<setup>", "exec"), namespace)
    body = textwrap.indent(code, "    ")
    exec(compile(f"async def mistake():\n{body}\n", "<mistake>", "exec"), namespace)
    await namespace["mistake"]()


def test_the_tour_is_thirty_mistakes_or_more() -> None:
    assert len(TOUR) >= 30
    assert len({m.code for m in TOUR}) == len(TOUR)


@pytest.mark.parametrize("mistake", TOUR, ids=[m.id for m in TOUR])
async def test_each_mistake_gets_an_answer_that_names_the_fix(mistake: Mistake) -> None:
    with pytest.raises(mistake.error) as raised:
        await _run(mistake.code)
    message = str(raised.value)
    assert mistake.says in message, message
    assert len(message) < 1200, f"an answer should be short enough to read: {message}"


async def test_the_setup_itself_is_correct_code() -> None:
    """The rows fail for their mistake, not for the setup around it."""
    await _run('result = await agent.run("Hi")\nassert result.output == "Hi!"')


def test_a_model_string_is_a_litellm_client_made_at_once() -> None:
    agent = Agent("anthropic/claude-sonnet-4-5", instructions="Be brief.")
    model = agent.pipeline.inner
    assert isinstance(model, LiteLLMChatClient) and isinstance(model, ChatClient)
    assert model.model == "anthropic/claude-sonnet-4-5"


async def test_a_missing_api_key_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No key in the environment: the request fails before it is sent, and the error says
    which variable is missing and that retrying will not help."""
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ProviderError) as raised:
        await Agent("openai/gpt-5").run("Hi")
    assert "has no API key" in str(raised.value)
    assert "OPENAI_API_KEY" in str(raised.value)
    assert raised.value.retryable is False
