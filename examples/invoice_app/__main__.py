"""Start the Invoice Editor: ``python -m invoice_app [--file PATH]``."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from .app_log import configure_logging
from .crash_dialog import install_excepthook
from .main_window import MainWindow


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m invoice_app", description=__doc__)
    parser.add_argument("--file", metavar="PATH", help="open this invoice file at start")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the app; returns the exit status (1 after Quit in the crash dialog)."""
    args = parse_args(argv)
    logger = configure_logging()
    app = QApplication(sys.argv[:1])
    app.setApplicationName("Invoice Editor")
    crash_handler = install_excepthook(logger)

    def quit_on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("Received signal %d, quitting", signum)
        # No new crash dialog from now on; quit from inside whichever event loop runs next,
        # even the crash dialog's own loop if it is just being opened.
        crash_handler.show_dialog = False
        QTimer.singleShot(0, app.quit)

    signal.signal(signal.SIGTERM, quit_on_signal)
    signal.signal(signal.SIGINT, quit_on_signal)
    # Python runs signal handlers only between bytecodes; while Qt's C++ event loop waits,
    # none run. A periodic no-op timer hands control back to Python regularly.
    signal_tick = QTimer()
    signal_tick.timeout.connect(lambda: None)
    signal_tick.start(200)

    window = MainWindow(logger)
    window.show()
    if args.file:
        window.file_path_input.setText(args.file)
        # Open from inside the event loop, so a malformed file reaches the crash dialog
        # exactly as if Open had been clicked.
        QTimer.singleShot(0, window.open_file)
    logger.info("Started")
    status = app.exec()
    logger.info("Exited with status %d", status)
    return status


if __name__ == "__main__":
    sys.exit(main())
