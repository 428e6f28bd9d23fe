"""``python -m loopkit_ui.wait_app --app-name NAME``: wait until the app shows a window.

A readiness check for whatever starts the app (``loopkit_tools``' ``start_app`` runs it as its
``app_ready`` command): it ends as soon as the application is on the accessibility bus with at
least one window, instead of a fixed delay that is too long on a fast machine and too short on a
loaded one. Exit status 0 ready, 1 not ready within ``--timeout``, 2 bad input, 130 interrupted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from loopkit_ui.cli_input import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Interrupted,
    OneLineParser,
    finish,
    interrupt_on_signals,
    positive_seconds,
)

__all__ = ["main", "wait_for_window", "window_shown"]

PROG = "python -m loopkit_ui.wait_app"
_POLL_S = 0.02  # a look at the bus costs a few D-Bus calls, about a millisecond


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG,
        description="Wait until the application NAME is on the accessibility bus with a window.",
        epilog="Exit status: 0 ready, 1 not ready in time, 2 bad input, 130 interrupted.",
    )
    parser.add_argument("--app-name", required=True, help="the application's accessible name")
    parser.add_argument(
        "--timeout", type=positive_seconds, default=10.0, help="seconds to wait (default 10)"
    )
    parser.add_argument("--backend", choices=("atspi", "uia"), help="default: the platform's")
    return parser


def wait_for_window(app_name: str, timeout: float, backend_name: str | None = None) -> str:
    """Wait until ``app_name`` is registered and lists a window; answer what was seen.
    Raises :class:`~loopkit_ui.backends.protocol.UIError` when it is not ready in ``timeout``.
    Also called in process, from a worker thread (through :func:`window_shown`)."""
    from loopkit_ui.backends import create_backend
    from loopkit_ui.backends.protocol import AppNotFoundError, UIError

    deadline = time.monotonic() + timeout
    # Each attach looks once (the backend's own wait polls every 0.1 s): this loop polls faster.
    backend = create_backend(backend_name, app_name=app_name, attach_timeout=0.0)
    try:
        while True:
            try:
                app = backend.attach()
            except AppNotFoundError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_POLL_S)
                continue
            windows = backend.list_windows()
            if windows:
                return f"{app.name} (pid {app.pid}) shows {windows[0].title!r}"
            if time.monotonic() >= deadline:
                raise UIError(f"{app.name} (pid {app.pid}) is running but shows no window")
            time.sleep(_POLL_S)
    finally:
        backend.close()


def window_shown(app_name: str, timeout: float) -> bool:
    """Whether ``app_name`` shows a window within ``timeout`` seconds (:func:`wait_for_window`
    as a yes or no): the check ``loopkit_tools.LocalTools`` takes as its ``window_check``, for
    ``app_ready`` kind ``window``."""
    from loopkit_ui.backends.protocol import UIError

    try:
        wait_for_window(app_name, timeout)
    except UIError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    from loopkit_ui.backends.protocol import UIError

    args = _parser().parse_args(argv)
    try:
        with interrupt_on_signals():
            print(f"ready: {wait_for_window(args.app_name, args.timeout, args.backend)}")
            return EXIT_OK
    except UIError as error:
        print(f"{PROG}: not ready: {error}", file=sys.stderr)
        return EXIT_FAILED
    except (Interrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    finish(main())
