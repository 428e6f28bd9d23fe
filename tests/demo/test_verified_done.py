"""Verified done, end to end: the demo with the real app, tools, UI server and git, the model
played from transcripts derived here from the discount card's bundled one (so they follow the app).

A run that skips a criterion, one that checks before its last edit, one that commits before
building, one whose checks pass live but fail on the replay: each ends failed with the named
reason. The good runs end done "verified by replay" (tests/demo/test_demo_cards.py runs all four
bundled cards; here the replay's script is looked at too).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, CardState, Script
from loopkit.demo.run import bundled_transcripts

from .helpers import DemoRun, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "total-ignores-the-discount"
DONE = {"text": "Done, every criterion checked.\n\nRESULT: done"}


def bundled() -> list[dict[str, Any]]:
    data = json.loads(bundled_transcripts()[CARD].read_text(encoding="utf-8"))
    return copy.deepcopy(data["turns"])


def index(turns: list[dict[str, Any]], name: str, last: bool = False) -> int:
    found = [i for i, t in enumerate(turns) if any(c["name"] == name for c in t.get("calls", []))]
    return found[-1] if last else found[0]


def play(tmp_path: Path, turns: list[dict[str, Any]], *args: str) -> DemoRun:
    transcript = tmp_path / "transcript.json"
    transcript.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    Script.load(transcript)  # a well-formed transcript: a failure below is the run's
    return run_demo(tmp_path, copy_card(tmp_path, CARD), "--transcript", str(transcript), *args)


def failed_with(run: DemoRun, reason: str) -> dict[str, Any]:
    assert run.returncode == 1, run.output
    assert Card.load(run.card).state is CardState.FAILED
    result = run.events()[-1]
    assert result["type"] == "result" and result["data"]["status"] == "failed"
    assert result["data"]["reason"] == reason, result["data"]["reason"]
    assert f"RESULT: failed: {reason}"[:60] in " ".join(run.output.split())
    data: dict[str, Any] = result["data"]
    return data


def feedback(run: DemoRun) -> str:
    """The runner's one answer to an unverified RESULT: done."""
    asked = [e["data"] for e in run.events() if e["type"] == "verification"]
    assert len(asked) == 1 and asked[0]["status"] == "not verified", asked
    return str(asked[0]["feedback"])


def test_a_run_that_skips_a_criterion_fails_after_one_answer(tmp_path: Path) -> None:
    turns = bundled()
    record = turns[index(turns, "record_evidence")]
    record["calls"] = [c for c in record["calls"] if c["arguments"]["criterion"] != "C3"]
    turns.append(DONE)  # claims done again after the runner's answer
    run = play(tmp_path, turns)
    result = failed_with(run, "criterion C3 not verified")
    assert (
        "- C3 was never checked after your last edit to invoice_app/model.py: no record_evidence "
        "for it"
    ) in feedback(run).splitlines()
    assert [(c["id"], c["status"]) for c in result["criteria"]] == [
        ("C1", "verified"), ("C2", "verified"), ("C3", "missing"),
    ]  # fmt: skip
    assert "not verified: C3" in " ".join(run.output.split())
    # Nothing was replayed: the run never got that far.
    assert "verified_by_replay" not in result


def test_a_run_that_checks_before_its_last_edit_fails(tmp_path: Path) -> None:
    turns = bundled()
    stop = index(turns, "stop_app", last=True)
    edit = next(c for c in turns[index(turns, "edit_file")]["calls"] if c["name"] == "edit_file")
    fixed = edit["arguments"]["new"]
    later = {
        "name": "edit_file",
        "arguments": {
            "path": "invoice_app/model.py",
            "old": fixed,
            "new": fixed.rstrip("\n") + "  # the discount is subtracted\n",
        },
        "expect": {"error": False, "contains": ["Edited invoice_app/model.py"]},
    }
    build = {"name": "build_app", "arguments": {}, "expect": {"contains": ["Build succeeded"]}}
    turns[stop + 1 : stop + 1] = [{"calls": [later]}, {"calls": [build]}]
    turns.append(DONE)
    run = play(tmp_path, turns)
    failed_with(run, "criteria C1, C2, C3 not verified")
    lines = feedback(run).splitlines()
    assert (
        "- C1 was never checked after your last edit to invoice_app/model.py: its evidence "
        "(subtotal-250) was made before your last edit to invoice_app/model.py"
    ) in lines
    # The commit after the build was made: the change is committed, just not checked.
    assert run.git("log", "-1", "--format=%s").startswith("card: ")


