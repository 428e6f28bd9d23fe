"""The demo with the scripted model never imports litellm (it takes seconds to import), in the
process that checks the settings nor in the run inside the headless desktop."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def test_a_scripted_run_imports_no_litellm(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    # Every Python process of the run reports its imports on its stderr; the demo's own two
    # (the checks, then the run inside the desktop) reach this output.
    run = run_demo(tmp_path, card, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.output
    imports = [line for line in run.output.splitlines() if line.startswith("import time:")]
    assert any(line.endswith("| loopkit.demo.run") for line in imports)  # really reported
    assert [line for line in imports if "litellm" in line] == []
    assert run.events()[-1]["data"]["status"] == "done"
