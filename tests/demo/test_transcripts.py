"""The bundled transcripts are what scripts/make_transcripts.py writes from the current app."""

from __future__ import annotations

import subprocess
import sys

from loopkit import Script
from loopkit.cards.config import RunnerConfig
from loopkit.demo.id_fixer_tools import child_transcript
from loopkit.demo.run import bundled_transcripts
from loopkit.middleware.tool_disclosure import LOAD_TOOLS, ToolDisclosure

from .helpers import CARD_NAMES, EVAL_CARDS, ID_CARD, ROOT


def test_bundled_transcripts_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/make_transcripts.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_card_has_a_transcript_that_ends_with_result_done() -> None:
    bundled = bundled_transcripts()
    assert sorted(bundled) == sorted([*CARD_NAMES, ID_CARD, *EVAL_CARDS])
    for name in [*CARD_NAMES, *EVAL_CARDS]:
        script = Script.load(bundled[name])
        assert script.turns[-1].text.rstrip().endswith("RESULT: done")
        calls = [c for t in script.turns for c in t.calls]
        # every tool result is checked: strict replay fails where the app answers differently
        assert all(c.expect is not None for c in calls), name
        names = [c.name for c in calls]
        # the fix is edited in place (only the changed pieces travel, not the whole file)
        edits = [i for i, n in enumerate(names) if n == "edit_file"]
        assert names.count("git_commit") == 1 and edits and "write_file" not in names
        assert names.index("build_app") > edits[-1]


def test_the_develop_cards_use_only_the_tools_offered_from_the_start() -> None:
    # A load changes the tools, which come first in the prompt: Anthropic's cache then writes
    # the whole prompt again. The default core holds what the develop cards use, so none loads.
    config = RunnerConfig()
    disclosure = ToolDisclosure(config.core_tools, defer=config.defer_tools)
    for name in [*CARD_NAMES, *EVAL_CARDS]:
        names = {c.name for t in Script.load(bundled_transcripts()[name]).turns for c in t.calls}
        assert LOAD_TOOLS not in names, name
        assert all(disclosure.is_core(n) for n in names), (name, sorted(names))


def test_the_id_fixing_card_hands_the_writing_to_the_subagent() -> None:
    """The main run never writes a file: the id fixer (its own transcript, file tools only)
    does, between the main run's ui_missing_ids and its build; every result is checked."""
    main = [c for t in Script.load(bundled_transcripts()[ID_CARD]).turns for c in t.calls]
    child_path = child_transcript(bundled_transcripts()[ID_CARD])
    child = [c for t in Script.load(child_path).turns for c in t.calls]
    assert all(c.expect is not None for c in [*main, *child])
    names = [c.name for c in main]
    assert "write_file" not in names and names.count("git_commit") == 1
    assert names.index("ui_missing_ids") < names.index("fix_missing_ids")
    assert names.index("fix_missing_ids") < names.index("build_app") < names.index("write_note")
    assert {c.name for c in child} <= {"list_files", "read_file", "write_file"}
    assert [c.name for c in child].count("write_file") == 1


def test_every_develop_transcript_cites_evidence_for_every_checkable_criterion() -> None:
    """The develop role verifies: each bundled run records, for each criterion of its card that
    is not (manual), checks by the ids it gave them, after its last build."""
    from loopkit import Card

    for name in [*CARD_NAMES, ID_CARD, *EVAL_CARDS]:
        criteria = Card.load(ROOT / "examples" / "cards" / f"{name}.md").criteria
        calls = [c for t in Script.load(bundled_transcripts()[name]).turns for c in t.calls]
        names = [c.name for c in calls]
        cited = {
            c.arguments["criterion"]: c.arguments["calls"]
            for c in calls
            if c.name == "record_evidence"
        }
        assert sorted(cited) == [c.id for c in criteria if not c.manual], name
        ids = {c.id: i for i, c in enumerate(calls) if c.id}
        build = max(i for i, n in enumerate(names) if n == "build_app")
        for criterion, given in cited.items():
            assert all(ids[g] > build for g in given), (name, criterion)
