"""The report, the JUnit XML and ``compare`` on results built here (the end-to-end test makes
real ones): what goes in comes out, regressions gate, bad input is one line."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from loopkit.evals import EvalResult, GraderVerdict, RunRef, compare_evals, price_for
from loopkit.evals.junit import junit_xml
from loopkit.evals.report import render_report
from loopkit.evals.results import CardInfo, CaseResult, ConfigInfo


def _eval(passes: dict[tuple[str, str], list[bool]], repeat: int, folder: Path) -> EvalResult:
    configs = sorted({config for config, _ in passes})
    cards = sorted({card for _, card in passes})
    cases = []
    for (config, card), verdicts in passes.items():
        for n, passed in enumerate(verdicts, start=1):
            log = folder / f"{config}-{card}-{n}.jsonl"
            log.write_text("{}\n")
            run = RunRef(run_id=f"{config}{card}{n}", role="develop", state="done" if passed
                         else "failed", log_path=str(log), rounds=3, input_tokens=900,
                         output_tokens=90, seconds=2.5, tokens_per_round=[250, 300, 440],
                         cost=0.0)  # fmt: skip
            cases.append(
                CaseResult(
                    key=f"{config}/{card}/{n}", card=card, config=config, repeat=n,
                    status="passed" if passed else "failed", passed=passed,
                    graders=[GraderVerdict(grader="criteria", passed=passed,
                                           detail="C1 verified" if passed else "C1 missing"),
                             GraderVerdict(grader="checks", passed=None, detail="no checks")],
                    runs=[run], card_path=str(folder / f"{card}.md"), first_run=run.run_id,
                    rounds=3, input_tokens=900, output_tokens=90, cost=0.0, seconds=2.5,
                    wall_seconds=4.0,
                )
            )  # fmt: skip
    return EvalResult(
        eval_id=f"eval-{len(cases)}", suite="test", started_at="2026-12-01T00:00:00+00:00",
        status="complete", database="sqlite:///x", repeat=repeat, develop="develop",
        then="test", round_trips=0, graders=["criteria", "checks"],
        configs=[ConfigInfo(name=c, model="scripted", price=price_for("scripted"))
                 for c in configs],
        cards=[CardInfo(name=c, title=c.title(), path=f"/cards/{c}.md") for c in cards],
        cases=cases,
    )  # fmt: skip


def test_the_report_shows_rates_plots_and_links(tmp_path: Path) -> None:
    result = _eval({("a", "one"): [True, True, False], ("b", "one"): [False] * 3}, 3, tmp_path)
    html = render_report(result, tmp_path)
    assert html.count('<svg class="plot"') == 5
    assert 'data-rate="0.6667"' in html and "2/3 (67%)" in html  # a, one
    assert 'data-series="a" data-group="all cards" data-value="0.666667"' in html
    # nothing is fetched: no script, no remote source, no link out of the eval's folder
    assert "<script" not in html and 'src="' not in html and 'href="http' not in html
    assert html.count('data-kind="log" href="a-one-1.jsonl"') == 1  # relative links
    assert "✗ criteria" in html and "– checks" in html
    assert "C1 missing" in html


def test_junit_xml(tmp_path: Path) -> None:
    result = _eval({("a", "one"): [True, False]}, 2, tmp_path)
    root = ET.fromstring(junit_xml(result).split("?>", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    failure = root.find(".//testcase[@name='one #2']/failure")
    assert failure is not None and failure.get("message") == "criteria: C1 missing"


def test_compare_finds_better_worse_new_and_gone(tmp_path: Path) -> None:
    old = _eval({("a", "one"): [True] * 6, ("a", "two"): [False] * 3, ("a", "gone"): [True]},
                6, tmp_path)  # fmt: skip
    new = _eval({("a", "one"): [False] * 6, ("a", "two"): [True] * 3, ("a", "new"): [True]},
                6, tmp_path)  # fmt: skip
    comparison = compare_evals(old, new)
    changes = {c.card: c for c in comparison.cases}
    assert {k: c.change for k, c in changes.items()} == {
        "one": "worse", "two": "better", "gone": "gone", "new": "new"}  # fmt: skip
    assert [c.card for c in comparison.regressions] == ["one"]
    assert changes["one"].p_value is not None and changes["one"].p_value < 0.01
    assert "significant at 5%" in changes["one"].note()
    assert "3 better" not in comparison.text() and "1 regression(s)" in comparison.text()


def test_compare_on_the_command_line(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _eval({("a", "one"): [True, True]}, 2, tmp_path).save(old)
    _eval({("b", "one"): [True, False]}, 2, tmp_path).save(new)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "loopkit.evals", "compare", *args],
                              capture_output=True, text=True, check=False)  # fmt: skip

    done = run(str(old), str(new))  # one config each: matched by card
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("WORSE  one (a → b): 2/2 → 1/2")
    assert run(str(old), str(old)).returncode == 0
    bad = run(str(old), str(tmp_path / "missing.json"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: cannot read eval results")
    (tmp_path / "other.json").write_text('{"cases": []}')
    bad = run(str(old), str(tmp_path / "other.json"))
    assert bad.returncode == 2 and "is not an eval's results" in bad.stderr
    bad = run(str(old), str(new), "--old-config", "z")
    assert bad.returncode == 2 and "--old-config 'z': the old eval has the configs a" in bad.stderr


def test_bad_command_lines_are_one_line_and_exit_2(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "loopkit.evals", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=False)  # fmt: skip

    for args, message in [
        (("nowhere",), "suite nowhere: no such folder or TOML file"),
        ((str(tmp_path),), "the folder has no card"),
        (("x", "--max-cost", "0"), "expected dollars, more than 0"),
        (("x", "--workers", "-1"), "--workers -1: expected 0 or more"),
    ]:
        done = run(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "evals").exists()  # nothing was created
