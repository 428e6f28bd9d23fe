"""The bundled transcripts are what scripts/make_transcripts.py writes from the current app."""

from __future__ import annotations

import subprocess
import sys

from loopkit import Script
from loopkit.demo.run import bundled_transcripts

from .helpers import CARD_NAMES, ROOT


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
    assert sorted(bundled) == sorted(CARD_NAMES)
    for name in CARD_NAMES:
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
