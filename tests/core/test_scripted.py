from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionChatClient,
    FunctionInvokingChatClient,
    FunctionResultContent,
    Script,
    ScriptDivergedError,
    ScriptedChatClient,
    ToolMode,
    tool,
)

from .helpers import call, opts, script, user


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


async def test_strict_script_names_round_tool_and_difference() -> None:
    model = script(
        {"calls": [call("echo", {"equals": "hello"}, text="hullo")]},
        {"text": "never"},
    )
    with pytest.raises(ScriptDivergedError) as e:
        await FunctionInvokingChatClient(model).get_response(user(), opts(echo))
    msg = str(e.value)
    assert "turn 2: result of echo (turn 1, call 1)" in msg
    assert "expected exactly 'hello'" in msg and "got: 'hullo'" in msg


async def test_missing_result_is_divergence() -> None:
    model = script({"calls": [call("echo", text="a")]}, {"text": "x"})
    await model.get_response(user())
    with pytest.raises(ScriptDivergedError, match="is missing from the conversation"):
        await model.get_response(user())


async def test_lenient_mode_ignores_results() -> None:
    model = script(
        {"calls": [call("echo", {"equals": "zzz"}, text="a")]}, {"text": "x"}, strict=False
    )
    response = await FunctionInvokingChatClient(model).get_response(user(), opts(echo))
    assert response.text == "x"


async def test_matchers() -> None:
    from loopkit.providers.scripted import ResultMatch

    r = FunctionResultContent(call_id="1", result='{"a": {"b": 1, "c": 2}, "d": "text"}')
    assert (
        ResultMatch.model_validate({"json": {"a": {"b": 1}}, "contains": "text"}).problems(r) == []
    )
    assert ResultMatch.model_validate({"json": {"a": {"b": 2}}}).problems(r) == [
        "JSON at /a/b: expected 2, got 1"
    ]
    assert ResultMatch(regex=r"\"d\": \"t.xt\"").problems(r) == []
    assert ResultMatch(not_contains=["text"]).problems(r) == ["expected it not to contain 'text'"]
    assert ResultMatch(error=True).problems(r) == ["expected error=True, got error=False"]


async def test_script_past_its_end_is_an_error() -> None:
    model = script({"text": "only"})
    await model.get_response(user())
    with pytest.raises(ScriptDivergedError, match="request 2: the script has only 1 turns"):
        await model.get_response(user())


def test_load_json_and_jsonl_and_bad_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"turns": [{"text": "hi"}]}))
    (tmp_path / "b.jsonl").write_text('{"text": "one"}\n\n{"calls": [{"name": "x"}]}\n')
    (tmp_path / "c.json").write_text('{"turns": [{"txt": "typo"}]}')
    assert Script.load(tmp_path / "a.json").turns[0].text == "hi"
    assert Script.load(tmp_path / "b.jsonl").turns[1].calls[0].name == "x"
    with pytest.raises(ValueError, match=r"c.json is not valid.*txt"):
        Script.load(tmp_path / "c.json")
    with pytest.raises(ValueError, match="cannot read model script"):
        Script.load(tmp_path / "missing.json")
    assert isinstance(ScriptedChatClient(tmp_path / "a.json").script, Script)


async def test_function_chat_client_accepts_str_message_and_async() -> None:
    async def reply(messages, options):
        return ChatMessage.from_text(ChatRole.ASSISTANT, f"{len(messages)} messages")

    assert (await FunctionChatClient(reply).get_response(user())).text == "1 messages"
    assert (await FunctionChatClient(lambda m, o: "plain").get_response(user())).text == "plain"
    with pytest.raises(TypeError, match="expected ChatResponse, ChatMessage or str"):
        await FunctionChatClient(lambda m, o: 42).get_response(user())


async def test_turns_can_be_given_as_a_list() -> None:
    from loopkit import ChatMessage, ScriptedChatClient

    client = ScriptedChatClient([{"text": "first"}, {"text": "second"}])
    user = [ChatMessage.from_text("user", "hi")]
    assert (await client.get_response(user)).text == "first"
    assert (await client.get_response(user)).text == "second"


async def test_require_offered_checks_calls_against_the_tools_offered() -> None:
    turns = [{"calls": [{"name": "echo", "arguments": {"text": "x"}}]}]
    model = ScriptedChatClient(turns, require_offered=True)
    with pytest.raises(ScriptDivergedError, match="calls echo, which this request did not offer"):
        await model.get_response(user(), ChatOptions())
    # the loop's last request, tools disabled: what the loop does with calls is its business
    model = ScriptedChatClient(turns, require_offered=True)
    answer = await model.get_response(user(), ChatOptions(tools=[echo], tool_mode=ToolMode.none()))
    assert answer.messages[0].function_calls[0].name == "echo"
    # offered: played as written
    model = ScriptedChatClient(turns, require_offered=True)
    assert (await model.get_response(user(), opts(echo))).messages[0].function_calls
