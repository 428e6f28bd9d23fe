"""The whole loop: scripted model + function tools + a real MCP server → RESULT → card state."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loopkit import (
    Card,
    CardState,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    DelegatingChatClient,
    RunLog,
    Script,
    ScriptedChatClient,
    tool,
)
from loopkit.cards import CardRunner, MCPToolSource, RunLimits
from loopkit.mcp import MCPServerConfig
from tests.mcp_client.helpers import SERVER_SCRIPT

CARD = """---
title: Add two numbers
state: New
category: Demo
---
Add 2 and 3 with the MCP server and write the sum down.

**Acceptance criteria**

- The note says 5.
"""

pytestmark = pytest.mark.integration


class FunctionTools:
    """A ToolSource of plain function tools (no set-up needed)."""

    def __init__(self, notes: dict[str, str]) -> None:
        @tool
        def write_note(text: str) -> str:
            """Write the note."""
            notes["note"] = text
            return "written"

        self.tools: list[Any] = [write_note]

    async def __aenter__(self) -> FunctionTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def mcp_source() -> MCPToolSource:
    return MCPToolSource(
        MCPServerConfig(name="calc", command=[sys.executable, str(SERVER_SCRIPT), "stdio"])
    )


def card_file(tmp_path: Path) -> Path:
    p = tmp_path / "card.md"
    p.write_text(CARD, encoding="utf-8")
    return p


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def runner(
    turns: list[dict[str, Any]], log: RunLog, notes: dict[str, str], **limits: int
) -> CardRunner:
    return CardRunner(
        ScriptedChatClient(Script.model_validate({"turns": turns})),
        instructions="Do the card.",
        sources=[FunctionTools(notes), mcp_source()],
        log=log,
        limits=RunLimits(**limits),
        model_name="scripted",
    )


async def test_card_done_with_function_and_mcp_tools(tmp_path: Path) -> None:
    notes: dict[str, str] = {}
    log_path = tmp_path / "run.jsonl"
    turns = [
        {"calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "expect": {"equals": "5"}}]},
        {
            "calls": [
                {"name": "write_note", "arguments": {"text": "5"}, "expect": {"equals": "written"}}
            ]
        },
        {"text": "The note says 5.\nRESULT: done"},
    ]
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, notes).run(Card.load(card_file(tmp_path)))
    assert outcome.result.done
    assert notes == {"note": "5"}
    assert Card.load(tmp_path / "card.md").state is CardState.DONE
    ev = events(log_path)
    assert ev[0]["type"] == "start"
    assert {"add", "echo", "write_note"} <= set(ev[0]["data"]["tools"])
    assert ev[0]["data"]["card"] == "Add two numbers"
    assert [e["type"] for e in ev[1:]] == ["round", "tool", "round", "tool", "round", "result"]
    assert ev[2]["data"]["result"] == "5"  # MCP text result as plain text
    assert ev[-1]["data"]["status"] == "done" and ev[-1]["data"]["card_state"] == "Done"


async def test_result_failed_from_the_model(tmp_path: Path) -> None:
    with RunLog(tmp_path / "run.jsonl") as log:
        outcome = await runner([{"text": "Cannot.\nRESULT: failed: no calculator"}], log, {}).run(
            Card.load(card_file(tmp_path))
        )
    assert (outcome.result.status, outcome.result.reason) == ("failed", "no calculator")
    assert Card.load(tmp_path / "card.md").state is CardState.FAILED


async def test_missing_result_line_fails(tmp_path: Path) -> None:
    with RunLog(tmp_path / "run.jsonl") as log:
        outcome = await runner([{"text": "All good!"}], log, {}).run(Card.load(card_file(tmp_path)))
    assert outcome.result.reason == (
        "the final answer did not end with a RESULT line (last line: 'All good!')"
    )


async def test_round_limit_fails_with_reason_in_log(tmp_path: Path) -> None:
    log_path = tmp_path / "run.jsonl"
    turns = [{"calls": [{"name": "echo", "arguments": {"text": "x"}}]} for _ in range(3)]
    turns.append({"text": "RESULT: done", "expect_no_tools": True})
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, {}, max_rounds=3).run(Card.load(card_file(tmp_path)))
    assert outcome.result.status == "failed"
    assert outcome.result.reason is not None
    assert outcome.result.reason.startswith("round limit of 3 reached")
    last = events(log_path)[-1]
    assert last["type"] == "result" and last["data"]["reason"].startswith("round limit of 3")
    assert last["data"]["totals"]["rounds"] == 4
    assert Card.load(tmp_path / "card.md").state is CardState.FAILED


async def test_token_budget_fails_with_reason_in_log(tmp_path: Path) -> None:
    log_path = tmp_path / "run.jsonl"
    turns = [
        {
            "calls": [{"name": "echo", "arguments": {"text": "x"}}],
            "usage": {"input_tokens": 600, "output_tokens": 10},
        }
        for _ in range(5)
    ]
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, {}, max_tokens=1000).run(Card.load(card_file(tmp_path)))
    assert outcome.result.status == "failed"
    assert "token budget spent: 1,220 of 1,000" in (outcome.result.reason or "")
    last = events(log_path)[-1]
    assert "token budget spent" in last["data"]["reason"]
    assert Card.load(tmp_path / "card.md").state is CardState.FAILED


async def test_server_killed_mid_run_fails_cleanly_with_valid_log(tmp_path: Path) -> None:
    log_path = tmp_path / "run.jsonl"
    turns = [
        {"calls": [{"name": "echo", "arguments": {"text": "before"}}]},
        {"calls": [{"name": "die", "arguments": {}}]},
        {"calls": [{"name": "echo", "arguments": {"text": "after"}}]},
        {"calls": [{"name": "echo", "arguments": {"text": "after"}}]},
        {"calls": [{"name": "echo", "arguments": {"text": "after"}}]},
        {"text": "RESULT: done"},
    ]
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, {}).run(Card.load(card_file(tmp_path)))
    assert outcome.result.status == "failed"
    assert "MCPServerError" in (outcome.result.reason or "")
    rounds = [e for e in events(log_path) if e["type"] == "round"]
    assert len(rounds) == 2  # the run ends at the dead server, not three rounds later
    ev = events(log_path)  # every line parses
    assert ev[-1]["type"] == "result" and ev[-1]["data"]["status"] == "failed"


async def test_mcp_command_that_does_not_exist(tmp_path: Path) -> None:
    bad = MCPToolSource(MCPServerConfig(name="ui", command=["/nonexistent/loopkit-ui-server"]))
    with RunLog(tmp_path / "run.jsonl") as log:
        outcome = await CardRunner(
            ScriptedChatClient(Script.model_validate({"turns": [{"text": "RESULT: done"}]})),
            instructions="x",
            sources=[bad],
            log=log,
        ).run(Card.load(card_file(tmp_path)))
    assert outcome.result.status == "failed"
    assert "/nonexistent/loopkit-ui-server" in (outcome.result.reason or "")
    assert Card.load(tmp_path / "card.md").state is CardState.FAILED


class StateWatchingModel(DelegatingChatClient):
    """The scripted model, noting the card file's state each time it is asked (from inside the
    run, as a model with file access would see it)."""

    def __init__(self, inner: ScriptedChatClient, card_path: Path) -> None:
        super().__init__(inner)
        self.card_path = card_path
        self.seen: list[str] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.seen.append(Card.load(self.card_path).state.value)
        return await self.inner.get_response(messages, options)


@pytest.mark.parametrize(
    ("last", "final_state"),
    [("RESULT: done", CardState.DONE), ("RESULT: failed: cannot", CardState.FAILED)],
)
async def test_the_card_is_in_work_while_the_model_runs(
    tmp_path: Path, last: str, final_state: CardState
) -> None:
    """Seen from inside the run (a tool reading the card file, the model at each request), the
    card is In Work; only the end of the run moves it to Done or Failed."""
    path = card_file(tmp_path)
    assert Card.load(path).state is CardState.NEW

    @tool
    def card_state() -> str:
        """The card file's state, read from disk now."""
        return Card.load(path).state.value

    source = FunctionTools({})
    source.tools = [card_state]
    turns = [
        {"calls": [{"name": "card_state", "arguments": {}, "expect": {"equals": "In Work"}}]},
        {"text": f"Checked.\n{last}"},
    ]
    model = StateWatchingModel(ScriptedChatClient(Script.model_validate({"turns": turns})), path)
    log_path = tmp_path / "run.jsonl"
    with RunLog(log_path) as log:
        outcome = await CardRunner(
            model, instructions="Do the card.", sources=[source], log=log
        ).run(Card.load(path))
    tool_results = [e["data"]["result"] for e in events(log_path) if e["type"] == "tool"]
    assert tool_results == ["In Work"]
    assert model.seen == ["In Work", "In Work"]
    assert outcome.card is not None and outcome.card.state is final_state
    assert Card.load(path).state is final_state
    assert events(log_path)[-1]["data"]["card_state"] == final_state.value


