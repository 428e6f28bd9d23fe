"""``--record-transcript``: a demo run recorded once replays with ``--transcript``, strictly, to
the same result: the transcript generator works for any card, not only the bundled ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit.providers.scripted import Script

from .helpers import ROOT, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

NAME = "total-ignores-the-discount"


def test_a_recorded_run_replays_to_the_same_commit(tmp_path: Path) -> None:
    recording = tmp_path / "recorded.json"
    first = run_demo(
        tmp_path / "a", copy_card(tmp_path, NAME), "--record-transcript", str(recording)
    )
    assert first.returncode == 0, first.output
    assert f"recorded in {recording}" in first.output.replace("\n", "")
    bundled = Script.load(ROOT / "src/loopkit/demo/transcripts" / f"{NAME}.json")
    recorded = Script.load(recording)
    assert [t.text for t in recorded.turns] == [t.text for t in bundled.turns]
    assert [[c.name for c in t.calls] for t in recorded.turns] == [
        [c.name for c in t.calls] for t in bundled.turns
    ]
    calls = [c for t in json.loads(recording.read_text())["turns"] for c in t.get("calls", [])]
    assert calls and all("expect" in c for c in calls)  # every result came back and was kept

    again = tmp_path / "b"
    again.mkdir()
    second = run_demo(again, copy_card(again, NAME), "--transcript", str(recording))
    assert second.returncode == 0, second.output
    assert f"it plays the transcript {recording}" in second.output.replace("\n", "")
    assert "RESULT: done" in second.output
    assert second.git("log", "-1", "--format=%s") == first.git("log", "-1", "--format=%s")
    assert second.git("diff", "HEAD~1", "--stat") == first.git("diff", "HEAD~1", "--stat")
