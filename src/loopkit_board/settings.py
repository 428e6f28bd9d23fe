"""The board's and the Slack bot's settings, checked before anything listens or is created.

Bad input at start is one line and exit status 2, with nothing bound and no folder made (as
docs/security.md promises for every entry point): a data folder that is a file or cannot be
written, a runs folder likewise, a SQLite database whose folder does not exist. The data and
runs folders are made when missing, one level only (their parent must exist); the folder of a
database named explicitly is never made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from loopkit.cards.config import ConfigError

if TYPE_CHECKING:
    from loopkit.cards.config import RunnerConfig

__all__ = ["check_database", "check_folder", "check_service_settings"]


def check_folder(path: Path, what: str) -> None:
    """``path`` is a folder this process can write in, or a missing one whose parent is such a
    folder (it is made at start); :class:`~loopkit.cards.config.ConfigError` naming ``what``."""
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"{what} {path}: not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{what} {path}: cannot write in it (permission denied)")
        return
    parent = path.absolute().parent
    if not parent.is_dir():
        raise ConfigError(
            f"{what} {path}: its folder {parent} does not exist; create it first (only the "
            "last folder is made)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path}: cannot create it in {parent} (permission denied)")


def check_database(config: RunnerConfig) -> None:
    """A SQLite database's folder exists (or is the runs folder, made at start) and the file,
    when there, is a regular file; nothing is created. Another database is checked when the
    durable runtime connects."""
    from loopkit.demo.durable_runs import database_for

    url = database_for(config)
    if not url.startswith("sqlite:///"):
        return
    path = Path(url.removeprefix("sqlite:///"))
    what = f"database {url}"
    if path.exists() and not path.is_file():
        raise ConfigError(f"{what}: not a file")
    if path.parent == config.runs_dir.absolute() or path.parent == config.runs_dir.resolve():
        return
    if not path.parent.is_dir():
        raise ConfigError(
            f"{what}: the folder {path.parent} does not exist; create it first (the folder of "
            "a database is never made)"
        )
    target = path if path.exists() else path.parent
    if not os.access(target, os.W_OK):
        raise ConfigError(f"{what}: cannot write {target} (permission denied)")


def check_service_settings(
    config: RunnerConfig, data_dir: Path | None, *, data_dir_name: str = "--data-dir"
) -> None:
    """Everything a :class:`~loopkit_board.service.BoardService` will write at start: the runs
    folder, the data folder (default: the runs folder; ``data_dir_name`` names its setting in
    the message) and the database."""
    check_folder(config.runs_dir, "runs folder (runs_dir, LOOPKIT_RUNS_DIR)")
    if data_dir is not None:
        check_folder(data_dir, data_dir_name)
    check_database(config)
