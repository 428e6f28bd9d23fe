"""Suites (a folder of cards or a TOML naming cards, roles, configs, graders, limits), and the
graders on run logs as the runner writes them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from loopkit.cards import Card, CardState
from loopkit.evals import (
    CriteriaGrader,
    LimitsGrader,
    RunRef,
    SuiteError,
    TesterGrader,
    load_suite,
    make_graders,
)
from loopkit.evals.graders import CaseRun
from loopkit.evals.suite import CaseLimits, EvalConfig
from tests.demo.helpers import ROOT

CARDS = ROOT / "examples" / "cards"
EXAMPLE = ROOT / "examples" / "evals" / "invoice.toml"


def test_a_folder_of_cards_is_a_suite() -> None:
    suite = load_suite(CARDS)
    names = [c.name for c in suite.cards]
    assert "delete-asks-for-confirmation" in names and "opening-a-saved-invoice" not in names
    assert [c.name for c in suite.configs] == ["default"] and suite.repeat == 1
    assert suite.then == "test" and suite.graders[0] == "criteria"
    # every develop card has its own checks beside it
    assert all(c.checks for c in suite.cards), [c.name for c in suite.cards if not c.checks]


def test_the_example_suite() -> None:
    suite = load_suite(EXAMPLE)
    assert suite.name == "invoice" and suite.repeat == 3 and len(suite.cards) == 6
    good, skips = suite.configs
    assert good.name == "good" and skips.name == "skips-a-criterion"
    assert skips.settings.transcript == ROOT / "examples/evals/transcripts/skips-a-criterion"
    card = CARDS / "total-ignores-the-discount.md"
    assert (
        skips.transcript_for(card) == skips.settings.transcript / "total-ignores-the-discount.json"
    )
    assert good.transcript_for(card) is None  # the bundled transcripts
    assert suite.limits.max_rounds == 120
    again = load_suite(EXAMPLE, configs=[ROOT / "examples/configs/claude.toml"], repeat=5)
    assert [c.name for c in again.configs] == ["claude"] and again.repeat == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('cards = ["*.md"]\ncolour = "red"', "unknown key(s) colour"),
        ('cards = ["nothing-*.md"]', "matches no file"),
        ("cards = []", "cards: expected a list"),
        ('cards = ["c.md"]\nrepeat = 0', "repeat: expected a whole number, 1 or more"),
        ('cards = ["c.md"]\ngraders = "criteria"', "graders: expected a list"),
        ('cards = ["c.md"]\n[[configs]]\nname = "a"\n[[configs]]\nname = "a"', "share a name"),
        ('cards = ["c.md"]\n[[configs]]\nname = "a b"', "name 'a b'"),
        ('cards = ["c.md"]\n[[configs]]\nname = "a"\nmax_rounds = 0', "config 'a'"),
        ('cards = ["c.md"]\n[limits]\nmax_cost = -1', "limits:"),
    ],
)
def test_bad_suites_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "c.md").write_text("---\ntitle: A card\n---\nBody\n")
    suite = tmp_path / "suite.toml"
    suite.write_text(text)
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_suite(suite)


def test_graders_by_name_module_path_or_unknown() -> None:
    graders = make_graders(["criteria", "tests.evals.custom_grader:FewRounds"])
    assert [g.name for g in graders] == ["criteria", "few-rounds"]
    with pytest.raises(SuiteError, match="unknown grader 'vibes'; the graders are: criteria"):
        make_graders(["vibes"])
    with pytest.raises(SuiteError, match="is not a grader"):
        make_graders(["tests.evals.custom_grader:NotAGrader"])
    with pytest.raises(SuiteError, match="cannot be loaded"):
        make_graders(["tests.evals.nowhere:Grader"])


def _log(path: Path, *lines: tuple[str, dict[str, object]]) -> str:
    path.write_text("".join(json.dumps({"type": t, "run_id": "r", "data": d}) + "\n"
                            for t, d in lines) + '{"type": "round", "cut by a ki')  # fmt: skip
    return str(path)


def _case(tmp_path: Path, runs: list[RunRef], card: str = "total-ignores-the-discount") -> CaseRun:
    from loopkit.cards import load_config

    return CaseRun(
        card=Card.load(CARDS / f"{card}.md"), card_path=CARDS / f"{card}.md", checks=[],
        config=EvalConfig("c", load_config(None)), runs=runs, develop="develop", then="test",
        folder=tmp_path, limits=CaseLimits(max_rounds=40, max_tokens=50_000),
    )  # fmt: skip


def test_the_criteria_grader_reads_the_develop_runs_result(tmp_path: Path) -> None:
    verified = [{"id": f"C{i}", "status": "verified", "evidence": ["x"]} for i in (1, 2, 3)]
    good = _log(tmp_path / "good.jsonl", ("result", {"status": "done", "criteria": verified,
                                                     "verified_by_replay": True}))  # fmt: skip
    run = RunRef(run_id="r", role="develop", state="done", log_path=good)
    verdict = asyncio.run(CriteriaGrader().grade(_case(tmp_path, [run])))
    assert verdict.passed is True and verdict.detail == "C1, C2, C3 verified by replay"

    missing = [*verified[:2], {"id": "C3", "status": "missing", "problem": "no record_evidence"}]
    bad = _log(tmp_path / "bad.jsonl", ("result", {"status": "failed", "criteria": missing}))
    run = RunRef(run_id="r", role="develop", state="failed", log_path=bad)
    verdict = asyncio.run(CriteriaGrader().grade(_case(tmp_path, [run])))
    assert verdict.passed is False
    assert verdict.detail == "C3 missing (no record_evidence); not verified by replay"
    verdict = asyncio.run(CriteriaGrader().grade(_case(tmp_path, [])))
    assert verdict.passed is False and verdict.detail == "no develop run"


def test_manual_criteria_are_reported_unverified_not_failed(tmp_path: Path) -> None:
    card = "every-control-has-an-accessible-id"
    verified = [{"id": f"C{i}", "status": "verified"} for i in (1, 2)]
    log = _log(tmp_path / "ids.jsonl", ("result", {"criteria": [*verified, {"id": "C3",
               "status": "unverified"}], "verified_by_replay": True}))  # fmt: skip
    run = RunRef(run_id="r", role="develop", state="done", log_path=log)
    verdict = asyncio.run(CriteriaGrader().grade(_case(tmp_path, [run], card)))
    assert verdict.passed is True and "C3 manual (unverified)" in verdict.detail


def test_the_tester_grader_and_the_limits_grader(tmp_path: Path) -> None:
    test_log = _log(tmp_path / "t.jsonl", ("test_report", {"verdict": "passed", "steps": 4,
                                                           "failed": 0}))  # fmt: skip
    develop = RunRef(run_id="d", role="develop", state="done", rounds=27, input_tokens=20_000,
                     output_tokens=300, seconds=8.0)  # fmt: skip
    tester = RunRef(run_id="t", role="test", state="done", rounds=25, log_path=test_log,
                    input_tokens=20_000, output_tokens=200, seconds=9.0)  # fmt: skip
    case = _case(tmp_path, [develop, tester])
    verdict = asyncio.run(TesterGrader().grade(case))
    assert verdict.passed is True and verdict.detail == "passed (4 steps, 0 failed)"
    verdict = asyncio.run(LimitsGrader().grade(case))
    assert verdict.passed is False and verdict.detail == "52 rounds > 40"
    failed = tester.model_copy(update={"state": "failed", "reason": "C2 does not hold"})
    verdict = asyncio.run(TesterGrader().grade(_case(tmp_path, [develop, failed])))
    assert verdict.passed is False and verdict.detail == "failed: C2 does not hold"
    alone = _case(tmp_path, [develop.model_copy(update={"state": "failed"})])
    verdict = asyncio.run(TesterGrader().grade(alone))
    assert verdict.detail == "the test role never ran (the develop run failed)"
    verdict = asyncio.run(LimitsGrader().grade(alone))
    assert verdict.passed is True and verdict.detail == "27 rounds, 20,300 tokens, 8.0 s"


def test_an_eval_folder_is_resumed_or_refused(tmp_path: Path) -> None:
    """Started again in its folder, an eval keeps its plan and ids; the cases a budget stopped
    get a first run of a new id (their runs were cancelled); another plan is refused."""
    from loopkit.evals.engine import EvalRun

    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "one.md").write_text((CARDS / "total-ignores-the-discount.md").read_text())
    out = tmp_path / "out"
    first = EvalRun(load_suite(cards, repeat=2), out)
    first.out.mkdir()
    first._copy_cards()
    keys = [c.key for c in first.result.cases]
    assert keys == ["default/one/1", "default/one/2"]
    stopped = first.result.cases[1]
    stopped.status, stopped.note = "stopped", "the budget of $1.00 is reached"
    first.result.status = "stopped: the budget of $1.00 is reached"
    first.result.save(first.path)
    Card.load(Path(stopped.card_path)).save_state(CardState.FAILED)

    again = EvalRun(load_suite(cards, repeat=2), out, max_cost=5.0)
    assert again.result.eval_id == first.result.eval_id and again.result.status == "running"
    kept, rerun = again.result.cases
    assert kept.first_run == first.result.cases[0].first_run and kept.status == "queued"
    assert rerun.status == "queued" and rerun.note is None and rerun.first_run != stopped.first_run
    assert Card.load(Path(rerun.card_path)).state == CardState.NEW
    assert again.result.max_cost == 5.0
    with pytest.raises(SuiteError, match=r"holds another eval \(its cards, configs or repeats"):
        EvalRun(load_suite(cards, repeat=3), out)
