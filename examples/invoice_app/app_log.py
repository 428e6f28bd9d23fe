"""The app's log file: lines ``YYYY-MM-DD HH:MM:SS LEVEL message``.

The path comes from the environment variable INVOICE_APP_LOG (default: invoice_app.log in
the system temp folder). Test tools watch this file for new ERROR lines.

Optionally (environment variable INVOICE_APP_SYSLOG) errors also go to the system log: a unix
socket path such as ``/dev/log``, or ``host:port`` for UDP. Test tools watch the system log for
new entries of the app, as they would watch the event log on Windows.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

LOGGER_NAME = "invoice_app"
LOG_ENV_VAR = "INVOICE_APP_LOG"
SYSLOG_ENV_VAR = "INVOICE_APP_SYSLOG"
SYSLOG_IDENT = "invoice_app"


def log_path_from_env(env: Mapping[str, str] | None = None) -> Path:
    """The log file path named by INVOICE_APP_LOG, or the default in the temp folder."""
    env = os.environ if env is None else env
    configured = env.get(LOG_ENV_VAR, "").strip()
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "invoice_app.log"


class LineFormatter(logging.Formatter):
    """Puts the timestamp and level in front of every line, also of a multi-line traceback,
    so that a reader looking for "ERROR" lines sees all of it."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(message)s", datefmt="%Y-%m-%d %H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        first, *rest = text.splitlines() or [""]
        prefix = f"{self.formatTime(record, self.datefmt)} {record.levelname} "
        return "\n".join([first, *(prefix + line for line in rest)])


def syslog_handler_from_env(env: Mapping[str, str] | None = None) -> logging.Handler | None:
    """A handler sending ERROR records to the system log named by INVOICE_APP_SYSLOG, or None
    when the variable is unset or the log cannot be reached (the app runs on without it)."""
    env = os.environ if env is None else env
    address = env.get(SYSLOG_ENV_VAR, "").strip()
    if not address:
        return None
    target: str | tuple[str, int] = address
    host, _, port = address.rpartition(":")
    if "/" not in address and host and port.isdigit():
        target = (host, int(port))
    try:
        handler = logging.handlers.SysLogHandler(address=target)
    except OSError:
        return None
    handler.ident = f"{SYSLOG_IDENT}[{os.getpid()}]: "
    handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    return handler


def configure_logging(path: Path | None = None) -> logging.Logger:
    """Return the app logger, appending to ``path`` (default: log_path_from_env()).

    Calling it again replaces the previous handlers (tests open several windows). Errors also
    go to the system log when INVOICE_APP_SYSLOG is set (see :func:`syslog_handler_from_env`).
    """
    path = log_path_from_env() if path is None else path
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(LineFormatter())
    logger.addHandler(handler)
    system = syslog_handler_from_env()
    if system is not None:
        logger.addHandler(system)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
