"""Retries reach the run log: a card run against a fake server that answers 429, then 200.

The whole stack is real: ``CardRunner`` composes function invocation, the run log (a real file),
the token budget and retries over ``LiteLLMChatClient``, which talks HTTP to the fake server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, RunLog
from loopkit.middleware.retry import RetryPolicy
from loopkit.runner import CardRunner
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


async def test_a_retry_is_a_run_log_line(wire: Wire, tmp_path: Path) -> None:
    wire.server.enqueue(
        Turn.error(429, "rate_limit_error", f"slow down, key {KEY}", headers={"retry-after": "0"}),
        Turn.reply("Nothing to change.\nRESULT: done"),
    )
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
    assert KEY not in log_path.read_text(encoding="utf-8")
