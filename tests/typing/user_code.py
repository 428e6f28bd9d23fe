"""User code: loopkit's public API as an application would use it.

``tests/typing/test_mypy_strict.py`` type-checks this file with ``mypy --strict`` (it must be
clean; every ``# type: ignore[code]`` marks a mistake that must stay an error, and
``warn_unused_ignores`` fails the check when one stops being an error) and then runs ``main()``:
the same lines work at run time, offline, and the mistakes fail there too.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated

from pydantic import BaseModel

from loopkit import (
    Agent,
    AgentEvent,
    AgentRunResult,
    AgentStream,
    AgentTool,
    ChatClient,
    ChatClientBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    CompactionOptions,
    Content,
    FinalResult,
    FunctionCallContent,
    FunctionChatClient,
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    FunctionTool,
    InMemorySession,
    LiteLLMChatClient,
    ProviderError,
    RetryPolicy,
    RoundFinished,
    RunContext,
    RunLog,
    Session,
    SQLiteSession,
    TextContent,
    TextDelta,
    Tool,
    ToolCallStarted,
    ToolResultReceived,
    UsageDetails,
    current_run,
    run_scope,
    tool,
)
from loopkit.abstractions import ToolMode
from loopkit.mcp import MCPServerConfig
from loopkit.middleware import OpenTelemetryChatClient, TokenBudgetChatClient
from loopkit.providers import ScriptedChatClient
from loopkit.sessions import check_complete
from loopkit_tools import Glossary, Note, ToolsConfig, WorkspaceGuard, rule_from_message
from loopkit_ui import ElementNotFoundError, Locator


@tool
def add(a: int, b: Annotated[int, "the second number"] = 1) -> int:
    """Add two numbers."""
    return a + b


@tool(name="weather", description="Current weather for a city.")
async def get_weather(city: Annotated[str, "city name"]) -> str:
    return f"{city}: 18 C"


def refused(*attempts: Callable[[], object]) -> int:
    """How many of ``attempts`` raise TypeError (or ValueError)."""
    count = 0
    for attempt in attempts:
        try:
            attempt()
        except (TypeError, ValueError):
            count += 1
    return count


def tools_call_like_their_functions() -> list[Tool]:
    total: int = add(1, b=2)
    assert total == 3
    assert (
        refused(
            lambda: add("one"),  # type: ignore[arg-type]
            lambda: add(1, c=3),  # type: ignore[call-arg]
        )
        == 2
    )
    bare: FunctionTool = FunctionTool.from_function(add, name="plus")
    return [add, get_weather, bare]


async def async_tool_returns_its_coroutine() -> str:
    text: str = await get_weather("Oslo")
    not_awaited: str = get_weather("Oslo")  # type: ignore[assignment]
    await not_awaited  # type: ignore[misc]
    return text


def approve(call: FunctionCallContent) -> bool:
    return call.name != "rm"


def on_retry(attempt: int, error: ProviderError, delay: float) -> None:
    print(attempt, error.retryable, delay)


def reply(messages: list[ChatMessage], options: ChatOptions | None) -> str:
    return "3"


def built_pipeline(model: ChatClient) -> ChatClient:
    return (
        ChatClientBuilder(model)
        .use_function_invocation(
            max_rounds=10, approval_required={"plus"}, approver=approve, max_result_chars=None
        )
        .use_run_log(io.StringIO(), max_text_chars=500)
        .use_token_budget(100_000)
        .use_retries(max_attempts=2, initial_delay=0.0, on_retry=on_retry)
        .build()
    )


def builder_typos_are_errors(model: ChatClient) -> int:
    builder = ChatClientBuilder(model)
    return refused(
        lambda: builder.use_function_invocation(max_round=10),  # type: ignore[call-arg]
        lambda: builder.use_retries(max_attempt=2),  # type: ignore[call-arg]
        lambda: builder.use_run_log(io.StringIO(), max_chars=1),  # type: ignore[call-arg]
        lambda: builder.use_opentelemetry(capture=True),  # type: ignore[call-arg]
        lambda: builder.use_function_invocation(max_rounds="10"),  # type: ignore[arg-type]
    )


def litellm_clients() -> list[LiteLLMChatClient]:
    clients = [
        LiteLLMChatClient("anthropic/claude-sonnet-4-5"),
        LiteLLMChatClient(
            "openai/served-model",
            api_base="http://127.0.0.1:9/v1",
            api_key="not-a-real-key",
            timeout=30,
            temperature=0.2,
            max_tokens=1000,
            extra_headers={"x-trace-id": "t-1"},
            extra_body={"top_k": 40},
            litellm_params={"reasoning_effort": "low"},
        ),
    ]
    assert (
        refused(
            lambda: LiteLLMChatClient("openai/x", temprature=0.2),  # type: ignore[call-arg]
            lambda: LiteLLMChatClient("openai/x", stream=True),  # type: ignore[call-arg]
        )
        == 2
    )
    return clients


def contents_and_options() -> ChatOptions:
    contents: list[Content] = [TextContent(text="hi")]
    message = ChatMessage(role=ChatRole.USER, contents=contents)
    assert message.text == "hi"
    # The role as a string, as the docs write it; stored as a ChatRole all the same.
    said = ChatMessage(role="assistant", contents=[TextContent(text="hello")])
    parts: list[TextContent] = [TextContent(text="a"), TextContent(text="b")]
    both = ChatMessage(role="user", contents=parts)  # any sequence of contents
    assert said.role is ChatRole.ASSISTANT and both.text == "ab"
    assert refused(lambda: ChatMessage(role="asistant", contents=[])) == 1  # type: ignore[arg-type]
    usage: UsageDetails = UsageDetails(input_tokens=1)
    assert usage.input_tokens == 1
    return ChatOptions(tools=tools_call_like_their_functions(), tool_mode=ToolMode.auto())


async def runs_and_sessions() -> None:
    session: Session = InMemorySession()
    await session.add_messages([ChatMessage.from_text(ChatRole.USER, "hi")])
    check_complete(await session.get_messages())
    async with SQLiteSession(":memory:", "closed-at-the-end") as stored:
        kept: Session = stored
        await kept.add_messages([ChatMessage.from_text("user", "hi")])
    await session.close()
    run: RunContext
    with run_scope(name="typed") as run:
        assert current_run() is run
        hook: Callable[[list[ChatMessage]], Awaitable[None]] = session.add_messages
        run.on_messages(hook)


class Invoice(BaseModel):
    customer: str
    total: float


def invoice_reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> str:
    return json.dumps({"customer": "Ann", "total": 9.5})


async def agents(model: ChatClient) -> None:
    text_agent: Agent[str] = Agent(model, instructions="Be brief.", tools=[add], max_rounds=5)
    result: AgentRunResult[str] = await text_agent.run("1 + 2?")
    answer: str = result.output
    assert answer == "3" and len(result.run_id) == 32

    invoices = Agent(FunctionChatClient(invoice_reply), output_type=Invoice, output_retries=2)
    typed: Agent[Invoice] = invoices
    invoice: Invoice = (await typed.run("Invoice Ann")).output
    assert invoice.total == 9.5
    assert invoices.run_sync is not None  # run_sync needs a thread without a running loop

    outputs: list[Invoice] = []
    async for event in invoices.run_stream("Invoice Ann"):
        if isinstance(event, FinalResult):
            outputs.append(event.result.output)
    texts: list[str] = []
    async for other in text_agent.run_stream("1 + 2?"):
        match other:
            case TextDelta(text=piece):
                texts.append(piece)
            case ToolCallStarted(call=call):
                texts.append(call.name)
            case ToolResultReceived(result=tool_result):
                texts.append(tool_result.result)
            case RoundFinished(usage=usage):
                assert usage is None or usage.input_tokens >= 0
            case FinalResult(result=final):
                answer = final.output
    assert outputs == [invoice] and answer == "3" and texts == ["3"]
    delta: AgentEvent[str] = TextDelta(round=1, text="hi")
    assert delta.type == "text_delta"

    session: Session = SQLiteSession(":memory:", "user-42")
    await text_agent.run("1 + 2?", session=session)
    again = await text_agent.run("And again?", session=InMemorySession("user-43"))
    assert len(await session.get_messages()) == 2 and again.rounds == 1

    sub: AgentTool = invoices.as_tool("invoice", "Write an invoice.", max_depth=2)
    as_tool: Tool = sub
    assert as_tool.name == "invoice"
    assert (
        refused(
            lambda: Agent(model, max_round=10),  # type: ignore[call-overload]
            lambda: Agent(model, instructions=3),  # type: ignore[call-overload]
            lambda: Agent(42),  # type: ignore[call-overload]
        )
        == 3
    )
    by_name: Agent[str] = Agent("openai/gpt-5", instructions="Be brief.")  # a LiteLLMChatClient
    typed_by_name: Agent[Invoice] = Agent("anthropic/claude-sonnet-4-5", output_type=Invoice)
    assert by_name.name == typed_by_name.name == "agent"
    stream: AgentStream[AgentEvent[str]] = text_agent.run_stream("1 + 2?")
    await stream.aclose()  # never iterated: the run never starts


def compaction_and_fallback(model: ChatClient, backup: ChatClient) -> Agent[str]:
    builder = (
        ChatClientBuilder(model)
        .use_compaction(max_input_tokens=200_000, keep_recent_steps=2, summarize=False)
        .use_fallback([backup], names=["primary", "backup"], sticky=False)
    )
    ChatClientBuilder(model).use_compaction(CompactionOptions(trigger_tokens=1000))
    assert (
        refused(
            lambda: builder.use_compaction(max_input_token=1000),  # type: ignore[call-arg]
            lambda: builder.use_fallback(backup),  # type: ignore[arg-type]
        )
        == 2
    )
    return Agent(builder, tools=[add])


def other_packages() -> None:
    config = MCPServerConfig(command=["python", "-m", "some_server"], tool_prefix="x_")
    assert config.tool_prefix == "x_"
    assert ToolsConfig().max_output_lines > 0
    assert WorkspaceGuard is not None
    locator = Locator(target="SaveButton", row=1)
    assert issubclass(ElementNotFoundError, Exception) and locator.describe().startswith("Save")
    note = Note(kind="verdict", topic="saving", title="Autosave", verdict="Works.")
    assert note.slug == "autosave"
    wrong = Glossary("en", {}, {"pop-up": "dialog"}).check("A pop-up.")
    assert [w.replacement for w in wrong] == ["dialog"]
    assert rule_from_message("remember: x") == "x"


async def main() -> None:
    model = FunctionChatClient(reply, model_id="function")
    client = built_pipeline(model)
    response: ChatResponse = await client.get_response(
        [ChatMessage.from_text(ChatRole.USER, "1 + 2?")], contents_and_options()
    )
    assert response.text == "3"
    assert isinstance(client, FunctionInvokingChatClient)
    assert isinstance(client.find(TokenBudgetChatClient), TokenBudgetChatClient)
    assert builder_typos_are_errors(model) == 5
    assert await async_tool_returns_its_coroutine() == "Oslo: 18 C"
    assert len(litellm_clients()) == 2
    await runs_and_sessions()
    await agents(model)
    assert compaction_and_fallback(model, FunctionChatClient(reply)).run_sync is not None
    other_packages()
    options = FunctionInvocationOptions(max_rounds=3)
    policy = RetryPolicy(max_attempts=2)
    log = RunLog(io.StringIO())
    scripted: type[ScriptedChatClient] = ScriptedChatClient
    traced: type[OpenTelemetryChatClient] = OpenTelemetryChatClient
    assert (options.max_rounds, policy.max_attempts, log.rounds) == (3, 2, 0)
    assert scripted is not None and traced is not None


if __name__ == "__main__":
    asyncio.run(main())
