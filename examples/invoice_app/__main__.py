"""Start the Invoice Editor: ``python -m invoice_app [--file PATH]``."""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType

from PySide6.QtCore import QSocketNotifier, QTimer
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
    # none run. The signal writes a byte to a socket Qt watches, which wakes the loop into
    # Python at once (a periodic timer would make every stop wait up to its period).
    wake_up = _SignalWakeUp()

    window = MainWindow(logger)
    window.show()
    if args.file:
        window.file_path_input.setText(args.file)
        # Open from inside the event loop, so a malformed file reaches the crash dialog
        # exactly as if Open had been clicked.
        QTimer.singleShot(0, window.open_file)
    logger.info("Started")
    status = app.exec()
    wake_up.close()
    logger.info("Exited with status %d", status)
    return status


class _SignalWakeUp:
    """Wakes Qt's event loop into Python as soon as a signal arrives: the C-level handler
    writes a byte to ``signal.set_wakeup_fd``'s socket, which Qt watches."""

    def __init__(self) -> None:
        self._receiver, self._sender = socket.socketpair()
        self._receiver.setblocking(False)
        self._sender.setblocking(False)
        signal.set_wakeup_fd(self._sender.fileno())
        self._notifier = QSocketNotifier(self._receiver.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            self._receiver.recv(4096)

    def close(self) -> None:
        """Stop waking the loop; the sockets are closed."""
        signal.set_wakeup_fd(-1)
        self._notifier.setEnabled(False)
        self._receiver.close()
        self._sender.close()


if __name__ == "__main__":
    sys.exit(main())
