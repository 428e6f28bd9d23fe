"""Checks of a demo run's settings that need nothing else of the run: where the log and the run
folders go, durable runs, the card file (bad input is exit status 2, nothing created)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rich.console import Console

from loopkit.cards import CardState, ConfigError, RunnerConfig, mark_failed_in_file, read_card_text
from loopkit.demo.progress import summary_table
from loopkit.demo.workspace import slug
from loopkit.errors import CardError

__all__ = [
    "check_creatable",
    "check_durable",
    "check_log_destination",
    "check_log_path",
    "read_card",
    "refuse_invalid_card",
]


def check_creatable(path: Path, what: str) -> None:
    """``path`` can be created: its nearest existing ancestor is a folder we may write in."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what} {path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path}: cannot create it, {ancestor} is not writable")


def check_log_path(log: Path | None) -> None:
    """The run log can be written at ``log`` (a regular file or a device; never a folder)."""
    if log is None:
        return
    what = "log (--log or `log` in the config)"
    try:
        mode = log.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        check_creatable(log, what)
        return
    except OSError as e:
        raise ConfigError(f"{what} {log}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} {log} is a directory; expected a file for the JSON-lines log")
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):  # a FIFO would block the run
        raise ConfigError(f"{what} {log} is not a regular file")
    if not os.access(log, os.W_OK):
        raise ConfigError(f"{what} {log} is not writable")


def check_log_destination(config: RunnerConfig) -> None:
    """The run log and the run folders can be written (``log``, ``runs_dir``)."""
    check_log_path(config.log)
    if config.runs_dir.exists() and not config.runs_dir.is_dir():
        raise ConfigError(f"runs_dir {config.runs_dir} is not a folder")
    check_creatable(config.runs_dir / "run", "runs_dir")


def check_durable(config: RunnerConfig) -> None:
    """Durable runs can start: DBOS is installed and the database setting makes sense (nothing
    is created here)."""
    from loopkit.durable.dbos_import import check_dbos_installed
    from loopkit.durable.errors import DurableError
    from loopkit.durable.runtime import DEFAULT_DATABASE_FILE, database_url

    try:
        check_dbos_installed()  # imported later, while the desktop starts (demo/__main__.py)
        url = database_url(config.database_url, default=config.runs_dir / DEFAULT_DATABASE_FILE)
    except DurableError as e:
        raise ConfigError(str(e)) from None
    if url.startswith("sqlite:///"):
        check_creatable(Path(url.removeprefix("sqlite:///")), "database (durable runs)")


def read_card(config: RunnerConfig, card_path: Path) -> str:
    """The card file's text; :class:`CardError` when it cannot be read (missing, a folder, above
    ``max_card_bytes``, not UTF-8): bad input, exit 2, the file is left as it is."""
    return read_card_text(card_path, max_bytes=config.max_card_bytes)


def refuse_invalid_card(
    config: RunnerConfig, card_path: Path, error: CardError, console: Console
) -> int:
    """A card that was read but is not valid: its log says why, it is marked Failed when it has
    front matter, a summary is shown; returns exit status 2."""
    from loopkit.middleware.run_log import RunLog

    runs_dir = config.runs_dir
    runs_dir.mkdir(parents=True, exist_ok=True)
    log_path = config.log or runs_dir / f"{slug(card_path.stem)}-invalid-card.jsonl"
    with RunLog(log_path) as log:
        log.result("failed", str(error), card_state=CardState.FAILED.value)
    marked = mark_failed_in_file(card_path, max_bytes=config.max_card_bytes)
    console.print(
        summary_table(
            status="failed",
            reason=str(error),
            totals=log.totals(),
            card_state="Failed" if marked else "unchanged (the file has no front matter)",
            commit=None,
            log_path=str(log_path),
            repo="none",
        )
    )
    return 2
