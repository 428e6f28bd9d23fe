"""Mistakes ``mypy --strict`` must report: each line marked ``# E: <code>`` must give exactly that
error, and no other line may give one (tests/typing/test_mypy_strict.py). Never run."""

# ruff: noqa: F401, F841, I001, B018  (deliberate mistakes, one a line)

from __future__ import annotations

import io

from pydantic import BaseModel

import loopkit
from loopkit import ChatClientBuildr  # E: attr-defined
from loopkit import Agent, ChatClientBuilder, FinalResult, FunctionChatClient, LiteLLMChatClient
from loopkit import ChatMessage, InMemorySession, TextDelta, tool
from loopkit.middleware import RunLogg  # E: attr-defined


@tool
def add(a: int, b: int = 1) -> int:
    return a + b


@tool(name="weather")
async def weather(city: str) -> str:
    return city


model = FunctionChatClient(lambda messages, options: "hi")
builder = ChatClientBuilder(model)

add("one")  # E: arg-type
add(1, c=2)  # E: call-arg
total: str = add(1)  # E: assignment
forecast: str = weather("Oslo")  # E: assignment
weather(city=3)  # E: arg-type, unused-coroutine
builder.use_function_invocation(max_round=10)  # E: call-arg
builder.use_function_invocation(max_rounds="10")  # E: arg-type
builder.use_retries(max_attempt=2)  # E: call-arg
builder.use_run_log(io.StringIO(), max_chars=1)  # E: call-arg
builder.use_opentelemetry(capture=True)  # E: call-arg
LiteLLMChatClient("openai/gpt-5", temprature=0.2)  # E: call-arg
LiteLLMChatClient("openai/gpt-5", timeout="slow")  # E: arg-type
LiteLLMChatClient("openai/gpt-5", litellm_params=["reasoning_effort"])  # E: arg-type
loopkit.ChatClientBuilderr  # E: attr-defined


class Invoice(BaseModel):
    total: float


invoices = Agent(model, output_type=Invoice)
Agent(model, max_round=10)  # E: call-overload
Agent(model, output_type=Invoice, instructions=["be brief"])  # E: call-overload
builder.use_compaction(max_input_token=100_000)  # E: call-arg
builder.use_compaction(keep_recent_steps="4")  # E: arg-type
builder.use_fallback(model)  # E: arg-type
count: int = invoices.run_sync("Invoice Ann").output  # E: assignment
invoices.run_sync("Invoice Ann").output.totl  # E: attr-defined
text_agent: Agent[Invoice] = Agent(model)  # E: assignment


async def stream() -> None:
    async for event in invoices.run_stream("Invoice Ann"):
        match event:
            case FinalResult(result=final):
                text: str = final.output  # E: assignment
            case TextDelta(text=piece):
                number: int = piece  # E: assignment


async def mixed_up() -> None:
    await invoices.run_stream("Invoice Ann")  # E: misc
    for _wrong in invoices.run_stream("Invoice Ann"):  # E: attr-defined
        pass
    ChatMessage(role="asistant", contents=[])  # E: arg-type
    Agent("openai/gpt-5", max_round=3)  # E: call-overload
    invoices.run_sync("Invoice Ann", message_history=[])  # E: call-arg
    session = InMemorySession("user-42")
    session.close()  # E: unused-coroutine
