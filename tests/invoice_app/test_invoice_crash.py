"""The planted crash: a malformed file opened with Open reaches the excepthook, which logs
it at ERROR and shows the crash dialog (exception type, stack line, Continue / Quit)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from invoice_app.app_log import configure_logging
from invoice_app.crash_dialog import CrashHandler, build_crash_dialog, install_excepthook
from invoice_app.main_window import MainWindow
from invoice_app.storage import InvoiceFormatError
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

STACK_LINE = re.compile(r'File ".+", line \d+, in \w+')


@pytest.fixture
def restore_excepthook() -> Iterator[None]:
    saved = sys.excepthook
    yield
    sys.excepthook = saved


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    path = tmp_path / "malformed.json"
    path.write_text('{"items": [{"description": "x", "quantity": "two"}]}')
    return path


def answer_crash_dialog(button_id: str, seen: list[dict[str, Any]]) -> None:
    """Click ``button_id`` in the crash dialog once it is open (polls from the event loop)."""

    def attempt(tries_left: int) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and box.isVisible():
            seen.append(
                {
                    "id": box.accessibleIdentifier(),
                    "title": box.windowTitle(),
                    "text": box.text(),
                    "buttons": sorted(b.text() for b in box.buttons()),
                }
            )
            button = box.findChild(QPushButton, button_id)
            assert button is not None
            button.click()
        elif tries_left:
            QTimer.singleShot(20, lambda: attempt(tries_left - 1))

    QTimer.singleShot(0, lambda: attempt(100))


def raise_and_capture() -> tuple[type[BaseException], BaseException, Any]:
    try:
        raise InvoiceFormatError("broken.json: expected an object")
    except InvoiceFormatError as exc:
        return type(exc), exc, exc.__traceback__


def test_build_crash_dialog_content(qapp: Any) -> None:
    box = build_crash_dialog(*raise_and_capture())
    try:
        assert box.accessibleIdentifier() == "CrashDialog"
        assert box.windowTitle() == "Invoice Editor"
        assert "InvoiceFormatError: broken.json: expected an object" in box.text()
        assert STACK_LINE.search(box.text())
        ids = {b.accessibleIdentifier(): b.text() for b in box.buttons()}
        assert ids == {"CrashContinueButton": "Continue", "CrashQuitButton": "Quit"}
        assert not box.isVisible()
    finally:
        box.deleteLater()


def test_install_excepthook_replaces_sys_excepthook(
    qapp: Any, log_path: Path, restore_excepthook: None
) -> None:
    handler = install_excepthook(configure_logging(log_path))
    assert sys.excepthook is handler
    assert isinstance(handler, CrashHandler)


def test_handler_logs_error_with_traceback(
    qapp: Any, log_path: Path, restore_excepthook: None
) -> None:
    handler = CrashHandler(configure_logging(log_path), show_dialog=False)
    handler(*raise_and_capture())
    lines = log_path.read_text().splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.match(stamp + " ERROR Unhandled InvoiceFormatError: ", lines[0])
    assert any(STACK_LINE.search(line) for line in lines)
    assert all(" ERROR " in line for line in lines)


def test_open_malformed_file_shows_crash_dialog_and_continue_keeps_app(
    window: MainWindow, malformed: Path, log_path: Path, restore_excepthook: None
) -> None:
    install_excepthook(window.logger)
    seen: list[dict[str, Any]] = []
    window.file_path_input.setText(str(malformed))
    answer_crash_dialog("CrashContinueButton", seen)
    window.open_button.click()  # returns after the dialog was answered

    assert len(seen) == 1
    dialog = seen[0]
    assert dialog["id"] == "CrashDialog"
    assert dialog["title"] == "Invoice Editor"
    assert dialog["buttons"] == ["Continue", "Quit"]
    assert "InvoiceFormatError" in dialog["text"]
    assert "items[0].quantity should be a number" in dialog["text"]
    assert STACK_LINE.search(dialog["text"])
    assert "storage.py" in dialog["text"]
    # The app goes on with the invoice it showed before.
    assert window.table.rowCount() == 2
    assert window.isVisible()
    log = log_path.read_text()
    assert re.search(r"^\S+ \S+ ERROR Unhandled InvoiceFormatError: ", log, re.MULTILINE)


def test_quit_in_crash_dialog_ends_event_loop_with_status_1(
    window: MainWindow, malformed: Path, restore_excepthook: None, qapp: QApplication
) -> None:
    install_excepthook(window.logger)
    seen: list[dict[str, Any]] = []
    window.file_path_input.setText(str(malformed))
    answer_crash_dialog("CrashQuitButton", seen)
    click: Callable[[], None] = window.open_button.click
    QTimer.singleShot(0, click)
    # Safety net so a broken Quit cannot hang the suite: a later exit(99) fails the assert.
    safety = QTimer()
    safety.setSingleShot(True)
    safety.timeout.connect(lambda: qapp.exit(99))
    safety.start(5000)
    status = qapp.exec()
    safety.stop()
    assert len(seen) == 1
    assert status == 1


def test_bad_json_also_reaches_the_crash_dialog(
    window: MainWindow, tmp_path: Path, restore_excepthook: None
) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{oops")
    install_excepthook(window.logger)
    seen: list[dict[str, Any]] = []
    window.file_path_input.setText(str(path))
    answer_crash_dialog("CrashContinueButton", seen)
    window.open_button.click()
    assert len(seen) == 1
    assert "is not valid JSON" in seen[0]["text"]
