"""The test role, played by its bundled transcripts (strict), with real tools and the real app.

(a) The delete card is developed, then tested in a separate run on the repository the develop
run left: the test ends ``RESULT: passed`` with an HTML report and a regression script the script
runner ran once before the RESULT line; the script then passes again in the runner here.
(b) A test run of "Opening a saved invoice" meets the planted crash and files it; the script
runner, given the same database, files the same crash from its own crash script: one finding,
one fingerprint, counted twice.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from loopkit import Card, CardState, Script
from loopkit.demo.run import bundled_transcripts
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import ResultStore, RunnerConfig, ScriptRunner

from .helpers import ROOT, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

# Cards for the test role only (no develop transcript): outside examples/cards/*.md.
TEST_CARDS = ROOT / "examples" / "cards" / "test"
CRASH_SCRIPT = ROOT / "examples" / "scripts" / "crashes" / "open_malformed_json.json"


def _report(output: str) -> Path:
    found = re.search(r"Test report: (\S+)", output.replace("\n", " "))
    assert found, output
    return Path(found.group(1))


def _runner(desktop: HeadlessDesktop, tmp_path: Path, database: Path) -> ScriptRunner:
    config = RunnerConfig(out_dir=tmp_path / "ui-runs", db_path=database, env=desktop.env)
    return ScriptRunner(config, system_log=None)


def test_the_test_roles_transcripts_check_every_result_and_end_with_a_result_line() -> None:
    bundled = bundled_transcripts("test")
    # Every develop card has a test run (the others' derived from their check scripts).
    assert set(bundled) == {
        "delete-asks-for-confirmation", "opening-a-saved-invoice", "total-ignores-the-discount",
        "validate-quantity-and-price", "every-control-has-an-accessible-id",
        "open-says-when-a-file-is-not-an-invoice", "discount-stays-between-0-and-100",
    }  # fmt: skip
    for name, path in bundled.items():
        script = Script.load(path)
        calls = [c.name for t in script.turns for c in t.calls]
        assert all(c.expect is not None for t in script.turns for c in t.calls), name
        # memory first; the regression script runs before the report, the report before RESULT
        assert calls[0] == "read_router" and "search_notes" in calls[:3]
        assert calls.index("write_regression_script") < calls.index("write_test_report")
        assert calls[-1] == "git_commit"
        assert re.search(r"\nRESULT: (passed|failed: .+)$", script.turns[-1].text.rstrip())


@pytest.mark.slow
def test_develop_then_test_the_delete_card(
    tmp_path: Path, headless_desktop: HeadlessDesktop
) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    developed = run_demo(tmp_path, card)
    assert developed.returncode == 0, developed.output
    repo = developed.repo()

    tested = run_demo(tmp_path, card, "--role", "test", "--repo", str(repo))
    assert tested.returncode == 0, tested.output
    assert "Role: test" in tested.output and "RESULT: passed" in tested.output
    assert Card.load(card).state is CardState.DONE
    # The test ran in the same repository, on the develop run's commit, and added its own.
    assert developed.git("rev-list", "--count", "HEAD").strip() == "3"
    assert developed.git("log", "-1", "--format=%s").strip() == (
        "card: Deleting an item should ask first (test)"
    )
    committed = developed.git("show", "--name-only", "--format=", "HEAD").split()
    assert "ui_tests/delete-asks-first.json" in committed
    assert any(p.startswith("notes/") for p in committed), committed

    report = _report(tested.output)
    html = report.read_text("utf-8")
    assert "passed" in html and "No leaves everything as is" in html
    shots = sorted((report.parent / "screenshots").glob("*.png"))
    assert len(shots) == 2
    # Each criterion with its evidence; the screenshots show the app's windows, not the desktop.
    for criterion in ("C1", "C2", "C3"):
        assert f'<tr id="criterion-{criterion}"><td>{criterion}</td>' in html
    from PIL import Image

    for shot in shots:
        with Image.open(shot) as image:
            assert image.width < 1280 and image.height < 1024, (shot, image.size)

    # The regression script ran once in the runner before the RESULT line, and passed.
    database = tmp_path / "runs" / "results.sqlite"
    runs = ResultStore(database).runs()
    script = repo / "ui_tests" / "delete-asks-first.json"
    assert [(r["script"], r["status"]) for r in runs if r["script"] == str(script)] == [
        (str(script), "passed")
    ]
    agent = [r for r in runs if r["script"].startswith("agent test run")]
    assert [(r["status"], r["steps_passed"], r["findings"]) for r in agent] == [("passed", 4, 0)]
    events = tested.events()
    tools = [e["data"]["name"] for e in events if e["type"] == "tool"]
    assert tools.index("write_regression_script") < tools.index("write_test_report")
    # The run log names the report (a line of its own, before the result line).
    reports = [e["data"] for e in events if e["type"] == "test_report"]
    assert reports == [
        {"path": str(report), "verdict": "passed", "steps": 4, "failed": 0, "findings": []}
    ]
    assert events[-1]["type"] == "result" and events[-1]["data"]["status"] == "done"

    # ... and it passes again here, in the script runner, on the tested app.
    again = _runner(headless_desktop, tmp_path, tmp_path / "again.sqlite").run(script)
    assert again.passed, (again.error, [s.message for s in again.steps if s.status == "failed"])
    assert again.count("passed") == 23


def test_a_test_run_files_the_planted_crash_as_the_script_runner_does(
    tmp_path: Path, headless_desktop: HeadlessDesktop
) -> None:
    card = tmp_path / "opening-a-saved-invoice.md"
    shutil.copy(TEST_CARDS / card.name, card)
    tested = run_demo(tmp_path, card, "--role", "test")
    assert tested.returncode == 1, tested.output
    assert "RESULT: failed: opening a file that is not an invoice crashes" in tested.output
    assert Card.load(card).state is CardState.FAILED
    database = tmp_path / "runs" / "results.sqlite"
    agent_rows = [r for r in ResultStore(database).runs() if "-agent-" in r["run_id"]]
    assert [(r["status"], r["error"]) for r in agent_rows] == [
        ("failed", "opening a file that is not an invoice crashes the app (crash_dialog finding)")
    ]
    crashes = [f for f in ResultStore(database).findings() if f["kind"] == "crash_dialog"]
    assert len(crashes) == 1 and crashes[0]["count"] == 1, crashes
    agent_run = crashes[0]["runs"][0]
    assert "-agent-" in agent_run
    assert crashes[0]["fingerprint"] in _report(tested.output).read_text("utf-8")

    # The script runner meets the same crash from its own script (another file, another
    # folder, the app as shipped), in the same database.
    result = _runner(headless_desktop, tmp_path, database).run(CRASH_SCRIPT)
    seen = {f.fingerprint for f in result.findings if f.kind == "crash_dialog"}
    assert seen == {crashes[0]["fingerprint"]}
    rows = [f for f in ResultStore(database).findings() if f["kind"] == "crash_dialog"]
    assert [(r["fingerprint"], r["count"]) for r in rows] == [(crashes[0]["fingerprint"], 2)]
    assert rows[0]["runs"] == [agent_run, result.run_id]
    assert rows[0]["stack_line"].startswith("main_window.py:") and rows[0]["stack_line"].endswith(
        " in open_file"
    )
