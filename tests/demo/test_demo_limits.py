"""The round limit and the token budget end a real demo run as Failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import Card, CardState

from .helpers import copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--max-rounds", "3"], "round limit of 3 reached"),
        (["--max-tokens", "3000"], "token budget spent"),
    ],
)
def test_limits_end_the_run_failed(tmp_path: Path, args: list[str], reason: str) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    run = run_demo(tmp_path, card, *args)
    assert run.returncode == 1, run.output
    assert Card.load(card).state is CardState.FAILED
    last = run.events()[-1]
    assert last["type"] == "result" and reason in last["data"]["reason"]
    assert reason in " ".join(run.output.split())
    # the app is stopped and the working tree is consistent: nothing half-written, nothing staged
    assert run.git("status", "--porcelain").strip() == ""
