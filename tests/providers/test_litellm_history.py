"""LiteLLMChatClient maps each message once (only the new ones per request), and never sends a
stale mapping: a caller that changes, replaces or removes earlier messages gets on the wire what
a client without any cache would send. The oracle throughout is the plain mapping of the whole
history (``to_openai_messages`` + ``add_cache_breakpoints``), or a fresh client over real HTTP."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest

from loopkit import Agent, ChatClientBuilder, RunLog, RunLogChatClient
from loopkit.abstractions import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    tool,
)
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import FunctionInvokingChatClient
from loopkit.providers import litellm as litellm_provider
from loopkit.providers import litellm_mapping
from loopkit.providers.litellm import LiteLLMChatClient
from loopkit.providers.litellm_mapping import add_cache_breakpoints, to_openai_messages
from tests.fakes.fake_llm_server import FakeLLMServer, ScriptedToolCall, Turn
from tests.providers.conftest import DUMMY_KEY, MODELS, Wire


def history() -> list[ChatMessage]:
    """System, user, an assistant turn with text and a call, its result, a user follow-up."""
    return [
        ChatMessage.from_text(ChatRole.SYSTEM, "You answer briefly."),
        ChatMessage.from_text(ChatRole.USER, "Weather in Oslo?"),
        ChatMessage(
            role=ChatRole.ASSISTANT,
            contents=[
                TextContent(text="Checking."),
                FunctionCallContent(
                    call_id="call_1", name="weather", arguments={"city": "Oslo", "days": [1, 2]}
                ),
            ],
        ),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[FunctionResultContent(call_id="call_1", result="Oslo: rain")],
        ),
        ChatMessage.from_text(ChatRole.USER, "And tomorrow?"),
    ]


def naive(messages: Sequence[ChatMessage], *, caching: bool) -> list[dict[str, Any]]:
    """What a client without a cache sends: the whole history mapped afresh."""
    wire = to_openai_messages(messages)
    if caching:
        add_cache_breakpoints(wire, None)
    return wire


def _call(messages: list[ChatMessage]) -> FunctionCallContent:
    call = messages[2].contents[1]
    assert isinstance(call, FunctionCallContent)
    return call


def _result(messages: list[ChatMessage]) -> FunctionResultContent:
    result = messages[3].contents[0]
    assert isinstance(result, FunctionResultContent)
    return result


def _set_text(m: list[ChatMessage]) -> None:
    text = m[1].contents[0]
    assert isinstance(text, TextContent)
    text.text = "Weather in Bergen?"


def _replace_message(m: list[ChatMessage]) -> None:
    m[1] = ChatMessage.from_text(ChatRole.USER, "Weather in Tromsø?")


def _set_contents(m: list[ChatMessage]) -> None:
    m[2].contents = [TextContent(text="No call after all.")]


def _imul_contents(m: list[ChatMessage]) -> None:
    contents = m[2].contents
    contents *= 2


#: In-place changes a caller may make to a history already sent, each named.
EDITS: dict[str, Callable[[list[ChatMessage]], None]] = {
    "text assigned": _set_text,
    "role assigned": lambda m: setattr(m[1], "role", ChatRole.SYSTEM),
    "contents assigned": _set_contents,
    "content appended": lambda m: m[1].contents.append(TextContent(text=" Now.")),
    "content replaced": lambda m: m[2].contents.__setitem__(0, TextContent(text="Looking.")),
    "content deleted": lambda m: m[2].contents.__delitem__(0),
    "contents cleared": lambda m: m[2].contents.clear(),
    "contents extended": lambda m: m[4].contents.extend([TextContent(text=" Thanks.")]),
    "content inserted": lambda m: m[4].contents.insert(0, TextContent(text="Also: ")),
    "content popped": lambda m: m[2].contents.pop(),
    "content removed": lambda m: m[2].contents.remove(m[2].contents[0]),
    "contents multiplied": _imul_contents,
    "arguments key set": lambda m: _call(m).arguments.__setitem__("city", "Bergen"),
    "nested argument list changed": lambda m: _call(m).arguments["days"].append(3),
    "arguments assigned": lambda m: setattr(_call(m), "arguments", {"city": "Bodø"}),
    "call name assigned": lambda m: setattr(_call(m), "name", "forecast"),
    "result assigned": lambda m: setattr(_result(m), "result", "Oslo: snow"),
    "message replaced": _replace_message,
    "message removed": lambda m: m.__delitem__(2),
    "message inserted": lambda m: m.insert(1, ChatMessage.from_text(ChatRole.USER, "Hi.")),
    "history truncated": lambda m: m.__delitem__(slice(1, 4)),
    "last message removed": lambda m: m.pop(),
}


@pytest.mark.parametrize("caching", [True, False], ids=["anthropic-caching", "no-caching"])
@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_an_edited_history_is_mapped_afresh(edit: str, caching: bool) -> None:
    model = MODELS["anthropic"] if caching else MODELS["openai"]
    client = LiteLLMChatClient(model, api_key=DUMMY_KEY)
    messages = history()
    before = naive(messages, caching=caching)
    assert client.build_request(messages)["messages"] == before
    # A second request first (so the conversation is kept and reused), then the edit.
    messages.append(ChatMessage.from_text(ChatRole.USER, "Please."))
    assert client.build_request(messages)["messages"] == naive(messages, caching=caching)

    unedited = copy.deepcopy(messages)
    EDITS[edit](messages)
    expected = naive(messages, caching=caching)
    assert expected != naive(unedited, caching=caching)  # the edit shows on the wire
    assert client.build_request(messages)["messages"] == expected
    # ... and stays right as the conversation goes on after the edit.
    messages.append(ChatMessage.from_text(ChatRole.USER, "Once more."))
    assert client.build_request(messages)["messages"] == naive(messages, caching=caching)


def test_each_message_is_mapped_once_as_the_conversation_grows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mapped: list[ChatMessage] = []
    real = litellm_provider.message_to_openai

    def counting(index: int, message: ChatMessage) -> list[dict[str, Any]]:
        mapped.append(message)
        return real(index, message)

    monkeypatch.setattr(litellm_provider, "message_to_openai", counting)
    client = LiteLLMChatClient(MODELS["anthropic"], api_key=DUMMY_KEY)
    messages = history()
    for round_ in range(40):
        call = FunctionCallContent(call_id=f"c{round_}", name="weather", arguments={"n": round_})
        messages.append(ChatMessage(role=ChatRole.ASSISTANT, contents=[call]))
        result = FunctionResultContent(call_id=f"c{round_}", result=f"r{round_}")
        messages.append(ChatMessage(role=ChatRole.TOOL, contents=[result]))
        assert client.build_request(messages)["messages"] == naive(messages, caching=True)
    # Every message mapped exactly once over 40 requests (a cache-free client maps ~1,800).
    assert [id(m) for m in mapped] == [id(m) for m in messages]

    # A call's arguments changed in place: the stamp moved, every message is mapped again once.
    mapped.clear()
    target = messages[5 + 2 * 30]
    changed = target.contents[0]
    assert isinstance(changed, FunctionCallContent)
    changed.arguments["n"] = "changed"
    assert client.build_request(messages)["messages"] == naive(messages, caching=True)
    assert [id(m) for m in mapped] == [id(m) for m in messages]
    # ... and the next request maps only what is new again.
    mapped.clear()
    messages.append(ChatMessage.from_text(ChatRole.USER, "next"))
    assert client.build_request(messages)["messages"] == naive(messages, caching=True)
    assert [id(m) for m in mapped] == [id(messages[-1])]


def test_two_conversations_on_one_client_do_not_mix() -> None:
    client = LiteLLMChatClient(MODELS["openai"], api_key=DUMMY_KEY)
    first, second = history(), history()
    _set_text(second)
    for extra in range(3):
        for messages in (first, second):
            messages.append(ChatMessage.from_text(ChatRole.USER, f"more {extra}"))
            assert client.build_request(messages)["messages"] == naive(messages, caching=False)
    # A fork: the first conversation's first three messages and a new ending.
    fork = [*first[:3], ChatMessage.from_text(ChatRole.USER, "fork")]
    assert client.build_request(fork)["messages"] == naive(fork, caching=False)
    assert client.build_request(first)["messages"] == naive(first, caching=False)


def test_a_request_never_changes_the_kept_wire_messages() -> None:
    """The cache breakpoints go on copies: the next request's earlier turns carry none."""
    client = LiteLLMChatClient(MODELS["anthropic"], api_key=DUMMY_KEY)
    messages = history()
    request = client.build_request(messages)
    request["messages"].append({"role": "user", "content": "appended by a caller"})
    messages.append(ChatMessage.from_text(ChatRole.USER, "next"))
    sent = client.build_request(messages)["messages"]
    assert sent == naive(messages, caching=True)
    marked = [i for i, m in enumerate(sent) if "cache_control" in str(m)]
    assert marked == [0, len(sent) - 1]


