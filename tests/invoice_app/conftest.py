"""Fixtures for the invoice app tests: the app package on sys.path, one offscreen
QApplication for the session, and a fresh window logging to a temp file per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
APP_DIR = EXAMPLES_DIR / "invoice_app"

if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))


@pytest.fixture(scope="session")
def qapp() -> object:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    # Offscreen: no display needed. Passed as an argument, not through os.environ, so
    # processes that other tests start (the app under Xvfb) do not inherit it.
    return app if app is not None else QApplication(["invoice-tests", "-platform", "offscreen"])


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


@pytest.fixture(autouse=True)
def modal_dialog_watchdog(qapp: object) -> Iterator[None]:
    """Close a modal dialog nobody answers (after ~2 s of event-loop ticks) and fail the test.

    A dialog's exec() blocks the test forever otherwise, e.g. after a card adds a delete
    confirmation; tests that expect a dialog answer it within a few milliseconds.
    """
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QDialog

    closed: list[str] = []
    ticks: dict[int, int] = {}

    def check() -> None:
        widget = QApplication.activeModalWidget()
        if widget is None:
            return
        ticks[id(widget)] = ticks.get(id(widget), 0) + 1
        if ticks[id(widget)] >= 20:
            text = getattr(widget, "text", lambda: "")()
            closed.append(f"{widget.windowTitle()!r}: {text!r}")
            if isinstance(widget, QDialog):
                widget.reject()
            else:
                widget.close()

    timer = QTimer()
    timer.timeout.connect(check)
    timer.start(100)
    yield
    timer.stop()
    assert not closed, f"unanswered modal dialog(s) closed by the watchdog: {closed}"
