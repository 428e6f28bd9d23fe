"""examples/ui_refs_step.py: a scripted model completes a step with refs only (the invoice app's
Notes field has no id and shares its name with its label), checking every answer strictly, on
its own headless desktop through the real server and app."""

from __future__ import annotations

import subprocess

import pytest

from loopkit_ui.testing import desktop_available

from .conftest import PYTHON, REPO

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def test_a_scripted_model_completes_a_step_with_refs_only() -> None:
    if (missing := desktop_available()) is not None:
        pytest.skip(missing)
    done = subprocess.run([PYTHON, str(REPO / "examples" / "ui_refs_step.py")], cwd=REPO,
                          capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("RESULT: done"), done.stdout
    assert "10 characters" in done.stdout
