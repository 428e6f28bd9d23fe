"""LiteLLMChatClient over litellm's real HTTP path, against fake OpenAI and Anthropic servers:
the tool loop, what goes over the wire, and what comes back."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest

from loopkit.abstractions import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    ToolMode,
    tool,
)
from loopkit.middleware.function_invocation import FunctionInvokingChatClient
from tests.fakes.fake_llm_server import ScriptedToolCall, ScriptedUsage, Turn
from tests.providers.conftest import DUMMY_KEY, Wire

pytestmark = pytest.mark.integration

CALLS: list[dict[str, Any]] = []


@tool
def get_weather(city: Annotated[str, "City name"]) -> str:
    """Current weather for a city."""
    CALLS.append({"tool": "get_weather", "city": city})
    return f"{city}: 21 C, sunny"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    CALLS.append({"tool": "get_time", "zone": zone})
    return f"12:00 in {zone}"


def conversation() -> list[ChatMessage]:
    return [
        ChatMessage.from_text(ChatRole.SYSTEM, "You answer briefly."),
        ChatMessage.from_text(ChatRole.USER, "Weather and time in Oslo?"),
    ]


def tool_results_sent(wire: Wire, body: dict[str, Any]) -> dict[str, str]:
    """call id → result text, as the request body carries tool results in this wire format."""
    found: dict[str, str] = {}
    for m in body["messages"]:
        if wire.format == "openai" and m["role"] == "tool":
            found[m["tool_call_id"]] = m["content"]
        if wire.format == "anthropic" and isinstance(m["content"], list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    text = content if isinstance(content, str) else content[0]["text"]
                    found[block["tool_use_id"]] = text
    return found


async def test_two_round_tool_run_through_the_function_invocation_loop(wire: Wire) -> None:
    CALLS.clear()
    wire.server.enqueue(
        Turn.calls(
            ScriptedToolCall("get_weather", {"city": "Oslo"}, "call_w1"),
            ScriptedToolCall("get_time", {"zone": "Europe/Oslo"}, "call_t1"),
            text="Let me check.",
        ),
        Turn.reply("Oslo: 21 C and sunny, 12:00."),
    )
    loop = FunctionInvokingChatClient(wire.client())
    response = await loop.get_response(conversation(), ChatOptions(tools=[get_weather, get_time]))

    assert response.text == "Oslo: 21 C and sunny, 12:00."
    assert CALLS == [
        {"tool": "get_weather", "city": "Oslo"},
        {"tool": "get_time", "zone": "Europe/Oslo"},
    ]
    assert len(wire.server.requests) == 2
    first, second = (r.body for r in wire.server.requests)
    assert first["model"] == wire.model.split("/", 1)[1]
    # Round two carries the calls and both results, matched by call id.
    assert tool_results_sent(wire, second) == {
        "call_w1": "Oslo: 21 C, sunny",
        "call_t1": "12:00 in Europe/Oslo",
    }
    assert tool_results_sent(wire, first) == {}
    # The credential went in a header and was not recorded; the body never carries it.
    assert wire.server.requests[0].credential_headers
    assert DUMMY_KEY not in json.dumps(second)
    # The loop's history: assistant calls, tool results, final text.
    roles = [m.role for m in response.messages]
    assert roles == [ChatRole.ASSISTANT, ChatRole.TOOL, ChatRole.ASSISTANT]
    assert [c.name for c in response.messages[0].function_calls] == ["get_weather", "get_time"]
    assert response.messages[0].text == "Let me check."


async def test_tool_declarations_on_the_wire(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply("ok"))
    await wire.client().get_response(conversation(), ChatOptions(tools=[get_weather]))
    body = wire.server.requests[0].body
    if wire.format == "openai":
        declared = body["tools"][0]
        assert declared["type"] == "function"
        assert declared["function"]["name"] == "get_weather"
        assert declared["function"]["description"] == "Current weather for a city."
        schema = declared["function"]["parameters"]
    else:
        declared = body["tools"][0]
        assert declared["name"] == "get_weather"
        assert declared["description"] == "Current weather for a city."
        schema = declared["input_schema"]
    assert schema["properties"]["city"]["type"] == "string"
    assert schema["required"] == ["city"]


async def test_usage_is_mapped_with_cache_tokens(wire: Wire) -> None:
    wire.server.enqueue(
        Turn.reply(
            "hi",
            usage=ScriptedUsage(
                input_tokens=12,
                output_tokens=7,
                cache_read_input_tokens=300,
                cache_creation_input_tokens=40,
            ),
        )
    )
    response = await wire.client().get_response(conversation())
    usage = response.usage
    assert usage is not None
    # input_tokens counts every input token, cache reads and writes included.
    assert usage.input_tokens == 12 + 300 + 40
    assert usage.output_tokens == 7
    assert usage.cached_input_tokens == 300
    if wire.format == "anthropic":
        assert usage.cache_creation_input_tokens == 40
    else:
        assert usage.cache_creation_input_tokens == 0  # OpenAI reports no cache writes
    assert response.finish_reason == "stop"
    assert response.text == "hi"


async def test_anthropic_request_carries_cache_breakpoints(anthropic_wire: Wire) -> None:
    anthropic_wire.server.enqueue(Turn.tool_call("get_weather", {"city": "Oslo"}), Turn.reply("ok"))
    loop = FunctionInvokingChatClient(anthropic_wire.client())
    await loop.get_response(conversation(), ChatOptions(tools=[get_time, get_weather]))
    ephemeral = {"type": "ephemeral"}
    for body in (r.body for r in anthropic_wire.server.requests):
        assert body["system"][-1]["cache_control"] == ephemeral
        assert body["tools"][-1]["cache_control"] == ephemeral
        assert "cache_control" not in body["tools"][0]
        last_block = body["messages"][-1]["content"][-1]
        assert last_block["cache_control"] == ephemeral
        # Only the latest turn is marked: earlier messages are cached through it.
        for m in body["messages"][:-1]:
            assert all("cache_control" not in b for b in m["content"] if isinstance(b, dict))
    # In round two the latest turn is the tool result.
    second = anthropic_wire.server.requests[1].body
    assert second["messages"][-1]["content"][-1]["type"] == "tool_result"


async def test_prompt_caching_can_be_turned_off_for_anthropic(anthropic_wire: Wire) -> None:
    anthropic_wire.server.enqueue(Turn.reply("ok"))
    await anthropic_wire.client(prompt_caching=False).get_response(
        conversation(), ChatOptions(tools=[get_weather])
    )
    assert "cache_control" not in json.dumps(anthropic_wire.server.requests[0].body)


async def test_openai_request_has_no_cache_control(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.tool_call("get_weather", {"city": "Oslo"}), Turn.reply("ok"))
    loop = FunctionInvokingChatClient(openai_wire.client())
    await loop.get_response(conversation(), ChatOptions(tools=[get_weather]))
    assert len(openai_wire.server.requests) == 2
    for request in openai_wire.server.requests:
        assert "cache_control" not in json.dumps(request.body)


async def test_sampling_parameters_absent_when_unset(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply("ok"))
    await wire.client().get_response(conversation(), ChatOptions())
    body = wire.server.requests[0].body
    for key in ("temperature", "top_p", "top_k", "seed", "stop", "stop_sequences", "tool_choice"):
        assert key not in body, key
    assert "tools" not in body


async def test_sampling_parameters_sent_when_set(wire: Wire) -> None:
    wire.server.enqueue(Turn.reply("ok"))
    options = ChatOptions(temperature=0.2, top_p=0.9, stop_sequences=["END"], max_output_tokens=321)
    if wire.format == "anthropic":
        options.top_k = 40  # OpenAI's API has no top_k
    else:
        options.seed = 7  # Anthropic's has no seed
    await wire.client().get_response(conversation(), options)
    body = wire.server.requests[0].body
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["max_tokens"] == 321
    if wire.format == "openai":
        assert body["stop"] == ["END"]
        assert body["seed"] == 7
    else:
        assert body["stop_sequences"] == ["END"]
        assert body["top_k"] == 40


async def test_parameter_the_provider_lacks_is_a_clear_error(anthropic_wire: Wire) -> None:
    from loopkit.errors import ProviderError

    with pytest.raises(ProviderError, match="seed") as caught:
        await anthropic_wire.client().get_response(conversation(), ChatOptions(seed=7))
    assert caught.value.retryable is False
    assert "before sending" in str(caught.value)
    assert anthropic_wire.server.requests == []


async def test_additional_properties_pass_through(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.reply("ok"))
    options = ChatOptions(
        additional_properties={"response_format": {"type": "json_object"}, "presence_penalty": 0.5}
    )
    await openai_wire.client().get_response(conversation(), options)
    body = openai_wire.server.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    assert body["presence_penalty"] == 0.5


TOOL_CHOICES: list[tuple[ToolMode, Any, Any]] = [
    (ToolMode.auto(), "auto", {"type": "auto"}),
    (ToolMode.none(), "none", {"type": "none"}),
    (ToolMode.required(), "required", {"type": "any"}),
    (
        ToolMode.required("get_time"),
        {"type": "function", "function": {"name": "get_time"}},
        {"type": "tool", "name": "get_time"},
    ),
]


@pytest.mark.parametrize(("mode", "openai_choice", "anthropic_choice"), TOOL_CHOICES)
async def test_tool_mode_maps_to_tool_choice(
    wire: Wire, mode: ToolMode, openai_choice: Any, anthropic_choice: Any
) -> None:
    wire.server.enqueue(Turn.reply("ok"))
    options = ChatOptions(tools=[get_weather, get_time], tool_mode=mode)
    await wire.client().get_response(conversation(), options)
    sent = wire.server.requests[0].body["tool_choice"]
    expected = openai_choice if wire.format == "openai" else anthropic_choice
    assert sent == expected


async def test_required_tool_must_exist(openai_wire: Wire) -> None:
    options = ChatOptions(tools=[get_weather], tool_mode=ToolMode.required("nope"))
    with pytest.raises(ValueError, match=r"'nope'.*get_weather"):
        await openai_wire.client().get_response(conversation(), options)
    assert openai_wire.server.requests == []


async def test_invalid_json_arguments_become_arguments_error(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.tool_call("get_weather", '{"city": "Oslo"', call_id="c1"))
    response = await openai_wire.client().get_response(
        conversation(), ChatOptions(tools=[get_weather])
    )
    (call,) = response.function_calls
    assert call.name == "get_weather"
    assert call.arguments == {}
    assert call.arguments_error is not None
    assert "get_weather" in call.arguments_error
    assert "not valid JSON" in call.arguments_error


async def test_history_with_calls_results_and_model_override(wire: Wire) -> None:
    """A conversation written by hand (as a resumed run would be) maps onto the wire correctly."""
    wire.server.enqueue(Turn.reply("ok"))
    history = [
        *conversation(),
        ChatMessage(
            role=ChatRole.ASSISTANT,
            contents=[
                TextContent(text="Checking."),
                FunctionCallContent(call_id="call_1", name="get_weather", arguments={"city": "X"}),
            ],
        ),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[FunctionResultContent(call_id="call_1", result="X: rain", error=False)],
        ),
        ChatMessage.from_text(ChatRole.USER, "And tomorrow?"),
    ]
    override = wire.model.split("/", 1)[0] + "/other-model"
    options = ChatOptions(tools=[get_weather], model_id=override)
    response = await wire.client().get_response(history, options)
    body = wire.server.requests[0].body
    assert body["model"] == "other-model"
    assert tool_results_sent(wire, body) == {"call_1": "X: rain"}
    if wire.format == "openai":
        assistant = body["messages"][2]
        assert assistant["content"] == "Checking."
        assert assistant["tool_calls"][0]["function"] == {
            "name": "get_weather",
            "arguments": '{"city": "X"}',
        }
    else:
        assistant = body["messages"][1]
        assert assistant["role"] == "assistant"
        kinds = [b["type"] for b in assistant["content"]]
        assert kinds == ["text", "tool_use"]
        assert assistant["content"][1]["input"] == {"city": "X"}
    assert response.text == "ok"


def test_bad_constructor_arguments_are_named() -> None:
    from loopkit.providers.litellm import LiteLLMChatClient

    with pytest.raises(ValueError, match="model must be a litellm model string"):
        LiteLLMChatClient("")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        LiteLLMChatClient("openai/x", timeout=0)
    with pytest.raises(ValueError, match=r"'stream'.*sets it per request"):
        LiteLLMChatClient("openai/x", litellm_params={"stream": True})
    with pytest.raises(ValueError, match=r"pass it as LiteLLMChatClient\(temperature=...\)"):
        LiteLLMChatClient("openai/x", litellm_params={"temperature": 0.2})
    with pytest.raises(ValueError, match="one retry layer"):
        LiteLLMChatClient("openai/x", litellm_params={"num_retries": 3})
    with pytest.raises(ValueError, match="max_tokens must be a positive whole number"):
        LiteLLMChatClient("openai/x", max_tokens=0)
    client = LiteLLMChatClient("anthropic/claude-x", api_key="sk-secret-value-123456")
    assert "secret" not in repr(client)
    assert client.prompt_caching is True
    assert LiteLLMChatClient("openai/gpt-x").prompt_caching is False


def test_a_misspelt_keyword_is_a_type_error_never_sent() -> None:
    """``**extra`` is gone: an unknown keyword fails at construction (and in mypy), before any
    request could carry it."""
    from loopkit.providers.litellm import LiteLLMChatClient

    with pytest.raises(TypeError, match="temprature"):
        LiteLLMChatClient("openai/x", temprature=0.2)  # type: ignore[call-arg]


async def test_client_defaults_headers_body_and_litellm_params_on_the_wire(
    openai_wire: Wire,
) -> None:
    openai_wire.server.enqueue(Turn.reply("ok"), Turn.reply("ok"))
    client = openai_wire.client(
        temperature=0.3,
        max_tokens=50,
        extra_headers={"x-trace-id": "t-1"},
        extra_body={"custom_field": 1},
        litellm_params={"presence_penalty": 0.5},
    )
    await client.get_response(conversation())
    # ChatOptions win over the client's defaults for one request.
    await client.get_response(conversation(), ChatOptions(temperature=0.9, max_output_tokens=7))
    first, second = (r.body for r in openai_wire.server.requests)
    assert (first["temperature"], first["max_tokens"]) == (0.3, 50)
    assert (second["temperature"], second["max_tokens"]) == (0.9, 7)
    assert first["custom_field"] == 1  # extra_body is merged into the JSON body
    assert first["presence_penalty"] == 0.5
    assert openai_wire.server.requests[0].headers["x-trace-id"] == "t-1"


async def test_unset_client_defaults_are_not_sent(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.reply("ok"))
    await openai_wire.client().get_response(conversation())
    body = openai_wire.server.requests[0].body
    assert not {"temperature", "max_tokens", "custom_field"} & set(body)
