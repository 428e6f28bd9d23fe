"""Fixtures for the UI tests: one headless desktop per session (from loopkit_ui.testing)."""

from __future__ import annotations

import sys
from pathlib import Path

from loopkit_ui.testing import headless_desktop  # noqa: F401  (a fixture)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = REPO / "examples"
MINI_APP = Path(__file__).resolve().parent / "fixtures" / "mini_app.py"
PYTHON = sys.executable