async def test_every_line_of_a_card_run_belongs_to_its_agent_run(tmp_path: Path) -> None:
    """The card run is one agent run: start, rounds, tools and the runner's result line all carry
    its run_id, the start line names the agent, and the run ends with `result`, not `run_end`."""
    log_path = tmp_path / "run.jsonl"
    turns = [
        {"calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "expect": {"equals": "5"}}]},
        {"text": "RESULT: done"},
    ]
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, {}, max_rounds=7).run(Card.load(card_file(tmp_path)))
    ev = events(log_path)
    assert [e["type"] for e in ev] == ["start", "round", "tool", "round", "result"]
    assert outcome.run_id is not None and len(outcome.run_id) == 32
    assert {e.get("run_id") for e in ev} == {outcome.run_id}
    start = ev[0]["data"]
    assert start["agent"] == "card-runner" and start["model"] == "scripted"
    assert start["limits"] == {"max_rounds": 7, "max_tokens": 400_000, "max_output_tokens": 4096}
    assert outcome.run is not None and outcome.run.run_id == outcome.run_id
    assert outcome.run.rounds == 2 and outcome.run.tool_calls == 1
    assert outcome.totals["rounds"] == 2 == ev[-1]["data"]["totals"]["rounds"]


async def test_a_failed_card_run_ends_in_its_run_too(tmp_path: Path) -> None:
    """The token budget ends the agent run with an exception: the error and result lines are
    still lines of that run."""
    log_path = tmp_path / "run.jsonl"
    turns = [
        {
            "calls": [{"name": "echo", "arguments": {"text": "x"}}],
            "usage": {"input_tokens": 900, "output_tokens": 10},
        }
        for _ in range(3)
    ]
    with RunLog(log_path) as log:
        outcome = await runner(turns, log, {}, max_tokens=1000).run(Card.load(card_file(tmp_path)))
    ev = events(log_path)
    types = [e["type"] for e in ev]
    assert types == ["start", "round", "tool", "round", "tool", "error", "result"]
    assert {e.get("run_id") for e in ev} == {outcome.run_id}
    assert outcome.run is None and outcome.result.status == "failed"
    assert "token budget spent" in ev[-1]["data"]["reason"]