# --- over real HTTP, against the fake servers ---------------------------------------------------


@tool
def weather(city: Annotated[str, "City name"], days: list[int]) -> str:
    """The weather for a city."""
    return f"{city}: rain for {len(days)} days"


class _Recorder(DelegatingChatClient):
    """Keeps a deep copy of every history sent down (to replay it through a fresh client)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.sent: list[list[ChatMessage]] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.sent.append(copy.deepcopy(list(messages)))
        return await self.inner.get_response(messages, options)


def _tool_turns(rounds: int) -> list[Turn]:
    turns = [
        Turn.calls(ScriptedToolCall("weather", {"city": f"C{i}", "days": [i]}, f"call_{i}"))
        for i in range(rounds)
    ]
    return [*turns, Turn.reply("done")]


async def test_a_tool_loop_sends_what_a_fresh_client_sends(wire: Wire) -> None:
    """Eight rounds through one client (its cache in use) and each history again through a new
    client (nothing cached) to a second server: the request bodies are identical. litellm gets
    the kept message dicts every round; had it changed one, a later body would differ."""
    wire.server.script(_tool_turns(8))
    recorder = _Recorder(wire.client())
    loop = FunctionInvokingChatClient(recorder)
    first = ChatMessage.from_text(ChatRole.USER, "Weather please.")
    system = ChatMessage.from_text(ChatRole.SYSTEM, "Be brief.")
    options = ChatOptions(tools=[weather])
    response = await loop.get_response([system, first], options)
    assert response.text == "done"
    assert len(recorder.sent) == 9

    with FakeLLMServer(wire.format) as fresh_server:
        fresh_server.script(_tool_turns(8))
        for sent in recorder.sent:
            fresh = LiteLLMChatClient(wire.model, api_base=fresh_server.api_base, api_key=DUMMY_KEY)
            await fresh.get_response(sent, options)
        assert wire.server.bodies == fresh_server.bodies
    assert wire.server.bodies[-1] != wire.server.bodies[-2]


async def test_edits_between_requests_reach_the_wire(wire: Wire) -> None:
    client = wire.client()
    messages = history()
    wire.server.enqueue(Turn.reply("one"), Turn.reply("two"), Turn.reply("three"))
    await client.get_response(messages)
    # The caller edits the history it already sent: a nested argument, a text, a removal.
    _call(messages).arguments["city"] = "Bergen"
    _result(messages).result = "Bergen: sun"
    await client.get_response(messages)
    del messages[4]
    messages[1].contents[0] = TextContent(text="Weather in Bergen?")
    await client.get_response(messages)

    with FakeLLMServer(wire.format) as fresh_server:
        fresh_server.enqueue(Turn.reply("one"), Turn.reply("two"), Turn.reply("three"))

        def fresh() -> LiteLLMChatClient:  # a new client per request: nothing cached
            return LiteLLMChatClient(wire.model, api_base=fresh_server.api_base, api_key=DUMMY_KEY)

        replay = history()
        await fresh().get_response(replay)
        _call(replay).arguments["city"] = "Bergen"
        _result(replay).result = "Bergen: sun"
        await fresh().get_response(replay)
        del replay[4]
        replay[1].contents[0] = TextContent(text="Weather in Bergen?")
        await fresh().get_response(replay)
        assert wire.server.bodies == fresh_server.bodies
    first, second, third = wire.server.bodies
    assert "Bergen" not in str(first)
    assert "Bergen" in str(second) and "Bergen: sun" in str(second)
    assert "Weather in Bergen?" in str(third) and "And tomorrow?" not in str(third)


async def test_a_demo_stack_run_maps_each_message_once(
    wire: Wire, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The card runner's chain (an Agent with the run log, a budget and retries over the client)
    changes no message in place: over eight rounds each message is mapped once, not once per
    request (a change in place anywhere would map them all again)."""
    mapped: list[int] = []
    real = litellm_provider.message_to_openai

    def counting(index: int, message: ChatMessage) -> list[dict[str, Any]]:
        mapped.append(id(message))
        return real(index, message)

    monkeypatch.setattr(litellm_provider, "message_to_openai", counting)
    wire.server.script(_tool_turns(8))
    recorder = _Recorder(ChatClientBuilder(wire.client()).use_retries().build())
    with RunLog(tmp_path / "run.jsonl") as log:
        agent = Agent(
            recorder,
            instructions="Be brief.",
            tools=[weather],
            middleware=[lambda inner: RunLogChatClient(inner, log)],
            max_tokens=400_000,
            include_detailed_errors=True,
        )
        result = await agent.run("Weather please.")
    assert result.output == "done"
    assert len(recorder.sent) == 9
    assert len(mapped) == len(recorder.sent[-1])  # the last request's history, each once
    assert len(set(mapped)) == len(mapped)
    rounds = [line for line in (tmp_path / "run.jsonl").read_text().splitlines() if "round" in line]
    assert len(rounds) >= 9


def test_threads_sharing_a_client_each_get_their_own_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads send prefixes of one conversation through one client at once: each request
    holds exactly its own messages (a request of the other thread growing the kept conversation
    between reading it and copying it out would add messages to it)."""
    real_add = litellm_mapping.WireHistory.add

    def slow_add(wire: Any, wires: list[dict[str, Any]]) -> Any:
        time.sleep(0.0005)  # widen the window in which the other thread can run
        return real_add(wire, wires)

    monkeypatch.setattr(litellm_mapping.WireHistory, "add", slow_add)
    client = LiteLLMChatClient(MODELS["anthropic"], api_key=DUMMY_KEY)
    messages = history() + [
        ChatMessage.from_text(ChatRole.USER, f"message {i}") for i in range(120)
    ]
    wrong: list[int] = []

    def send(lengths: range) -> None:
        for n in lengths:
            sent = client.build_request(messages[:n])["messages"]
            if sent != naive(messages[:n], caching=True):
                wrong.append(n)

    threads = [
        threading.Thread(target=send, args=(range(2, len(messages), 2),)),
        threading.Thread(target=send, args=(range(3, len(messages), 2),)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
