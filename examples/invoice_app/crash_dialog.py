"""The crash dialog: an app-wide sys.excepthook that logs an unhandled exception and shows it.

The dialog has the main window's title ("Invoice Editor"); test tools recognise it by its
content (exception type, a stack-trace line) and its Continue / Quit buttons.
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType

from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton, QWidget

DIALOG_TITLE = "Invoice Editor"
MAX_STACK_LINES = 6


def crash_text(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> str:
    """The dialog text: the exception type and message, then the innermost stack frames."""
    frames = traceback.extract_tb(tb)[-MAX_STACK_LINES:]
    stack = [f'  File "{f.filename}", line {f.lineno}, in {f.name}' for f in frames]
    lines = [
        "An unexpected error occurred.",
        "",
        f"{exc_type.__name__}: {exc}",
        "",
        "Traceback (most recent call last):",
        *stack,
    ]
    return "\n".join(lines)


def build_crash_dialog(
    exc_type: type[BaseException],
    exc: BaseException,
    tb: TracebackType | None,
    parent: QWidget | None = None,
) -> QMessageBox:
    """Build (not show) the crash dialog with Continue and Quit buttons."""
    box = QMessageBox(parent)
    box.setObjectName("CrashDialog")
    box.setAccessibleIdentifier("CrashDialog")
    box.setWindowTitle(DIALOG_TITLE)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setText(crash_text(exc_type, exc, tb))
    continue_button = box.addButton("Continue", QMessageBox.ButtonRole.AcceptRole)
    quit_button = box.addButton("Quit", QMessageBox.ButtonRole.DestructiveRole)
    _set_id(continue_button, "CrashContinueButton")
    _set_id(quit_button, "CrashQuitButton")
    box.setDefaultButton(continue_button)
    box.setEscapeButton(continue_button)
    return box


def _set_id(button: QPushButton, ident: str) -> None:
    button.setObjectName(ident)
    button.setAccessibleIdentifier(ident)


class CrashHandler:
    """sys.excepthook replacement: log the exception at ERROR, then ask Continue or Quit.

    Quit ends the event loop with exit status 1. ``show_dialog=False`` only logs (used where
    nobody can answer a dialog).
    """

    def __init__(self, logger: logging.Logger, show_dialog: bool = True) -> None:
        self.logger = logger
        self.show_dialog = show_dialog
        self._showing = False

    def __call__(
        self,
        exc_type: type[BaseException],
        exc: BaseException,
        tb: TracebackType | None,
    ) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        self.logger.error("Unhandled %s: %s", exc_type.__name__, exc, exc_info=(exc_type, exc, tb))
        app = QApplication.instance()
        # A second exception while the dialog is open is only logged: one dialog at a time.
        if not self.show_dialog or self._showing or not isinstance(app, QApplication):
            return
        self._showing = True
        try:
            box = build_crash_dialog(exc_type, exc, tb, app.activeWindow())
            box.exec()
            if box.clickedButton() is box.findChild(QPushButton, "CrashQuitButton"):
                self.logger.info("Quit after unhandled %s", exc_type.__name__)
                app.exit(1)
        finally:
            self._showing = False


def install_excepthook(logger: logging.Logger, show_dialog: bool = True) -> CrashHandler:
    """Install a CrashHandler as sys.excepthook and return it."""
    handler = CrashHandler(logger, show_dialog)
    sys.excepthook = handler
    return handler
