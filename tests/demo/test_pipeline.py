"""``python -m loopkit.demo CARD.md --then test``: develop, then test in the same repository on a
fresh app; the card is Done only when the tester passes; the tester's defects go back to the
developer as its next message. Real app, tools, UI server and git; the model plays transcripts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, CardState
from loopkit.demo.run import bundled_transcripts
from tests.installed import import_or_unavailable

from .helpers import DemoRun, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

CARD = "total-ignores-the-discount"


def logs(run: DemoRun) -> list[list[dict[str, Any]]]:
    """Every run's log of the pipeline, in the order the runs started."""
    found = sorted(run.runs_dir.glob("*/run.jsonl"))
    return [[json.loads(line) for line in p.read_text().splitlines()] for p in found]


def call(name: str, expect: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "expect": expect or {"error": False}}


def test_develop_then_test_ends_done_in_the_same_repository(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    run = run_demo(tmp_path, card, "--then", "test")
    assert run.returncode == 0, run.output
    assert "Pipeline: develop → test passed in round 1; the card is Done." in run.output
    assert Card.load(card).state is CardState.DONE
    develop, test = logs(run)
    assert develop[-1]["data"]["card_state"] == "In Test"  # developed, not Done yet
    assert develop[-1]["data"]["verified_by_replay"] is True
    assert test[0]["data"]["role"] == "test" and test[-1]["data"]["card_state"] == "Done"
    # One repository: the develop commit, then the tester's.
    assert run.git("log", "--format=%s").splitlines()[:2] == [
        "card: Deleting an item should ask first (test)",
        "card: Deleting an item should ask first",
    ]


OVER = "A discount of 150 makes the total negative"


def round_trip_transcripts(folder: Path) -> Path:
    """Round 1: developed and verified, but the tester fails it (a discount above 100 % makes
    the total negative; no report); round 2: the developer gets the defects, checks again, and
    the tester passes. Returns the first developer transcript (the others lie beside it)."""
    (folder / "test").mkdir(parents=True)
    shutil.copy(bundled_transcripts()[CARD], folder / f"{CARD}.json")
    tester_fails = [
        {"calls": [call("start_app")]},
        {"calls": [call("ui_type_text", target="DiscountInput", text="150")]},
        {"calls": [call("ui_get_text", {"contains": "Total: -125.00"}, target="TotalLabel")]},
        {
            "calls": [
                call("record_step", description=OVER, passed=False, evidence="Total: -125.00"),
                call(
                    "record_finding",
                    kind="defect",
                    title="Negative total",
                    summary=f"{OVER} (Total: -125.00).",
                ),
                call("stop_app"),
            ]
        },
        {"text": "The total goes negative.\n\nRESULT: failed: a discount above 100 is accepted"},
    ]
    checks_again = [
        {"calls": [call("start_app")]},
        {"calls": [call("ui_type_text", target="DiscountInput", text="10")]},
        {
            "calls": [
                {**call("ui_get_text", {"contains": "225.00"}, target="TotalLabel"), "id": "c1"}
            ]
        },
        {"calls": [call("ui_type_text", target="DiscountInput", text="0")]},
        {
            "calls": [
                {**call("ui_get_text", {"contains": "250.00"}, target="TotalLabel"), "id": "c2"}
            ]
        },
        {"calls": [call("ui_type_text", target="DiscountInput", text="20")]},
        {
            "calls": [
                {**call("ui_get_text", {"contains": "200.00"}, target="TotalLabel"), "id": "c3"}
            ]
        },
        {
            "calls": [
                call("record_evidence", criterion=c, calls=[ident])
                for c, ident in (("C1", "c1"), ("C2", "c2"), ("C3", "c3"))
            ]
        },
        {"calls": [call("stop_app")]},
        {
            "text": "The card's criteria hold; a discount above 100 is not part of it.\n\nRESULT: done"
        },
    ]
    tester_passes = [
        {"calls": [call("start_app")]},
        {"calls": [call("ui_type_text", target="DiscountInput", text="10")]},
        {"calls": [call("ui_get_text", {"contains": "225.00"}, target="TotalLabel")]},
        {"calls": [call("record_step", description="C1 holds", passed=True), call("stop_app")]},
        {"text": "RESULT: passed"},
    ]
    for path, turns in (
        (folder / "test" / f"{CARD}.json", tester_fails),
        (folder / f"{CARD}.round-2.json", checks_again),
        (folder / "test" / f"{CARD}.round-2.json", tester_passes),
    ):
        path.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    return folder / f"{CARD}.json"


def findings_rows(run: DemoRun) -> list[tuple[str, str | None]]:
    """The test runs' rows in the findings database: (status, error), oldest first."""
    from loopkit_ui.scripts import ResultStore

    rows = ResultStore(run.runs_dir / "results.sqlite").runs()
    return [(r["status"], r["error"]) for r in rows if r["script"].startswith("agent test run")]


@pytest.mark.parametrize("durable", [False, True], ids=["in-process", "durable"])
def test_the_testers_defects_go_back_to_the_developer(tmp_path: Path, durable: bool) -> None:
    """One round trip: the developer gets the tester's defects as its next message, and the
    card's state says where the pipeline is at every step (In Work → In Test → In Work →
    In Test → Done), never Failed in between. With ``--durable`` the same pipeline runs as the
    queue's (each run a durable workflow), in the demo's own process."""
    if durable:
        import_or_unavailable("dbos", install="loopkit[durable]")
    first = round_trip_transcripts(tmp_path / "transcripts")
    card = copy_card(tmp_path, CARD)
    run = run_demo(
        tmp_path, card, "--then", "test", "--round-trips", "1", "--transcript", str(first),
        *(["--durable"] if durable else []),
    )  # fmt: skip
    assert run.returncode == 0, run.output
    assert "Pipeline: develop → test passed in round 2; the card is Done." in run.output
    assert Card.load(card).state is CardState.DONE
    runs = logs(run)
    assert [r[0]["data"]["role"] for r in runs] == ["develop", "test", "develop", "test"]
    # The failing tester leaves the card In Work for the developer's next round: no Failed.
    assert [r[-1]["data"]["card_state"] for r in runs] == ["In Test", "In Work", "In Test", "Done"]
    assert "note: the card is in state" not in run.output
    # Each run names its repository (one for all) and the run it follows.
    starts = [r[0] for r in runs]
    assert len({s["data"]["repo"] for s in starts}) == 1
    assert [s["data"].get("parent") for s in starts] == [None, *(s["run_id"] for s in starts[:3])]
    # The developer's second run got the tester's defects with the card: its reason, the
    # failed check, the finding, the report.
    message = runs[2][0]["data"]["message"]
    assert message.startswith("THE TESTER FOUND DEFECTS")
    assert "The test run of round 1 failed: a discount above 100 is accepted" in message
    assert f"- failed check: {OVER} (saw: Total: -125.00)" in message
    assert f"(defect): {OVER} (Total: -125.00)." in message
    # Every run worked in the develop run's repository: one history.
    assert run.git("log", "-1", "--format=%s").startswith("card: The total should subtract")
    assert runs[2][-1]["data"]["verified_by_replay"] is True
    # Each test run's findings row ends with its run's real verdict (RESULT line), not what
    # the tools knew when they closed ("the run ended before its report").
    assert findings_rows(run) == [("failed", "a discount above 100 is accepted"), ("passed", None)]


def test_without_a_round_trip_left_the_card_stays_failed(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    (folder / "test").mkdir(parents=True)
    shutil.copy(bundled_transcripts()[CARD], folder / f"{CARD}.json")
    (folder / "test" / f"{CARD}.json").write_text(
        json.dumps({"turns": [{"text": "RESULT: failed: not tested today"}]}), encoding="utf-8"
    )
    card = copy_card(tmp_path, CARD)
    run = run_demo(
        tmp_path, card, "--then", "test", "--round-trips", "1",
        "--transcript", str(folder / f"{CARD}.json"),
    )  # fmt: skip
    # Round 2's developer transcript is missing: the pipeline stops there, Failed.
    assert run.returncode == 1, run.output
    assert Card.load(card).state is CardState.FAILED
    assert f"{CARD}.round-2.json does not exist" in " ".join(run.output.split())


def test_a_pipeline_records_each_runs_transcript_where_it_plays_them_back(tmp_path: Path) -> None:
    """``--then test --record-transcript T.json``: the developer's turns in T.json, the
    tester's in test/T.json, the layout ``--then test --transcript T.json`` plays back."""
    from loopkit import Script

    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    recorded = tmp_path / "recorded" / "delete.json"
    recorded.parent.mkdir()
    run = run_demo(tmp_path, card, "--then", "test", "--record-transcript", str(recorded))
    assert run.returncode == 0, run.output
    assert Card.load(card).state is CardState.DONE
    for path, bundled in (
        (recorded, bundled_transcripts()["delete-asks-for-confirmation"]),
        (recorded.parent / "test" / "delete.json", bundled_transcripts("test")[card.stem]),
    ):
        played = [[c.name for c in t.calls] for t in Script.load(bundled).turns]
        assert [[c.name for c in t.calls] for t in Script.load(path).turns] == played, path
