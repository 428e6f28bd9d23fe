"""Paths for the UI tests (the `headless_desktop` fixture comes from tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = REPO / "examples"
MINI_APP = Path(__file__).resolve().parent / "fixtures" / "mini_app.py"
PYTHON = sys.executable