async def test_two_card_runs_at_once_on_one_log_keep_their_own_totals(tmp_path: Path) -> None:
    """Two runners write one log concurrently: each run's result line counts only its own
    rounds and tokens (the totals belong to the run, not to the log)."""
    import asyncio

    def card_runner(name: str, rounds: int, log: RunLog) -> tuple[CardRunner, Card]:
        turns: list[dict[str, Any]] = [
            {
                "calls": [{"name": "write_note", "arguments": {"text": name}}],
                "usage": {"input_tokens": 100, "output_tokens": 1},
            }
            for _ in range(rounds)
        ]
        turns.append({"text": "RESULT: done", "usage": {"input_tokens": 100, "output_tokens": 1}})
        folder = tmp_path / name
        folder.mkdir()
        cr = CardRunner(
            ScriptedChatClient(Script.model_validate({"turns": turns})),
            instructions="Do the card.",
            sources=[FunctionTools({})],
            log=log,
            name=name,
        )
        return cr, Card.load(card_file(folder))

    log_path = tmp_path / "run.jsonl"
    with RunLog(log_path) as log:
        one, card_one = card_runner("one", 2, log)
        two, card_two = card_runner("two", 5, log)
        first, second = await asyncio.gather(one.run(card_one), two.run(card_two))
    assert first.result.done and second.result.done
    results = {e["run_id"]: e["data"] for e in events(log_path) if e["type"] == "result"}
    assert results[first.run_id]["totals"]["rounds"] == 3
    assert results[first.run_id]["totals"]["input_tokens"] == 300
    assert results[second.run_id]["totals"]["rounds"] == 6
    assert results[second.run_id]["totals"]["input_tokens"] == 600
    starts = {e["run_id"]: e["data"]["agent"] for e in events(log_path) if e["type"] == "start"}
    assert starts == {first.run_id: "one", second.run_id: "two"}


def test_the_runner_builds_its_agent_from_the_role_the_tools_and_the_limits(
    tmp_path: Path,
) -> None:
    with RunLog(tmp_path / "run.jsonl") as log:
        card_runner = CardRunner(
            ScriptedChatClient(Script.model_validate({"turns": [{"text": "RESULT: done"}]})),
            instructions="Do the card.",
            sources=[],
            log=log,
            limits=RunLimits(max_rounds=5, max_tokens=900, max_output_tokens=77),
            model_name="scripted",
            sampling={"temperature": 0.2},
        )
        agent = card_runner.agent(FunctionTools({}).tools)
    assert agent.instructions == "Do the card." and agent.name == "card-runner"
    assert [t.name for t in agent.tools] == ["write_note"]
    assert agent.limits["max_rounds"] == 5 and agent.limits["max_tokens"] == 900
    assert agent.options.max_output_tokens == 77 and agent.options.model_id == "scripted"
    assert agent.options.temperature == 0.2
    assert agent.pipeline.options.include_detailed_errors  # the model sees why a tool failed
