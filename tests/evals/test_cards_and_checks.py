"""The cards added for the evals and every card's own check scripts, for real (the app under
Xvfb, every tool call real): each check fails on the app as shipped (it tests the card's gap,
not nothing), and the new card the end-to-end eval does not run goes through develop → test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from tests.demo.helpers import CARDS, ROOT, copy_card, demo_env, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

CHECKS = sorted((CARDS / "checks").glob("*/*.json"))


def test_every_develop_card_has_checks_and_they_fail_on_the_app_as_shipped(tmp_path: Path) -> None:
    cards = sorted(p.stem for p in CARDS.glob("*.md"))
    assert sorted({p.parent.name for p in CHECKS}) == cards
    done = subprocess.run(
        [sys.executable, "-m", "loopkit_ui.scripts", "run", "--headless", "--out",
         str(tmp_path / "out"), "--no-gif", "--no-system-log", "--screenshots", "none",
         *map(str, CHECKS)],
        capture_output=True, text=True, timeout=400, check=False, cwd=ROOT,
        env=demo_env(tmp_path),
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    verdicts = re.findall(r"^(PASSED|FAILED|ERROR)\s+(.+?)\s+\(", done.stdout, re.MULTILINE)
    assert len(verdicts) == len(CHECKS), output
    assert all(verdict == "FAILED" for verdict, _ in verdicts), output  # each gap is still open
    assert f"0 of {len(CHECKS)} passed" in done.stdout


def test_the_open_card_goes_through_develop_then_test(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "open-says-when-a-file-is-not-an-invoice")
    run = run_demo(tmp_path, card, "--then", "test", "--round-trips", "1")
    assert run.returncode == 0, run.output
    assert "verified by replay" in run.output
    assert "Pipeline: develop → test passed in round 1" in run.output
    assert Card.load(card).state == CardState.DONE
