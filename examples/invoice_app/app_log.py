"""The app's log file: lines ``YYYY-MM-DD HH:MM:SS LEVEL message``.

The path comes from the environment variable INVOICE_APP_LOG (default: invoice_app.log in
the system temp folder). Test tools watch this file for new ERROR lines.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

LOGGER_NAME = "invoice_app"
LOG_ENV_VAR = "INVOICE_APP_LOG"


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


def configure_logging(path: Path | None = None) -> logging.Logger:
    """Return the app logger, appending to ``path`` (default: log_path_from_env()).

    Calling it again replaces the previous file handler (tests open several windows).
    """
    path = log_path_from_env() if path is None else path
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(LineFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
