"""TranscriptRecorder: a run recorded once (through litellm against a fake provider) replays with
the scripted model, strictly, without the provider; a changed tool result is caught on replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import Agent, ScriptedChatClient, TranscriptRecorder, tool
from loopkit.errors import ScriptDivergedError
from tests.fakes.fake_llm_server import FakeLLMServer, Turn
from tests.fakes.llm_script import ScriptedToolCall, ScriptedUsage

DUMMY_KEY = "sk-loopkit-test-0123456789abcdef"
STOCK = {"apples": 3, "pears": 0}


def _tools(stock: dict[str, int]) -> list[Any]:
    @tool
    def count(item: str) -> str:
        """How many of an item are in stock."""
        if item not in stock:
            raise ValueError(f"no such item: {item}")
        return f"{item}: {stock[item]}\n(counted just now)"

    return [count]


def _provider_turns() -> list[Turn]:
    return [
        Turn.calls(
            ScriptedToolCall("count", {"item": "apples"}),
            ScriptedToolCall("count", {"item": "plums"}),
            text="Let me count.",
            usage=ScriptedUsage(input_tokens=120, output_tokens=30),
        ),
        Turn.reply("3 apples; plums are not stocked.", usage=ScriptedUsage(140, 12)),
    ]


async def _record(tmp_path: Path, expect: Any) -> tuple[Path, str, FakeLLMServer]:
    from loopkit.providers.litellm import LiteLLMChatClient

    with FakeLLMServer.anthropic() as server:
        server.script(_provider_turns())
        model = LiteLLMChatClient(
            "anthropic/claude-sonnet-4-5", api_base=server.api_base, api_key=DUMMY_KEY
        )
        recorder = TranscriptRecorder(model, expect=expect, description="stock check")
        result = await Agent(recorder, tools=_tools(STOCK)).run("Apples and plums?")
        path = recorder.save(tmp_path / "stock.json")
    return path, result.output, server


@pytest.mark.integration
async def test_a_recorded_run_replays_strictly_without_the_provider(tmp_path: Path) -> None:
    path, output, server = await _record(tmp_path, "first_line")
    assert len(server.requests) == 2  # the provider answered the recording
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["description"] == "stock check"
    first = saved["turns"][0]
    assert first["text"] == "Let me count."
    assert [c["arguments"] for c in first["calls"]] == [{"item": "apples"}, {"item": "plums"}]
    assert first["calls"][0]["expect"] == {"error": False, "contains": ["apples: 3"]}
    assert first["calls"][1]["expect"]["error"] is True
    assert first["usage"]["input_tokens"] == 120  # replay reports what the provider billed

    replayed = await Agent(ScriptedChatClient(path), tools=_tools(STOCK)).run("Apples and plums?")
    assert replayed.output == output == "3 apples; plums are not stocked."
    assert replayed.usage.input_tokens == 120 + 140


@pytest.mark.integration
async def test_a_changed_tool_result_is_caught_on_replay(tmp_path: Path) -> None:
    path, _, _ = await _record(tmp_path, "first_line")
    changed = {"apples": 2, "pears": 0}
    with pytest.raises(ScriptDivergedError, match="expected it to contain 'apples: 3'"):
        await Agent(ScriptedChatClient(path), tools=_tools(changed)).run("Apples and plums?")


@pytest.mark.integration
async def test_expect_error_records_only_success_or_failure(tmp_path: Path) -> None:
    path, _, _ = await _record(tmp_path, "error")
    calls = json.loads(path.read_text(encoding="utf-8"))["turns"][0]["calls"]
    assert [c["expect"] for c in calls] == [{"error": False}, {"error": True}]
    changed = {"apples": 2, "pears": 0}  # a different count still succeeds: accepted
    replayed = await Agent(ScriptedChatClient(path), tools=_tools(changed)).run("Apples?")
    assert replayed.output == "3 apples; plums are not stocked."


async def test_a_secret_in_a_result_is_not_recorded(tmp_path: Path) -> None:
    secret = "sk-ant-api03-" + "x" * 40

    @tool
    def leak() -> str:
        """Prints a key."""
        return f"key={secret}"

    model = ScriptedChatClient([{"calls": [{"name": "leak"}]}, {"text": "done"}])
    recorder = TranscriptRecorder(model, expect="first_line")
    await Agent(recorder, tools=[leak]).run("go")
    text = recorder.save(tmp_path / "t.json").read_text(encoding="utf-8")
    assert secret not in text
    assert json.loads(text)["turns"][0]["calls"][0]["expect"] == {"error": False}


async def test_streamed_runs_are_recorded_too(tmp_path: Path) -> None:
    model = ScriptedChatClient(
        [{"calls": [{"name": "count", "arguments": {"item": "pears"}}]}, {"text": "none"}]
    )
    recorder = TranscriptRecorder(model, expect="first_line")
    async for _ in Agent(recorder, tools=_tools(STOCK)).run_stream("Pears?"):
        pass
    script = recorder.script
    assert [t.text for t in script.turns] == ["", "none"]
    expect = script.turns[0].calls[0].expect
    assert expect is not None and expect.contains == ["pears: 0"]


def test_bad_settings_are_named() -> None:
    model = ScriptedChatClient([{"text": "x"}])
    with pytest.raises(ValueError, match="expect must be 'error', 'first_line' or 'nothing'"):
        TranscriptRecorder(model, expect="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="snippet_chars must be at least 1"):
        TranscriptRecorder(model, snippet_chars=0)