def test_a_run_that_commits_before_building_is_refused_and_fails(tmp_path: Path) -> None:
    turns = bundled()
    commit = turns.pop(index(turns, "git_commit"))["calls"][0]
    early = {
        **commit,
        "expect": {"error": True, "contains": ["not committed", "build first"]},
    }
    turns.insert(index(turns, "edit_file") + 1, {"calls": [early]})
    turns.append(DONE)
    run = play(tmp_path, turns)
    reason = failed_with(run, run.events()[-1]["data"]["reason"])["reason"]
    assert reason.startswith(
        "your last edit to invoice_app/model.py was never committed (git_commit was refused: "
        "Error: not committed: the code changed since the last successful build "
        "(invoice_app/model.py); build first"
    ), reason
    assert run.git("rev-list", "--count", "HEAD").strip() == "1"  # nothing was committed


def test_a_fix_that_passes_live_but_not_on_the_replay_fails(tmp_path: Path) -> None:
    # The fix works only with a setting the run's app had (its app_env), never committed: the
    # live checks pass, the replay on a fresh app of the commit does not.
    turns = bundled()
    edit = next(c for c in turns[index(turns, "edit_file")]["calls"] if c["name"] == "edit_file")
    edit["arguments"]["new"] = (
        "        return self.subtotal - (self.discount_amount if "
        '__import__("os").environ.get("INVOICE_APP_TOTAL_FIX") else 0)\n'
    )
    config = tmp_path / "local-setting.toml"
    config.write_text('[tools.app_env]\nINVOICE_APP_TOTAL_FIX = "on"\n', encoding="utf-8")
    run = play(tmp_path, turns, "--config", str(config))
    reason = run.events()[-1]["data"]["reason"]
    result = failed_with(run, reason)
    assert reason == (
        "the regression script failed on replay: step 4 ([C1] assert TotalLabel.text equals "
        "'Total: 225.00'): TotalLabel.text: expected equals 'Total: 225.00', actual "
        "'Total: 250.00'"
    ), reason
    assert result["verified_by_replay"] is False
    replayed = [e["data"] for e in run.events() if e["type"] == "verification"]
    assert [r["status"] for r in replayed] == ["replay failed"]
    # The committed fix is the one that was checked live; the card is Failed all the same.
    assert run.git("rev-list", "--count", "HEAD").strip() == "2"


def test_a_good_run_is_verified_by_replay(tmp_path: Path) -> None:
    run = run_demo(tmp_path, copy_card(tmp_path, CARD))
    assert run.returncode == 0, run.output
    text = " ".join(run.output.split())
    assert "verified verified by replay: 8 steps (C1, C2, C3) passed on a fresh app" in text
    events = run.events()
    line = next(e["data"] for e in events if e["type"] == "verification")
    assert line["status"] == "verified" and line["line"].startswith("verified by replay")
    result = events[-1]["data"]
    assert result["verified_by_replay"] is True
    assert [c["status"] for c in result["criteria"]] == ["verified"] * 3
    # The script the runner replayed: the live session's steps, the evidence named after its
    # criterion, the app started from the committed code.
    script = json.loads(Path(line["script"]).read_text(encoding="utf-8"))
    named = [s["name"] for s in script["steps"] if "name" in s]
    assert named == [
        "[C1] assert SubtotalLabel.text equals 'Subtotal: 250.00'",
        "[C1] assert TotalLabel.text equals 'Total: 225.00'",
        "[C2] assert TotalLabel.text equals 'Total: 250.00'",
        "[C3] type_text DiscountInput '20'",
        "[C3] assert TotalLabel.text equals 'Total: 200.00'",
    ]
    assert script["app"]["cwd"].endswith("/replay/code")


def test_evidence_with_nothing_to_replay_is_said_to_be_checked_live_only(tmp_path: Path) -> None:
    """C3's only evidence is a window list (a live check with no script step): it counts, and
    the summary, the run log's ``verification`` line and the replay's HTML report all say that
    it was checked live only, not replayed."""
    turns = bundled()
    at = index(turns, "record_evidence")
    windows = {
        "name": "ui_list_windows",
        "id": "windows",
        "arguments": {},
        "expect": {"error": False, "contains": ["Invoice Editor"]},
    }
    turns.insert(at, {"calls": [windows]})
    for record in turns[at + 1]["calls"]:
        if record["arguments"]["criterion"] == "C3":
            record["arguments"]["calls"] = ["windows"]
    run = play(tmp_path, turns)
    assert run.returncode == 0, run.output
    text = " ".join(run.output.split())
    assert "verified by replay" in text and "checked live only (nothing to replay): C3" in text
    events = run.events()
    line = next(e["data"] for e in events if e["type"] == "verification")
    assert line["status"] == "verified"
    assert line["criteria"] == ["C1", "C2"] and line["live_only"] == {"C3": ["windows"]}
    assert line["line"].endswith("; checked live only (nothing to replay): C3"), line["line"]
    assert events[-1]["data"]["replay"]["live_only"] == {"C3": ["windows"]}
    html = Path(line["report"]).read_text(encoding="utf-8")
    assert "C3 checked live only, not replayed (nothing to replay in ui_list_windows windows)" in (
        html
    )
