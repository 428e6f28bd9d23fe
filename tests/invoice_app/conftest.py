"""Fixtures for the invoice app tests: the app package on sys.path, one offscreen
QApplication for the session, and a fresh window logging to a temp file per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
APP_DIR = EXAMPLES_DIR / "invoice_app"

# Widget tests need no display; must be set before the QApplication exists.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))


@pytest.fixture(scope="session")
def qapp() -> object:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    return app if app is not None else QApplication([])


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "invoice_app.log"


@pytest.fixture
def window(qapp: object, log_path: Path) -> Iterator[object]:
    from invoice_app.app_log import configure_logging
    from invoice_app.main_window import MainWindow

    win = MainWindow(configure_logging(log_path))
    win.show()
    yield win
    win.close()
    win.deleteLater()
