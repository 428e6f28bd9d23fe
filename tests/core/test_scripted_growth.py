"""ScriptedChatClient's work per request does not grow with the history: each message's
characters are counted once for the usage estimate (and counted again when edited), and a
turn's results are looked up from the end of the history. The oracle is the estimate over the
whole history, written out here."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionCallContent,
    FunctionInvokingChatClient,
    FunctionResultContent,
    ScriptDivergedError,
    ScriptedChatClient,
    TextContent,
    tool,
)
from loopkit.providers import scripted


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def expected_input_tokens(messages: Sequence[ChatMessage], options: ChatOptions | None) -> int:
    sent = sum(
        len(getattr(c, "text", "") or getattr(c, "result", "") or "")
        + len(json.dumps(getattr(c, "arguments", {})))
        for m in messages
        for c in m.contents
    )
    for t in options.tools if options else []:
        sent += len(t.name) + len(t.description) + len(json.dumps(t.parameters))
    return max(1, sent // 4)


def turns(rounds: int) -> list[dict[str, object]]:
    return [
        *(
            {"text": f"round {i}", "calls": [{"name": "echo", "arguments": {"text": "x" * i}}]}
            for i in range(rounds)
        ),
        {"text": "RESULT: done"},
    ]


async def test_each_message_is_counted_once_and_the_estimate_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[int] = []
    real = scripted._message_chars

    def counting(index: int, message: ChatMessage) -> int:
        counted.append(id(message))
        return real(index, message)

    monkeypatch.setattr(scripted, "_message_chars", counting)
    model = ScriptedChatClient(turns(30))
    seen: list[tuple[int, int]] = []
    options = ChatOptions(tools=[echo])
    history = [ChatMessage.from_text(ChatRole.USER, "go")]
    for _ in range(31):
        response = await model.get_response(history, options)
        assert response.usage is not None
        seen.append((response.usage.input_tokens, expected_input_tokens(history, options)))
        history.extend(response.messages)
        for c in response.messages[0].function_calls:
            result = FunctionResultContent(call_id=c.call_id, result=str(c.arguments["text"]))
            history.append(ChatMessage(role=ChatRole.TOOL, contents=[result]))
    assert all(got == want for got, want in seen), seen
    assert seen[-1][0] > seen[0][0]
    # Every message counted once over 31 requests (re-reading the history: about 950 counts).
    assert counted == [id(m) for m in history[:-1]]  # the last answer was never sent


async def test_the_estimate_follows_edits_of_the_history() -> None:
    model = ScriptedChatClient([{"text": "a"}, {"text": "b"}, {"text": "c"}])
    history = [
        ChatMessage.from_text(ChatRole.USER, "go"),
        ChatMessage(
            role=ChatRole.ASSISTANT,
            contents=[FunctionCallContent(call_id="c1", name="echo", arguments={"text": "x"})],
        ),
    ]
    first = await model.get_response(history)
    assert first.usage and first.usage.input_tokens == expected_input_tokens(history, None)
    call = history[1].contents[0]
    assert isinstance(call, FunctionCallContent)
    call.arguments["text"] = "y" * 400  # changed in place: no stamp, caught by the copy
    second = await model.get_response(history)
    assert second.usage and second.usage.input_tokens == expected_input_tokens(history, None)
    assert second.usage.input_tokens > first.usage.input_tokens + 90
    history[0].contents[0] = TextContent(text="z" * 800)
    third = await model.get_response(history)
    assert third.usage and third.usage.input_tokens == expected_input_tokens(history, None)
    assert third.usage.input_tokens > second.usage.input_tokens + 190


async def test_a_whole_run_checks_the_latest_result_of_each_call() -> None:
    model = ScriptedChatClient(
        [
            {"calls": [{"name": "echo", "arguments": {"text": "a"}, "expect": {"equals": "a"}}]},
            {"calls": [{"name": "echo", "arguments": {"text": "b"}, "expect": {"equals": "b"}}]},
            {"text": "RESULT: done"},
        ]
    )
    response = await FunctionInvokingChatClient(model).get_response(
        [ChatMessage.from_text(ChatRole.USER, "go")], ChatOptions(tools=[echo])
    )
    assert response.text == "RESULT: done"


async def test_a_later_result_with_the_same_id_is_the_one_checked() -> None:
    model = ScriptedChatClient(
        [
            {"calls": [{"name": "echo", "id": "c1", "expect": {"equals": "good"}}]},
            {"text": "ok"},
        ]
    )
    history = [ChatMessage.from_text(ChatRole.USER, "go")]
    history.extend((await model.get_response(history)).messages)
    for text in ("good", "bad"):  # the latest result of c1 is "bad"
        result = FunctionResultContent(call_id="c1", result=text)
        history.append(ChatMessage(role=ChatRole.TOOL, contents=[result]))
    with pytest.raises(ScriptDivergedError, match="got: 'bad'"):
        await model.get_response(history)
