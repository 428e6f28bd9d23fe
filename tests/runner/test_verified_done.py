"""Verified done, in the card runner: evidence per criterion is checked by the runner, an
unverified RESULT: done is answered once and then fails, the replay decides last.

The model is the scripted one (its turns below); the tools are a small app in Python whose
``ui_get_text`` reads what the last *built* code shows, so a check made before a build or an
edit really shows something else than the code as it is. The ledger, the loop, the run log and
the card file are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, CardState, RunLog, Script, ScriptedChatClient, ToolError, tool
from loopkit.cards import CardRunner
from loopkit.cards.criteria import parse_criteria
from loopkit.cards.evidence import EvidencePolicy, ToolRecord
from loopkit.cards.verification import ReplayOutcome, Verification

CARD = """---
title: The total subtracts the discount
state: New
---
**Acceptance criteria**

- With a discount of 10 the total reads 225.00.
- With a discount of 0 the total reads 250.00.
- (manual) The new code has a docstring.
"""


class TinyApp:
    """An app whose labels show what its last successful build compiled."""

    def __init__(self) -> None:
        self.source = "total = subtotal"
        self.built: str | None = None
        self.running: str | None = None
        self.discount = 0
        self.commits: list[str] = []

        @tool
        def edit_file(path: str, old: str, new: str) -> str:
            """Edit the code."""
            if old not in self.source:
                raise ToolError(f"old does not occur in {path}")
            self.source = self.source.replace(old, new)
            return f"Edited {path}"

        @tool
        def build_app() -> str:
            """Build the app."""
            if "oops" in self.source:
                return "Build failed with exit code 1."
            self.built = self.source
            return "Build succeeded."

        @tool
        def start_app() -> str:
            """Start the app."""
            self.running = self.built or "total = subtotal"
            return "The app is running"

        @tool
        def ui_type_text(target: str, text: str) -> str:
            """Type into a field."""
            self.discount = int(text)
            return json.dumps({"success": True})

        @tool
        def ui_get_text(target: str) -> str:
            """Read a label."""
            total = 250 - (25 * self.discount // 10 if "discount" in (self.running or "") else 0)
            return json.dumps({"text": f"Total: {total:.2f}"})

        @tool
        def git_commit(message: str) -> str:
            """Commit."""
            self.commits.append(message)
            return "Committed abc with 1 file(s)"

        self.tools: list[Any] = [edit_file, build_app, start_app, ui_type_text, ui_get_text]
        self.tools.append(git_commit)

    async def __aenter__(self) -> TinyApp:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class FakeReplayer:
    """Stands in for the UI script runner (tests/demo replays for real): answers a verdict and
    keeps what it was given."""

    def __init__(self, passed: bool) -> None:
        self.passed = passed
        self.given: tuple[list[ToolRecord], dict[str, list[str]]] | None = None

    async def replay(
        self, session: Sequence[ToolRecord], evidence: dict[str, list[str]]
    ) -> ReplayOutcome:
        self.given = (list(session), evidence)
        if self.passed:
            return ReplayOutcome(passed=True, script="s.json", steps=4, criteria=["C1", "C2"])
        failure = "step 2 (C1): assert TotalLabel equals 'Total: 225.00': it reads 'Total: 250.00'"
        return ReplayOutcome(passed=False, script="s.json", steps=4, failures=[failure])


def call(name: str, call_id: str, expect: dict[str, Any] | None = None, **args: Any) -> dict:
    c: dict[str, Any] = {"name": name, "arguments": args, "id": call_id}
    if expect is not None:
        c["expect"] = expect
    return c


FIX = call(
    "edit_file",
    "edit",
    {"error": False},
    path="app/model.py",
    old="subtotal",
    new="subtotal - discount",
)
BUILD = call("build_app", "build", {"contains": "Build succeeded"})
START = call("start_app", "start")


def checks(prefix: str = "") -> list[dict[str, Any]]:
    return [
        {"calls": [call("ui_type_text", f"{prefix}type10", target="DiscountInput", text="10")]},
        {
            "calls": [
                call("ui_get_text", f"{prefix}c1", {"contains": "225.00"}, target="TotalLabel")
            ]
        },
        {"calls": [call("ui_type_text", f"{prefix}type0", target="DiscountInput", text="0")]},
        {
            "calls": [
                call("ui_get_text", f"{prefix}c2", {"contains": "250.00"}, target="TotalLabel")
            ]
        },
    ]


def evidence(criterion: str, *ids: str, expect: dict[str, Any] | None = None) -> dict[str, Any]:
    e = expect if expect is not None else {"error": False, "contains": "evidence recorded"}
    return {
        "calls": [
            call("record_evidence", f"ev-{criterion}", e, criterion=criterion, calls=list(ids))
        ]
    }


COMMIT = {"calls": [call("git_commit", "commit", message="card: fix")]}
DONE = {"text": "Fixed and checked.\nRESULT: done"}


def run_card(
    tmp_path: Path, turns: list[dict[str, Any]], replayer: FakeReplayer | None = None
) -> tuple[Any, list[dict[str, Any]], Path]:
    import asyncio

    card_path = tmp_path / "card.md"
    card_path.write_text(CARD, encoding="utf-8")
    card = Card.load(card_path)
    verification = Verification(card.criteria, policy=EvidencePolicy(), replayer=replayer)
    log_path = tmp_path / "run.jsonl"
    with RunLog(log_path) as log:
        runner = CardRunner(
            ScriptedChatClient(Script.model_validate({"turns": turns})),
            instructions="Do the card.",
            sources=[TinyApp()],
            log=log,
            verification=verification,
        )
        outcome = asyncio.run(runner.run(card))
    events = [json.loads(line) for line in log_path.read_text().splitlines()]
    return outcome, events, card_path


def test_the_criteria_have_ids_and_a_manual_one_is_marked() -> None:
    criteria = parse_criteria(Card.parse(CARD).body)
    assert [(c.id, c.manual) for c in criteria] == [("C1", False), ("C2", False), ("C3", True)]
    assert criteria[2].text == "The new code has a docstring."
    assert Card.parse(CARD).acceptance_criteria[2] == "The new code has a docstring."


def test_the_prompt_shows_the_criteria_by_id(tmp_path: Path) -> None:
    outcome, _, _ = run_card(tmp_path, [{"text": "RESULT: failed: not today"}])
    prompt = outcome.run.new_messages[0].text
    assert "C1: With a discount of 10 the total reads 225.00." in prompt
    assert "C3 (manual: not checked in the app; reported as unverified): The new code" in prompt


def test_a_good_run_is_done_with_every_criterion_verified(tmp_path: Path) -> None:
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), evidence("C2", "c2"), COMMIT, DONE]
    replayer = FakeReplayer(passed=True)
    outcome, events, card = run_card(tmp_path, turns, replayer)
    assert outcome.result.done, outcome.result
    assert Card.load(card).state is CardState.DONE
    result = events[-1]["data"]
    assert result["status"] == "done" and result["verified_by_replay"] is True
    assert [(c["id"], c["status"]) for c in result["criteria"]] == [
        ("C1", "verified"), ("C2", "verified"), ("C3", "unverified"),
    ]  # fmt: skip
    verified = [e["data"] for e in events if e["type"] == "verification"]
    assert len(verified) == 1 and verified[0]["line"].startswith("verified by replay: 4 steps")
    # The replayer got the live session since the start on the built code, and the evidence.
    assert replayer.given is not None
    session, cited = replayer.given
    assert [r.call_id for r in session][:2] == ["start", "type10"]
    assert cited == {"C1": ["c1"], "C2": ["c2"]}
    assert "unverified (manual): C3" in outcome.verification.summary()


def test_a_skipped_criterion_is_answered_once_then_the_run_fails(tmp_path: Path) -> None:
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), COMMIT, DONE, DONE]
    outcome, events, card = run_card(tmp_path, turns, FakeReplayer(passed=True))
    assert not outcome.result.done
    assert outcome.result.reason == "criterion C2 not verified"
    assert Card.load(card).state is CardState.FAILED
    asked = [e["data"] for e in events if e["type"] == "verification"]
    assert len(asked) == 1 and asked[0]["status"] == "not verified"
    feedback = asked[0]["feedback"]
    assert "C2 was never checked after your last edit to app/model.py" in feedback
    # The model read it as the runner's message, between its two answers.
    messages = outcome.run.new_messages
    assert messages[-2].role.value == "user" and messages[-2].text == feedback
    assert events[-1]["data"]["reason"] == "criterion C2 not verified"


def test_after_the_answer_the_model_can_still_check_and_be_done(tmp_path: Path) -> None:
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), COMMIT, DONE, evidence("C2", "c2"), DONE]
    outcome, events, _ = run_card(tmp_path, turns)
    assert outcome.result.done, outcome.result
    # The answer and the turns after it are one run: its rounds, its log.
    assert outcome.run.rounds == len(turns) and outcome.totals["rounds"] == len(turns)
    assert [c["status"] for c in events[-1]["data"]["criteria"]][:2] == ["verified", "verified"]


def test_a_check_before_the_last_edit_does_not_count(tmp_path: Path) -> None:
    comment = call(
        "edit_file", "edit2", {"error": False}, path="app/model.py", old="total", new="total "
    )
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), evidence("C2", "c2"), {"calls": [comment]}, {"calls": [BUILD]}]
    turns += [COMMIT, DONE, DONE]
    outcome, events, _ = run_card(tmp_path, turns)
    assert outcome.result.reason == "criteria C1, C2 not verified"
    feedback = next(e["data"]["feedback"] for e in events if e["type"] == "verification")
    assert (
        "- C1 was never checked after your last edit to app/model.py: its evidence (c1) was made "
        "before your last edit to app/model.py"
    ) in feedback.splitlines()


def test_record_evidence_refuses_what_is_no_evidence(tmp_path: Path) -> None:
    def refused(n: int, criterion: str, given: str, *text: str) -> dict[str, Any]:
        expect = {"error": True, "contains": list(text)}
        return call("record_evidence", f"r{n}", expect, criterion=criterion, calls=[given])

    turns = [{"calls": [START]}, {"calls": [call("ui_get_text", "early", target="TotalLabel")]}]
    turns += [{"calls": [FIX]}, {"calls": [BUILD]}]
    turns += [
        {
            "calls": [
                refused(1, "C9", "early", "not a criterion of this card (ids: C1, C2, C3)"),
                refused(2, "C3", "early", "C3 is marked (manual)"),
                refused(3, "C1", "nope", "'nope' is not the id of a tool call"),
                refused(4, "C1", "build", "is not a check in the running app"),
                refused(5, "C1", "early", "made before your last edit to app/model.py"),
            ]
        },
        {"calls": [START]},
        {"calls": [refused(6, "C1", "last", "does not count: made before your last edit")]},
        {"text": "RESULT: failed: gave up"},
    ]
    outcome, _, _ = run_card(tmp_path, turns)
    assert outcome.result.reason == "gave up"


def test_a_change_that_was_never_committed_is_not_done(tmp_path: Path) -> None:
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), evidence("C2", "last"), DONE, DONE]
    outcome, _, _ = run_card(tmp_path, turns)
    assert outcome.result.reason == "your last edit to app/model.py was never committed"


def test_a_replay_that_fails_ends_the_run_failed(tmp_path: Path) -> None:
    turns = [{"calls": [FIX]}, {"calls": [BUILD]}, {"calls": [START]}, *checks()]
    turns += [evidence("C1", "c1"), evidence("C2", "c2"), COMMIT, DONE]
    outcome, events, card = run_card(tmp_path, turns, FakeReplayer(passed=False))
    assert not outcome.result.done
    assert outcome.result.reason.startswith("the regression script failed on replay: step 2 (C1)")
    assert Card.load(card).state is CardState.FAILED
    assert events[-1]["data"]["verified_by_replay"] is False


@pytest.mark.parametrize("answer", ["RESULT: failed: cannot do it", "no result line"])
def test_a_run_that_does_not_claim_done_is_not_checked(tmp_path: Path, answer: str) -> None:
    outcome, events, _ = run_card(tmp_path, [{"text": answer}], FakeReplayer(passed=True))
    assert not outcome.result.done
    assert not [e for e in events if e["type"] == "verification"]
