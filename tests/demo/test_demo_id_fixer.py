"""The id-fixing run (gap 4), played by the demo from its bundled transcripts with every tool
real: the main agent lists the controls without an id, hands the task to the id fixer (a
subagent with file tools only, its own transcript), builds, checks the ids live, writes a note
and commits. Then an independent UI script, run by the script runner, finds every one of those
controls by id on the fixed app (and fails on the unfixed one), and the commit's diff of the app
is nothing but added id lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopkit import Card, CardState, Script
from loopkit.demo.id_fixer_tools import child_transcript
from loopkit.demo.progress import LiveProgress
from loopkit.demo.run import bundled_transcripts
from loopkit_tools.id_fixer import FILE_TOOLS, ID_FIXER_TOOL
from loopkit_ui.headless_desktop import HeadlessDesktop
from tests.fakes.fake_llm_server import FakeLLMServer, ScriptedToolCall, Turn

from .helpers import ID_CARD, ROOT, copy_card, run_demo

SCRIPT = ROOT / "examples" / "scripts" / "ids" / "notes_panel_ids.json"
NEW_IDS = {
    "self": "NotesPanel",
    "self.text_label": "NotesTextInputLabel",
    "self.text_input": "NotesTextInput",
    "self.count_label": "NotesCharacterCountLabel",
    "self.clear_button": "NotesClearButton",
}
# An added line that sets an id, and nothing else: `<owner>.set<Kind>("<Id>")`.
ID_LINE = re.compile(
    r"^\+(?P<indent>\s+)(?P<owner>self(?:\.\w+)?)\."
    r'(?P<kind>setObjectName|setAccessibleIdentifier)\("(?P<id>[A-Z][A-Za-z0-9]*)"\)$'
)


def changed_lines(diff: str) -> list[str]:
    """The added and removed lines of a unified diff (no file headers)."""
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    ]


def run_script(desktop: HeadlessDesktop, out: Path, *var: str) -> subprocess.CompletedProcess[str]:
    """The script runner's command line on the test's desktop."""
    options = ["--out", str(out), "--no-gif", "--screenshots", "none", "--no-system-log"]
    return subprocess.run(
        [sys.executable, "-m", "loopkit_ui.scripts", "run", *options, *var, str(SCRIPT)],
        cwd=ROOT,
        env=desktop.child_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.integration
@pytest.mark.ui
def test_id_fixing_run_adds_the_ids_and_touches_no_other_line(
    tmp_path: Path, headless_desktop: HeadlessDesktop
) -> None:
    card = copy_card(tmp_path, ID_CARD)
    run = run_demo(tmp_path, card)
    assert run.returncode == 0, run.output
    assert "RESULT: done" in run.output and Card.load(card).state is CardState.DONE

    # The run log shows the child run, linked to the main run.
    events = run.events()
    main_id = events[0]["run_id"]
    [child_run] = [e for e in events if e["type"] == "child_run"]
    assert child_run["run_id"] == main_id and child_run["data"]["tool"] == ID_FIXER_TOOL
    child = [e for e in events if e["run_id"] == child_run["data"]["child_run_id"]]
    assert child and {e.get("parent_run_id") for e in child} == {main_id}
    assert child[0]["type"] == "start" and child[0]["data"]["tools"] == list(FILE_TOOLS)
    assert ID_FIXER_TOOL in events[0]["data"]["tools"]
    assert [e["data"]["name"] for e in child if e["type"] == "tool"][-1] == "write_file"
    main_calls = [
        e["data"]["name"] for e in events if e["type"] == "tool" and e["run_id"] == main_id
    ]
    assert ID_FIXER_TOOL in main_calls and "write_file" not in main_calls  # it wrote nothing
    # ...and the summary shows it, with its own figures.
    child_end = child[-1]["data"]["totals"]
    assert (
        f"subagent    id_fixer (fix_missing_ids): {child_end['rounds']} rounds, "
        f"{child_end['tool_calls']} tool calls" in run.output
    ), run.output
    assert child_run["data"]["child_run_id"] in run.output

    # One commit: the app file and the note; the app's diff is only added id lines.
    assert run.git("rev-list", "--count", "HEAD").strip() == "2"
    files = run.git("show", "--name-only", "--format=", "HEAD").split()
    assert [f for f in files if not f.startswith("notes/")] == ["invoice_app/notes_panel.py"]
    assert any(f.startswith("notes/accessibility/") for f in files), files
    lines = changed_lines(run.git("diff", "--unified=0", "HEAD~1", "HEAD", "--", "invoice_app"))
    matches = [ID_LINE.match(line) for line in lines]
    assert lines and all(matches), [line for line in lines if not ID_LINE.match(line)]
    pairs: dict[str, set[str]] = {}
    for m in matches:
        assert m is not None and m["indent"] == " " * 8
        assert NEW_IDS[m["owner"]] == m["id"], m.group(0)
        pairs.setdefault(m["id"], set()).add(m["kind"])
    assert pairs == {i: {"setObjectName", "setAccessibleIdentifier"} for i in NEW_IDS.values()}
    assert run.git("status", "--porcelain").strip() == ""

    # The independent check: the script runner finds every control by id on the fixed app...
    fixed = run_script(headless_desktop, tmp_path / "fixed", "--var", f"app_dir={run.repo()}")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "10 passed, 0 failed" in fixed.stdout
    # ...and not on the unfixed one (the negative control: the first id is missing).
    unfixed = run_script(headless_desktop, tmp_path / "unfixed")
    assert unfixed.returncode == 1, unfixed.stdout + unfixed.stderr
    assert "no element with id or name 'NotesPanel'" in unfixed.stdout


def test_a_subagents_rounds_are_not_the_main_runs(tmp_path: Path) -> None:
    from rich.console import Console

    console = Console(file=(tmp_path / "out.txt").open("w"), force_terminal=True)
    progress = LiveProgress(console, max_rounds=60)

    def round_line(number: int, parent: str | None = None) -> dict[str, Any]:
        data = {"round": number, "input_tokens": 10, "output_tokens": 1, "calls": ["read_file"]}
        return {"type": "round", "data": data, "parent_run_id": parent}

    with progress:
        progress.on_event(round_line(4))
        progress.on_event(round_line(9, parent="main"))
        assert (progress.round, progress.tokens) == (4, 11)
        assert progress.tool == "subagent: read_file"
        progress.on_event({"type": "tool", "parent_run_id": "main",
                           "data": {"name": "write_file", "error": False, "ms": 1.0}})  # fmt: skip
        assert progress.tool == "subagent: write_file"
        progress.on_event({"type": "child_run", "run_id": "main",
                           "data": {"child_run_id": "c1", "name": "id_fixer", "tool": "fix"}})  # fmt: skip
        progress.on_event({"type": "run_end", "run_id": "c1", "parent_run_id": "main",
                           "data": {"status": "ok", "totals": {"rounds": 2, "tool_calls": 1,
                                    "input_tokens": 1000, "output_tokens": 20}}})  # fmt: skip
        progress.on_event({"type": "run_end", "run_id": "main", "data": {"status": "ok"}})
    assert progress.subagents == ["id_fixer (fix): 2 rounds, 1 tool calls, 1,020 tokens; run c1"]


def _turns(script: Script, prefix: str) -> list[Turn]:
    return [
        Turn(
            text=t.text or None,
            tool_calls=tuple(
                ScriptedToolCall(c.name, c.arguments, c.id or f"{prefix}_{n}_{i}")
                for i, c in enumerate(t.calls, start=1)
            ),
        )
        for n, t in enumerate(script.turns, start=1)
    ]


@pytest.mark.integration
@pytest.mark.ui
def test_with_a_real_model_the_subagent_asks_the_same_model(tmp_path: Path) -> None:
    """Through litellm's real HTTP path against a fake OpenAI server on 127.0.0.1: the main
    run's requests, then the id fixer's (its own instructions, the three file tools, the same
    model), then the main run's again; the server plays both transcripts' model turns."""
    main = Script.load(bundled_transcripts()[ID_CARD])
    child = Script.load(child_transcript(bundled_transcripts()[ID_CARD]))
    handover = next(
        n for n, t in enumerate(main.turns) if ID_FIXER_TOOL in [c.name for c in t.calls]
    )
    turns = _turns(main, "main")
    card = copy_card(tmp_path, ID_CARD)
    with FakeLLMServer("openai") as server:
        server.script([*turns[: handover + 1], *_turns(child, "child"), *turns[handover + 1 :]])
        run = run_demo(
            tmp_path,
            card,
            "--model",
            "openai/gpt-5",
            env={"LOOPKIT_API_BASE": server.api_base, "OPENAI_API_KEY": "sk-test-0123456789abcd"},
        )
        bodies = [r.body for r in server.requests if r.method == "POST"]
    assert run.returncode == 0, run.output
    assert len(bodies) == len(main.turns) + len(child.turns)
    first_child = handover + 1
    for n, body in enumerate(bodies):
        by_child = first_child <= n < first_child + len(child.turns)
        system = body["messages"][0]["content"]
        tools = sorted(t["function"]["name"] for t in body["tools"]) if "tools" in body else []
        assert body["model"] == "gpt-5", n  # the same model for both agents
        assert ("You add missing accessible ids" in str(system)) is by_child, n
        if by_child:
            assert tools == sorted(FILE_TOOLS), n
        else:
            # the id fixer's tool is offered on every request (disclosure defers only UI tools
            # and write_file); ui_missing_ids once the first turn's load_tools loaded it
            assert ID_FIXER_TOOL in tools and ("ui_missing_ids" in tools) is (n > 0), n
    [child_run] = [e for e in run.events() if e["type"] == "child_run"]
    child_start = next(e for e in run.events() if e["run_id"] == child_run["data"]["child_run_id"])
    assert child_start["data"]["model"] == "openai/gpt-5"
