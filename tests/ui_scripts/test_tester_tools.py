"""The tester's tools: findings in the runner's database with its fingerprint, the report, the
regression script validated by the runner's schema and run by the runner (the last one on the
headless desktop with the real invoice app)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from loopkit.abstractions import ToolError
from loopkit_ui import tester_tools
from loopkit_ui.backends import TreeNode, TreeSnapshot
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import ResultStore, RunResult
from loopkit_ui.scripts.oracles import window_content, window_finding
from tests.secret_corpus import LATE, leaks, plant_environment, planted_text

from .conftest import REPO

# The planted crash's dialog text, as the invoice app's crash_text writes it.
CRASH_TEXT = """An unexpected error occurred.

InvoiceFormatError: /tmp/x/broken.json is not valid JSON: Expecting value: line 1 column 1

Traceback (most recent call last):
  File "/tmp/pytest-7/repo/invoice_app/main_window.py", line 288, in open_file
  File "/tmp/pytest-7/repo/invoice_app/storage.py", line 48, in load_invoice"""


def make_tools(tmp_path: Path, **overrides: Any) -> tester_tools.TesterTools:
    settings: dict[str, Any] = {
        "name": "Deleting an item should ask first",
        "report_dir": tmp_path / "report",
        "database": tmp_path / "results.sqlite",
        "scripts_dir": tmp_path / "ui_tests",
        "runner_out": tmp_path / "ui-runs",
        "ui_output_dirs": [tmp_path / "ui"],
        **overrides,
    }
    return tester_tools.TesterTools(tester_tools.TesterConfig(**settings))


def call(tools: tester_tools.TesterTools, tool_name: str, /, **arguments: Any) -> str:
    tool = next(t for t in tools.tools if t.name == tool_name)
    return str(asyncio.run(tool.invoke(arguments)))


def test_the_four_tools_are_offered(tmp_path: Path) -> None:
    assert (
        tuple(t.name for t in make_tools(tmp_path).tools)
        == tester_tools.TESTER_TOOL_NAMES
        == (
            "record_step",
            "record_finding",
            "write_regression_script",
            "write_test_report",
        )
    )


def crash_tree(folder: str) -> TreeSnapshot:
    """The crash dialog's tree as the UI server's ui_tree(format='json') saves it."""
    text = CRASH_TEXT.replace("/tmp/pytest-7/repo", folder)
    nodes = [
        TreeNode(key="w", parent=None, depth=0, role="alert", name="Invoice Editor",
                 id="CrashDialog", text="Invoice Editor"),
        TreeNode(key="l", parent="w", depth=1, role="label", name=text),
        TreeNode(key="p", parent="w", depth=1, role="panel"),
        TreeNode(key="c", parent="p", depth=2, role="push button", name="Continue",
                 id="CrashContinueButton"),
        TreeNode(key="q", parent="p", depth=2, role="push button", name="Quit",
                 id="CrashQuitButton"),
    ]  # fmt: skip
    return TreeSnapshot(app="invoice_app", nodes=nodes, node_budget=2000, ms=1.0)


def test_a_crash_filed_by_the_agent_and_by_the_oracle_is_one_finding_counted_twice(
    tmp_path: Path,
) -> None:
    tools = make_tools(tmp_path)
    (tmp_path / "ui").mkdir()
    tree = crash_tree("/tmp/pytest-7/repo")
    (tmp_path / "ui" / "tree-001.json").write_text(tree.model_dump_json(), "utf-8")
    call(tools, "record_step", description="open README.md", passed=False, evidence="crash")
    answer = call(
        tools,
        "record_finding",
        kind="crash_dialog",
        summary="opening a file that is not an invoice crashes",
        tree="latest",
    )
    assert "'Invoice Editor'" in answer and "main_window.py:288 in open_file" in answer, answer
    assert "seen in 1 run(s)" in answer
    # The same dialog seen by a script's oracle, in another folder.
    other = crash_tree("/home/u/examples").nodes
    oracle = window_finding("window_event", "Invoice Editor", window_content(other, "w"), "s")
    script_run = RunResult(
        run_id="script-run", script="x.json", name="x", started="2026", run_dir=str(tmp_path)
    )
    script_run.findings = [oracle]
    ResultStore(tmp_path / "results.sqlite").record(script_run)
    rows = ResultStore(tmp_path / "results.sqlite").findings()
    assert [(r["kind"], r["count"]) for r in rows] == [("crash_dialog", 2)]
    assert set(rows[0]["runs"]) == {tools.result.run_id, "script-run"}
    # Filing it again in the same run does not count the run twice; the text as evidence
    # (without the tree) is read the same way.
    call(tools, "record_finding", kind="crash_dialog", title="Invoice Editor", summary="again",
         evidence=CRASH_TEXT)  # fmt: skip
    assert ResultStore(tmp_path / "results.sqlite").findings()[0]["count"] == 2


def test_a_crash_finding_without_the_dialog_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="needs the dialog"):
        call(tools := make_tools(tmp_path), "record_finding", kind="crash_dialog",
             title="Invoice Editor", summary="it crashed", evidence="it crashed")  # fmt: skip
    assert tools.result.findings == []


def test_an_invalid_regression_script_names_each_problem_and_writes_nothing(
    tmp_path: Path,
) -> None:
    tools = make_tools(tmp_path, default_app={"command": ["python", "-m", "invoice_app"]})
    bad = {"name": "x", "steps": [{"type": "action", "action": "klick", "target": "OkButton"}]}
    with pytest.raises(ToolError) as caught:
        call(tools, "write_regression_script", name="delete", script=bad)
    assert "steps[0]" in str(caught.value) and "klick" in str(caught.value)
    assert not (tmp_path / "ui_tests" / "delete.json").exists()
    with pytest.raises(ToolError, match="not valid JSON at line 1, column 2"):
        call(tools, "write_regression_script", name="delete", script="{steps: []}")
    with pytest.raises(ToolError) as as_text:
        call(tools, "write_regression_script", name="delete", script=json.dumps(bad))
    assert str(as_text.value) == str(caught.value)
    with pytest.raises(ToolError, match=r"name '\.\./x'"):
        call(tools, "write_regression_script", name="../x", script=bad)


def test_the_report_needs_steps_and_a_regression_run_and_shows_them(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    with pytest.raises(ToolError, match="no step recorded"):
        call(tools, "write_test_report", verdict="passed", summary="All good.")
    (tmp_path / "ui").mkdir()
    shot = tmp_path / "ui" / "screenshot-1.png"
    from PIL import Image

    Image.new("RGB", (8, 8), "red").save(shot)
    outside = tmp_path / "elsewhere.png"
    Image.new("RGB", (8, 8), "red").save(outside)
    with pytest.raises(ToolError, match="screenshot"):
        call(tools, "record_step", description="x", passed=True, screenshot=str(outside))
    call(tools, "record_step", description="No keeps the row", passed=True,
         evidence="Consulting, Total: 250.00", screenshot=str(shot))  # fmt: skip
    with pytest.raises(ToolError, match="there is none in this run yet"):
        make_tools(tmp_path / "other").record_step("x", True, screenshot="latest")
    call(tools, "record_step", description="Yes removes it", passed=True, screenshot="latest")
    with pytest.raises(ToolError, match="no regression script"):
        call(tools, "write_test_report", verdict="passed", summary="All good.")
    tools.regressions.append({"status": "passed"})  # as write_regression_script records it
    answer = call(tools, "write_test_report", verdict="passed", summary="Delete asks first.")
    report = tmp_path / "report" / "report.html"
    assert str(report) in answer
    html = report.read_text("utf-8")
    assert "No keeps the row" in html and "Total: 250.00" in html
    assert (tmp_path / "report" / "screenshots" / "001-screenshot-1.png").is_file()
    assert (tmp_path / "report" / "screenshots" / "002-screenshot-1.png").is_file()
    assert (tmp_path / "report" / "run.gif").is_file() and 'src="run.gif"' in html
    run = ResultStore(tmp_path / "results.sqlite").run(tools.result.run_id)
    assert run.status == "passed" and run.report == str(report)


def test_a_regression_script_is_run_once_by_the_script_runner(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    app = {
        "command": [sys.executable, "-m", "invoice_app"],
        "cwd": str(REPO / "examples"),
        "env": {"INVOICE_APP_LOG": "${run_dir}/invoice_app.log"},
        "log_file": "${run_dir}/invoice_app.log",
        "startup_timeout": 20,
        "call_timeout": 3,
    }
    tools = make_tools(tmp_path, default_app=app, env=headless_desktop.env)
    script = {
        "name": "totals",
        "steps": [
            {"type": "assert", "target": "TotalLabel", "equals": "Total: 250.00"},
            {"type": "assert", "target": "SubtotalLabel", "equals": "Subtotal: 999.00"},
        ],
    }
    answer = call(tools, "write_regression_script", name="totals", script=script)
    assert "FAILED (1 passed, 1 failed" in answer and "Subtotal: 999.00" in answer, answer
    script["steps"].pop()
    answer = call(tools, "write_regression_script", name="totals", script=script)
    assert "PASSED (1 passed, 0 failed" in answer, answer
    runs = ResultStore(tmp_path / "results.sqlite").runs()
    assert [r["status"] for r in runs] == ["failed", "passed"]
    assert [r["script"] for r in runs] == [str(tmp_path / "ui_tests" / "totals.json")] * 2


def test_a_regression_run_that_takes_too_long_is_stopped_with_a_clear_error(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    app = {"command": [sys.executable, "-m", "invoice_app"], "cwd": str(REPO / "examples")}
    tools = make_tools(tmp_path, default_app=app, env=headless_desktop.env, runner_timeout_s=1.5)
    script = {"name": "slow", "steps": [{"type": "sleep", "seconds": 30}]}
    with pytest.raises(ToolError, match=r"did not finish slow\.json within 1\.5 s"):
        call(tools, "write_regression_script", name="slow", script=script)
    assert tools.regressions == []


def test_no_secret_reaches_the_report_or_the_findings_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_environment(monkeypatch)
    tools = make_tools(tmp_path)
    monkeypatch.setenv(*LATE)  # exported after the tools were made: redacted all the same
    text = planted_text()
    call(tools, "record_step", description="saved", passed=False, evidence=text)
    call(tools, "record_finding", kind="defect", title="token shown", summary=text[:400],
         evidence=text)  # fmt: skip
    tools.regressions.append({"status": "passed"})  # as write_regression_script records it
    call(tools, "write_test_report", verdict="failed", summary=text)
    report = (tmp_path / "report" / "report.html").read_text("utf-8")
    database = (tmp_path / "results.sqlite").read_bytes().decode("utf-8", errors="ignore")
    rows = json.dumps(ResultStore(tmp_path / "results.sqlite").findings())
    print(f"tester report: leaked {leaks(report)}; findings database: leaked {leaks(database)}")
    assert leaks(report) == [] and leaks(database) == [] and leaks(rows) == []


def test_a_resumed_run_takes_up_the_record_of_the_process_before(tmp_path: Path) -> None:
    # A durable test run resumed in a new process replays its earlier tool calls from their
    # checkpoints without running them: the new TesterTools must start from the record so far.
    first = make_tools(tmp_path)
    call(first, "record_step", description="No keeps the row", passed=True, evidence="250.00")
    call(first, "record_finding", kind="defect", title="Totals", summary="total is stale")
    first.regressions.append({"status": "passed"})  # as write_regression_script records it
    with first._lock:
        first._save_record()
    second = make_tools(tmp_path)  # the resumed run, same report folder
    assert second.result.run_id == first.result.run_id
    assert [s.label for s in second.result.steps] == ["No keeps the row"]
    assert [f.title for f in second.result.findings] == ["Totals"]
    call(second, "record_step", description="Yes removes it", passed=True)
    answer = call(second, "write_test_report", verdict="passed", summary="Delete asks first.")
    assert "(2 steps, 0 failed, 1 finding(s), 1 regression script(s))" in answer, answer
    html = (tmp_path / "report" / "report.html").read_text("utf-8")
    assert "No keeps the row" in html and "Yes removes it" in html
    # One run in the findings database, not two.
    runs = ResultStore(tmp_path / "results.sqlite").runs()
    assert [r["run_id"] for r in runs] == [first.result.run_id]


def test_a_broken_record_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "record.json").write_text('{"result": 1}', "utf-8")
    from loopkit.errors import LoopkitError

    with pytest.raises(LoopkitError, match=r"record\.json: not a test run's record"):
        make_tools(tmp_path)
