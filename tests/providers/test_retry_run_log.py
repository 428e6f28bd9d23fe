"""Retries reach the run log as run events: a run against a fake server that answers 429, then 200.

The whole stack is real: ``RetryingChatClient`` over ``LiteLLMChatClient`` talking HTTP to the
fake server, below an agent (or the card runner) whose run log is a real file. The retry layer
reports each retry with ``current_run().emit("retry", ...)``; the run log writes it as a line of
the run, and every other listener (the demo's progress display) gets the same, redacted, data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import (
    Agent,
    Card,
    CardRunner,
    ChatClientBuilder,
    ChatMessage,
    ChatRole,
    FunctionChatClient,
    ProviderError,
    RunEvent,
    RunLog,
    run_scope,
)
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
from tests.fakes.fake_llm_server import Turn
from tests.providers.conftest import Wire

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

KEY = "Zq7vKp2LmN9xRt4WbY6cHd8FjS3gAe5U"

CARD = """---
title: Say done
state: New
category: Demo
---
Nothing to change; answer with the RESULT line.
"""


def lines(path: Path) -> list[dict[str, Any]]:
    # Every line must be one JSON object: json.loads raises on anything else.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rate_limited_then_done(wire: Wire) -> None:
    wire.server.enqueue(
        Turn.error(429, "rate_limit_error", f"slow down, key {KEY}", headers={"retry-after": "0"}),
        Turn.reply("Nothing to change.\nRESULT: done"),
    )


async def test_a_retry_is_a_run_log_line_of_the_card_run(wire: Wire, tmp_path: Path) -> None:
    rate_limited_then_done(wire)
    card_path = tmp_path / "card.md"
    card_path.write_text(CARD, encoding="utf-8")
    log_path = tmp_path / "run.jsonl"
    with RunLog(log_path) as log:
        outcome = await CardRunner(
            wire.client(api_key=KEY),
            instructions="Do the card.",
            sources=[],
            log=log,
            retry=RetryPolicy(initial_delay=0),
            model_name=wire.model,
        ).run(Card.load(card_path))

    assert outcome.result.status == "done"
    assert len(wire.server.requests) == 2
    events = lines(log_path)
    types = [e["type"] for e in events]
    assert types == ["start", "retry", "round", "result"]
    retry = events[1]["data"]
    assert retry["attempt"] == 1
    assert retry["wait_s"] == 0.0  # the server's Retry-After
    assert retry["status_code"] == 429
    assert retry["round"] == 1
    assert "rate limited" in retry["reason"] and "slow down" in retry["reason"]
    # one run: the retry is a line of it like the others
    assert {e.get("run_id") for e in events} == {events[0]["run_id"]}
    assert events[0]["run_id"]
    assert KEY not in log_path.read_text(encoding="utf-8")


async def test_a_retry_of_an_agent_run_is_an_event_every_listener_sees_redacted(
    openai_wire: Wire, tmp_path: Path
) -> None:
    """No card runner: the retry layer itself reports the retry to the run it serves."""
    rate_limited_then_done(openai_wire)
    log_path = tmp_path / "run.jsonl"
    shown: list[dict[str, Any]] = []  # what a progress display would draw
    hooked: list[tuple[int, int | None]] = []
    with RunLog(log_path) as log:
        log.subscribe(shown.append)
        model = (
            ChatClientBuilder(openai_wire.client(api_key=KEY))
            .use_run_log(log)
            .use_retries(
                RetryPolicy(initial_delay=0),
                on_retry=lambda attempt, error, _: hooked.append((attempt, error.status_code)),
            )
        )
        result = await Agent(model, name="retrier").run("hi")

    assert result.text.endswith("RESULT: done")
    assert hooked == [(1, 429)]  # the hook still hears about it
    (line,) = [e for e in lines(log_path) if e["type"] == "retry"]
    assert line["run_id"] == result.run_id
    assert line["data"]["attempt"] == 1 and line["data"]["status_code"] == 429
    assert line["data"]["wait_s"] == 0.0 and line["data"]["round"] == 1
    (event,) = [e for e in shown if e["type"] == "retry"]
    assert "slow down" in event["data"]["reason"]
    assert KEY not in json.dumps(shown)  # no listener sees the key, not only the file


def overloaded_once(message: str) -> FunctionChatClient:
    """A model that fails once with a retryable 529 saying ``message``, then answers."""
    failures = [ProviderError(message, retryable=True, status_code=529)]

    def reply(messages: object, options: object) -> str:
        if failures:
            raise failures.pop()
        return "ok"

    return FunctionChatClient(reply)


async def no_wait(_: float) -> None:
    return None


async def test_the_retry_event_is_redacted_at_the_source() -> None:
    """A provider error quoting a credential (here one the client did not redact itself): the
    event's reason, as every listener gets it, has it replaced."""
    secret = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7"
    events: list[RunEvent] = []
    hooked: list[str] = []
    client = RetryingChatClient(
        overloaded_once(f"overloaded (HTTP 529), key {secret}"),
        RetryPolicy(initial_delay=0),
        sleep=no_wait,
        on_retry=lambda attempt, error, delay: hooked.append(str(error)),
    )
    with run_scope(name="r") as run:
        run.subscribe(events.append)
        response = await client.get_response([ChatMessage.from_text(ChatRole.USER, "hi")])
    assert response.text == "ok"
    (event,) = events
    assert event.type == "retry" and event.run_id == run.run_id
    assert event.data["attempt"] == 1 and event.data["status_code"] == 529
    assert event.data["reason"].startswith("overloaded (HTTP 529), key ")
    assert secret not in event.data["reason"]
    assert secret in hooked[0]  # the hook gets the error itself, as before


async def test_a_retry_outside_any_run_only_calls_the_hook() -> None:
    """A bare retrying client with no run around it: nothing to emit to, the hook still runs."""
    hooked: list[int] = []
    client = RetryingChatClient(
        overloaded_once("overloaded"),
        RetryPolicy(initial_delay=0),
        sleep=no_wait,
        on_retry=lambda attempt, error, delay: hooked.append(attempt),
    )
    response = await client.get_response([ChatMessage.from_text(ChatRole.USER, "hi")])
    assert response.text == "ok" and hooked == [1]
