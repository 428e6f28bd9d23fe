"""A whole card run through litellm's real HTTP path: a fake Anthropic (or OpenAI) server on
127.0.0.1 plays the model's side of the bundled transcript; the test then checks every tool result
litellm sent back against what the transcript expects, exactly as the scripted model would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, CardState, FunctionResultContent, Script
from loopkit.demo.run import bundled_transcripts
from tests.fakes.fake_llm_server import FakeLLMServer, ScriptedToolCall, ScriptedUsage, Turn

from .helpers import copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "delete-asks-for-confirmation"
KEY = "sk-test-0123456789abcdefghij"  # a dummy; it must never appear in the log or the output


def fake_turns(script: Script) -> list[Turn]:
    turns = []
    for n, t in enumerate(script.turns, start=1):
        # Grow the prompt as a real run does; from round 2 on most of it is a cache read.
        usage = ScriptedUsage(
            input_tokens=400,
            output_tokens=50,
            cache_read_input_tokens=0 if n == 1 else 3000 + 500 * n,
            cache_creation_input_tokens=3000 if n == 1 else 500,
        )
        calls = tuple(
            ScriptedToolCall(c.name, c.arguments, c.id or f"call_{n}_{i}")
            for i, c in enumerate(t.calls, start=1)
        )
        turns.append(Turn(text=t.text or None, tool_calls=calls, usage=usage))
    return turns


def tool_results(body: dict[str, Any], wire: str) -> dict[str, str]:
    """call id -> result text, as litellm put them on the wire."""
    out: dict[str, str] = {}
    for message in body["messages"]:
        if wire == "openai" and message["role"] == "tool":
            out[message["tool_call_id"]] = message["content"]
        if wire == "anthropic" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    if isinstance(content, list):
                        content = "".join(b.get("text", "") for b in content)
                    out[block["tool_use_id"]] = content
    return out


@pytest.mark.parametrize(
    ("wire", "model", "key_variable"),
    [
        ("anthropic", "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai", "openai/gpt-5", "OPENAI_API_KEY"),
    ],
)
def test_card_run_through_litellm_against_a_fake_provider(
    tmp_path: Path, wire: str, model: str, key_variable: str
) -> None:
    script = Script.load(bundled_transcripts()[CARD])
    card = copy_card(tmp_path, CARD)
    with FakeLLMServer(wire) as server:  # type: ignore[arg-type]
        server.script(fake_turns(script))
        run = run_demo(
            tmp_path,
            card,
            "--model",
            model,
            env={"LOOPKIT_API_BASE": server.api_base, key_variable: KEY},
        )
        requests = [r for r in server.requests if r.method == "POST"]
    assert run.returncode == 0, run.output
    assert f"Model: {model}" in run.output.splitlines()[0]
    assert Card.load(card).state is CardState.DONE
    assert len(requests) == len(script.turns)

    # Every tool result that went over the wire matches the transcript's expectation.
    for n, turn in enumerate(script.turns[:-1], start=1):
        results = tool_results(requests[n].body, wire)
        for i, call in enumerate(turn.calls, start=1):
            got = results[call.id or f"call_{n}_{i}"]
            assert call.expect is not None
            problems = call.expect.problems(FunctionResultContent(call_id="x", result=got))
            assert problems == [], f"turn {n} {call.name}: {problems}: {got[:300]}"

    first = requests[0].body
    assert "temperature" not in first  # sampling parameters only when set
    # litellm sends OpenAI's reasoning models max_completion_tokens instead of max_tokens
    assert first.get("max_tokens", first.get("max_completion_tokens")) == 4096
    if wire == "anthropic":
        # prompt caching: breakpoints on the system prompt, the last tool and the latest turn
        assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert json.dumps(requests[5].body["messages"][-1]).count("cache_control") >= 1
    else:
        assert "cache_control" not in json.dumps(first)

    rounds = [e["data"] for e in run.events() if e["type"] == "round"]
    assert len(rounds) == len(script.turns)
    assert rounds[1]["cached_input_tokens"] == 4000
    totals = run.events()[-1]["data"]["totals"]
    assert totals["cached_input_tokens"] == sum(r["cached_input_tokens"] for r in rounds) > 0
    # the key never reaches the log, the output or the request records
    assert KEY not in run.log_path().read_text() and KEY not in run.output
    assert all(KEY not in json.dumps(r.headers) for r in requests)
