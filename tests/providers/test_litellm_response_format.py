"""``ChatOptions.response_format`` over litellm's real HTTP path (contract 6): what each wire
format carries, and what comes back, with the installed litellm.

Observed with litellm 1.110: an OpenAI-compatible server gets ``response_format`` as given; for
Anthropic, a model with structured outputs (Claude Sonnet 4.5) gets ``output_format`` with the
schema and the ``structured-outputs`` beta header, an older one (Claude 3.5 Haiku) a forced tool
``json_tool_call`` whose call litellm turns back into the answer's text (no tool call reaches the
loop). ``{"type": "json_object"}`` is dropped for Anthropic, so loopkit refuses
``ResponseFormat.json()`` for Anthropic models before sending.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter

from loopkit import ChatMessage, ChatOptions, ChatResponseUpdate, ChatRole
from loopkit.providers.litellm_mapping import options_to_kwargs, to_response_format
from tests.fakes.fake_llm_server import FakeLLMServer, Turn
from tests.providers.conftest import DUMMY_KEY, Wire

pytestmark = pytest.mark.integration


# STAND-IN for loopkit.abstractions.response_format.ResponseFormat (helper A's branch): the same
# constructors and the attributes litellm_mapping._format_parts reads. After the merge: import
# the real class here and build options with ChatOptions(response_format=...) in `options_with`.
@dataclass(frozen=True)
class ResponseFormat:
    kind: Literal["text", "json", "json_schema"]
    schema_: dict[str, Any] | None = None
    name: str | None = None
    strict: bool = True

    @classmethod
    def text(cls) -> ResponseFormat:
        return cls("text")

    @classmethod
    def json(cls) -> ResponseFormat:
        return cls("json")

    @classmethod
    def json_schema(cls, schema: dict[str, Any], name: str, strict: bool = True) -> ResponseFormat:
        return cls("json_schema", schema, name, strict)


def options_with(fmt: Any, **fields: Any) -> ChatOptions:
    """ChatOptions carrying ``response_format`` (a field of ChatOptions after the merge)."""

    class _Options(ChatOptions):
        __slots__ = ("response_format",)

    options = _Options(**fields)
    options.response_format = fmt  # type: ignore[attr-defined]
    return options


class Weather(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str
    celsius: float


SCHEMA = TypeAdapter(Weather).json_schema()
ANSWER = {"city": "Oslo", "celsius": 18.5}
WEATHER = ResponseFormat.json_schema(SCHEMA, "weather")


def ask() -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, "Weather in Oslo as JSON?")]


# --- the mapping ---------------------------------------------------------------------------------


def test_mapping_of_each_kind() -> None:
    assert to_response_format(None) is None
    assert to_response_format(ResponseFormat.text()) is None  # the default: nothing sent
    assert to_response_format(ResponseFormat.json()) == {"type": "json_object"}
    assert to_response_format(ResponseFormat.json_schema(SCHEMA, "weather", strict=False)) == {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": SCHEMA, "strict": False},
    }
    # Formats the real class may refuse to build; the mapping still answers them clearly.
    unnamed = SimpleNamespace(kind="json_schema", schema_=SCHEMA, name=None, strict=True)
    assert to_response_format(unnamed)["json_schema"]["name"] == "response"  # type: ignore[index]


def test_bad_formats_are_named() -> None:
    with pytest.raises(ValueError, match="without a schema"):
        to_response_format(SimpleNamespace(kind="json_schema", name="x", strict=True))
    with pytest.raises(ValueError, match=r"kind 'xml'; expected 'text', 'json' or 'json_schema'"):
        to_response_format(SimpleNamespace(kind="xml"))


def test_additional_properties_still_win() -> None:
    raw = {"type": "json_object"}
    kwargs = options_to_kwargs(
        options_with(WEATHER, additional_properties={"response_format": raw})
    )
    assert kwargs["response_format"] == raw


# --- on the wire ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_request_carries_the_json_schema(openai_wire: Wire, stream: bool) -> None:
    openai_wire.server.enqueue(Turn.reply(json.dumps(ANSWER)))
    text = await answer(openai_wire.client(), options_with(WEATHER), stream)
    assert json.loads(text) == ANSWER
    body = openai_wire.server.requests[0].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True},
    }


async def test_openai_json_mode(openai_wire: Wire) -> None:
    openai_wire.server.enqueue(Turn.reply('{"any": "object"}'))
    await openai_wire.client().get_response(ask(), options_with(ResponseFormat.json()))
    assert openai_wire.server.requests[0].body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_structured_output_model_gets_output_format(
    anthropic_wire: Wire, stream: bool
) -> None:
    anthropic_wire.server.enqueue(Turn.reply(json.dumps(ANSWER)))
    client = anthropic_wire.client()  # anthropic/claude-sonnet-4-5
    text = await answer(client, options_with(WEATHER), stream)
    assert json.loads(text) == ANSWER
    request = anthropic_wire.server.requests[0]
    assert request.body["output_format"]["type"] == "json_schema"
    assert request.body["output_format"]["schema"]["properties"] == SCHEMA["properties"]
    assert "structured-outputs" in request.headers.get("anthropic-beta", "")
    assert "tools" not in request.body and "response_format" not in request.body


@pytest.mark.parametrize("stream", [False, True])
async def test_older_anthropic_model_gets_a_forced_tool_whose_call_becomes_the_text(
    stream: bool,
) -> None:
    from loopkit import LiteLLMChatClient

    with FakeLLMServer.anthropic() as server:
        server.enqueue(Turn.tool_call("json_tool_call", ANSWER))
        client = LiteLLMChatClient(
            "anthropic/claude-3-5-haiku-20241022", api_base=server.api_base, api_key=DUMMY_KEY
        )
        text, calls = await answer_and_calls(client, options_with(WEATHER), stream)
        body = server.requests[0].body
    assert json.loads(text) == ANSWER
    assert calls == []  # litellm's internal tool never reaches the loop as a call
    assert body["tool_choice"] == {"name": "json_tool_call", "type": "tool"}
    [declared] = body["tools"]
    assert declared["name"] == "json_tool_call"
    assert declared["input_schema"]["properties"] == SCHEMA["properties"]


async def test_json_mode_is_refused_for_anthropic_before_sending(anthropic_wire: Wire) -> None:
    with pytest.raises(ValueError, match=r"give a schema: ResponseFormat.json_schema"):
        await anthropic_wire.client().get_response(ask(), options_with(ResponseFormat.json()))
    assert anthropic_wire.server.requests == []


async def test_litellm_still_drops_json_mode_for_anthropic(anthropic_wire: Wire) -> None:
    """Why the refusal above exists; when this fails, litellm maps JSON mode for Anthropic and
    ``_check_json_mode`` in loopkit.providers.litellm can go."""
    anthropic_wire.server.enqueue(Turn.reply('{"a": 1}'))
    raw = ChatOptions(additional_properties={"response_format": {"type": "json_object"}})
    await anthropic_wire.client().get_response(ask(), raw)
    body = anthropic_wire.server.requests[0].body
    assert not {"response_format", "output_format", "tools", "tool_choice"} & set(body)


async def answer(client: Any, options: ChatOptions, stream: bool) -> str:
    return (await answer_and_calls(client, options, stream))[0]


async def answer_and_calls(
    client: Any, options: ChatOptions, stream: bool
) -> tuple[str, list[str]]:
    if stream:
        updates: list[ChatResponseUpdate] = [
            u async for u in client.get_streaming_response(ask(), options)
        ]
        text = "".join(u.text for u in updates)
        calls = [c.name for u in updates for c in u.contents if c.type == "function_call"]
        return text, calls
    response = await client.get_response(ask(), options)
    return response.text, [c.name for c in response.function_calls]
