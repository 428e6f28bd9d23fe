"""The id fixer (``loopkit_tools.IdFixer``): a subagent with the file tools only, called by the
main agent as ``fix_missing_ids``; its child run writes the ids into a real git repository and
its run-log lines hang under the main run. Both models are scripted; every tool is real."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loopkit import Agent, ChatClientBuilder, RunLog, ScriptedChatClient
from loopkit.abstractions import ToolError
from loopkit_tools import ToolsConfig
from loopkit_tools.id_fixer import FILE_TOOLS, ID_FIXER_TOOL, IdFixer

PANEL = """\
class NotesPanel(QGroupBox):
    def __init__(self) -> None:
        super().__init__("Notes")
        self.clear_button = QPushButton("Clear notes")
        self.clear_button.clicked.connect(self.clear)
"""
ID_LINES = [
    '        self.clear_button.setObjectName("NotesClearButton")\n',
    '        self.clear_button.setAccessibleIdentifier("NotesClearButton")\n',
]
TASK = "Add an accessible id to each of these 1 controls: push button 'Clear notes' ..."


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "panel.py").write_text(PANEL, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def fixed_panel() -> str:
    lines = PANEL.splitlines(keepends=True)
    return "".join(lines[:4] + ID_LINES + lines[4:])


def call(name: str, expect: dict[str, Any], **arguments: Any) -> dict[str, Any]:
    return {"calls": [{"name": name, "arguments": arguments, "expect": expect}]}


def child_turns() -> list[dict[str, Any]]:
    return [
        call("list_files", {"error": False, "contains": ["app/panel.py"]}, folder="app"),
        call("read_file", {"error": False, "contains": ["QPushButton"]}, path="app/panel.py"),
        call("write_file", {"error": False}, path="app/panel.py", content=fixed_panel()),
        {"text": "push button 'Clear notes' -> NotesClearButton (app/panel.py)"},
    ]


def parent(tools: list[Any], log: RunLog, expect: dict[str, Any]) -> Agent[str]:
    model = ScriptedChatClient(
        [
            {"calls": [{"name": ID_FIXER_TOOL, "arguments": {"task": TASK}, "expect": expect}]},
            {"text": "The id fixer gave the button its id."},
        ]
    )
    return Agent(ChatClientBuilder(model).use_run_log(log), tools=tools, name="main")


async def test_the_subagent_adds_only_id_lines_in_a_child_run(repo: Path) -> None:
    buffer = io.StringIO()
    log = RunLog(buffer)
    config = ToolsConfig(root=repo, read_folders=["app"], write_folders=["app"], app_ready=None)
    child = ScriptedChatClient(child_turns())
    async with IdFixer(child, config, log=log) as fixer:
        assert [t.name for t in fixer.tools] == [ID_FIXER_TOOL]
        assert [t.name for t in fixer.file_tools] == list(FILE_TOOLS)
        result = await parent(
            fixer.tools, log, {"error": False, "contains": ["NotesClearButton"]}
        ).run("Fix the ids.")
    assert result.output == "The id fixer gave the button its id."
    assert child.finished

    diff = git(repo, "diff", "--unified=0", "--", "app/panel.py").splitlines()
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["+" + line.rstrip("\n") for line in ID_LINES]

    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    [child_run] = [line for line in lines if line["type"] == "child_run"]
    assert child_run["run_id"] == result.run_id
    assert child_run["data"]["tool"] == ID_FIXER_TOOL and child_run["data"]["name"] == "id_fixer"
    child_id = child_run["data"]["child_run_id"]
    child_lines = [line for line in lines if line["run_id"] == child_id]
    assert {line.get("parent_run_id") for line in child_lines} == {result.run_id}
    [start] = [line for line in child_lines if line["type"] == "start"]
    assert start["data"]["tools"] == list(FILE_TOOLS)  # no UI, build, app or git tool
    calls = [line["data"]["name"] for line in child_lines if line["type"] == "tool"]
    assert calls == ["list_files", "read_file", "write_file"]


async def test_a_missing_model_is_the_calls_error_not_the_runs(repo: Path) -> None:
    def no_model() -> ScriptedChatClient:
        raise ValueError("no transcript for the id fixer")

    config = ToolsConfig(root=repo, read_folders=["app"], write_folders=["app"], app_ready=None)
    async with IdFixer(no_model, config) as fixer:
        expect = {"error": True, "contains": ["cannot start the id fixer", "no transcript"]}
        result = await parent(fixer.tools, RunLog(io.StringIO()), expect).run("Fix the ids.")
    assert result.output == "The id fixer gave the button its id."
    assert git(repo, "status", "--porcelain") == ""


async def test_a_task_of_more_than_fifty_controls_is_refused(repo: Path) -> None:
    child = ScriptedChatClient([{"text": "never asked"}])
    config = ToolsConfig(root=repo, read_folders=["app"], write_folders=["app"], app_ready=None)
    listed = "\n".join(f"{i}. push button 'B{i}': child {i} of frame 'Main'" for i in range(1, 52))
    async with IdFixer(child, config) as fixer:
        with pytest.raises(ToolError, match="lists 51 controls; the id fixer takes at most 50"):
            await fixer.tools[0].invoke({"task": f"Add ids.\n\n{listed}"})
        assert child.requests == []  # no child run was started
        fifty = "\n".join(listed.splitlines()[:50])
        assert await fixer.tools[0].invoke({"task": fifty}) == "never asked"


async def test_the_subagents_write_file_only_adds_lines(repo: Path) -> None:
    config = ToolsConfig(root=repo, read_folders=["app"], write_folders=["app"], app_ready=None)
    async with IdFixer(ScriptedChatClient([]), config) as fixer:
        write = next(t for t in fixer.file_tools if t.name == "write_file")
        renamed = fixed_panel().replace(
            "clicked.connect(self.clear)", "clicked.connect(self.reset)"
        )
        for content, line in (
            (renamed, 5),  # a changed line, beside the added ones
            (PANEL.replace("    def __init__", "    def  __init__"), 2),  # reformatted
            ("\n".join(reversed(PANEL.splitlines())), 2),  # moved
            (PANEL.splitlines(keepends=True)[0], 2),  # removed
        ):
            refused = re.escape(f"write_file refused: app/panel.py line {line} (")
            with pytest.raises(ToolError, match=refused):
                await write.invoke({"path": "app/panel.py", "content": content})
            assert (repo / "app" / "panel.py").read_text() == PANEL, line
        with pytest.raises(ToolError, match="does not exist"):
            await write.invoke({"path": "app/new.py", "content": "X = 1\n"})
        assert "Wrote app/panel.py" in await write.invoke(
            {"path": "app/panel.py", "content": fixed_panel()}
        )
    assert (repo / "app" / "panel.py").read_text() == fixed_panel()


async def test_the_testers_report_lists_the_subagents_run(repo: Path, tmp_path: Path) -> None:
    """The run log of a real child run, read by the tester's report: name, run id, totals."""
    from loopkit_ui.tester_tools import TesterConfig, TesterTools

    log_path = tmp_path / "run.jsonl"
    config = ToolsConfig(root=repo, read_folders=["app"], write_folders=["app"], app_ready=None)
    with RunLog(log_path) as log:
        async with IdFixer(ScriptedChatClient(child_turns()), config, log=log) as fixer:
            expect = {"error": False, "contains": ["NotesClearButton"]}
            await parent(fixer.tools, log, expect).run("Fix the ids.")
    lines = [json.loads(line) for line in log_path.read_text("utf-8").splitlines()]
    [child_run] = [line for line in lines if line["type"] == "child_run"]
    child_id = child_run["data"]["child_run_id"]

    tester = TesterTools(
        TesterConfig(
            name="ids",
            report_dir=tmp_path / "report",
            database=tmp_path / "results.sqlite",
            scripts_dir=tmp_path / "ui_tests",
            runner_out=tmp_path / "ui-runs",
            run_log=log_path,
        )
    )
    tester.record_step("the Notes controls have ids", True)
    tester.regressions.append({"status": "passed"})  # as write_regression_script records it
    tester.write_test_report("passed", "Ids added by the subagent.")
    html = (tmp_path / "report" / "report.html").read_text("utf-8")
    assert f"child run {child_id}" in html
    assert "subagent id_fixer (tool fix_missing_ids" in html
    assert "4 rounds, 3 tool calls" in html  # the child's own totals, not the parent's
