"""The SQLite database of runs and findings.

``runs``: one row per run. ``findings``: one row per fingerprint, with ``count`` = how many runs
hit it. ``finding_runs``: which runs hit which finding (and after which step). Runs are stored
redacted (:func:`~loopkit_ui.scripts.redact.redacted_result`): no secret reaches the file.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loopkit.errors import KeepsFieldsWhenPickled
from loopkit.redaction import Redactor
from loopkit_ui.scripts.findings import normalise_stack_line, normalise_title
from loopkit_ui.scripts.redact import redacted_result
from loopkit_ui.scripts.results import RunResult

__all__ = ["ResultStore", "ResultStoreError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    script TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    ms REAL NOT NULL,
    steps_total INTEGER NOT NULL,
    steps_passed INTEGER NOT NULL,
    steps_failed INTEGER NOT NULL,
    steps_skipped INTEGER NOT NULL,
    findings INTEGER NOT NULL,
    error TEXT,
    app_exit INTEGER,
    run_dir TEXT NOT NULL,
    report TEXT,
    gif TEXT,
    result_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS findings (
    fingerprint TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,
    title TEXT NOT NULL,
    stack_line TEXT NOT NULL,
    summary TEXT NOT NULL,
    detail TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS finding_runs (
    fingerprint TEXT NOT NULL REFERENCES findings(fingerprint),
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    step TEXT,
    oracle TEXT NOT NULL,
    expected INTEGER NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (fingerprint, run_id)
);
"""


_TABLES = frozenset({"runs", "findings", "finding_runs"})


class ResultStoreError(KeepsFieldsWhenPickled, ValueError):
    """The file cannot serve as the results database (missing, not SQLite, someone else's):
    ``path`` and ``reason``."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ResultStore:
    """Runs and findings in one SQLite file (created on first use). ``read_only``: only read
    an existing database, never create or change one.

    Every run is redacted by ``redactor`` (default: a :class:`~loopkit.redaction.Redactor`
    reading the environment when the run is recorded) before it is written.
    """

    def __init__(
        self, path: str | Path, *, read_only: bool = False, redactor: Redactor | None = None
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.redactor = redactor

    def check(self) -> None:
        """Raise :class:`ResultStoreError` unless the file is a results database, or (when not
        read-only) absent and to be created. Reads only; creates nothing."""
        if not self.path.exists():
            if self.read_only:
                raise ResultStoreError(self.path, "no such file (expected a results database)")
            return
        if not self.path.is_file():
            raise ResultStoreError(self.path, "not a regular file (expected a database)")
        try:
            with contextlib.closing(self._open_read_only()) as db:
                rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                tables = {row[0] for row in rows}
        except sqlite3.Error as error:
            raise ResultStoreError(self.path, f"not an SQLite database ({error})") from None
        if not tables:
            if self.read_only:
                raise ResultStoreError(self.path, "empty (expected a database written by run)")
            return  # an empty file or database: ours to fill
        if not tables >= _TABLES:
            listed = ", ".join(sorted(tables)) or "none"
            raise ResultStoreError(
                self.path, f"an SQLite database, but not one of results (tables: {listed})"
            )

    def _open_read_only(self) -> sqlite3.Connection:
        return sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            self.check()
            connection = self._open_read_only()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Runs from several processes may share the file: wait for a lock, do not fail.
            connection = sqlite3.connect(self.path, timeout=30)
        connection.row_factory = sqlite3.Row
        try:
            if not self.read_only:
                connection.executescript(_SCHEMA)
            with connection:
                yield connection
        finally:
            connection.close()

    def record(self, result: RunResult) -> None:
        """Store a run, and each of its findings once (count = number of runs that hit it)."""
        result = redacted_result(result, self.redactor)
        unique = result.unique_findings()
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.run_id,
                    result.script,
                    result.name,
                    result.status,
                    result.started,
                    result.finished,
                    result.ms,
                    len(result.steps),
                    result.count("passed"),
                    result.count("failed"),
                    result.count("skipped"),
                    len(unique),
                    result.error,
                    result.app_exit,
                    result.run_dir,
                    result.report,
                    result.gif,
                    result.model_dump_json(),
                ),
            )
            for finding in unique:
                fp = finding.fingerprint
                seen = db.execute(
                    "SELECT 1 FROM finding_runs WHERE fingerprint = ? AND run_id = ?",
                    (fp, result.run_id),
                ).fetchone()
                if seen:
                    continue
                db.execute(
                    "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1) "
                    "ON CONFLICT(fingerprint) DO UPDATE SET count = count + 1, "
                    "last_seen = excluded.last_seen, summary = excluded.summary",
                    (
                        fp,
                        finding.kind,
                        finding.severity,
                        normalise_title(finding.title),
                        normalise_stack_line(finding.stack_line),
                        finding.summary,
                        finding.detail,
                        result.started,
                        result.started,
                    ),
                )
                db.execute(
                    "INSERT INTO finding_runs VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        fp,
                        result.run_id,
                        finding.step,
                        finding.oracle,
                        int(finding.expected),
                        finding.summary,
                    ),
                )

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first (without the JSON blob)."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY started, rowid").fetchall()
        # sqlite3.Row iterates over values, not keys: keys() is needed here.
        return [{k: row[k] for k in row.keys() if k != "result_json"} for row in rows]  # noqa: SIM118

    def run(self, run_id: str) -> RunResult:
        """One run as stored (KeyError when unknown)."""
        with self._connect() as db:
            row = db.execute("SELECT result_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"no run {run_id!r} in {self.path}")
        return RunResult.model_validate(json.loads(row[0]))

    def findings(self) -> list[dict[str, Any]]:
        """Every finding with its count and the runs that hit it, most frequent first."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM findings ORDER BY count DESC, first_seen").fetchall()
            hits = db.execute(
                "SELECT fingerprint, run_id FROM finding_runs ORDER BY rowid"
            ).fetchall()
        runs: dict[str, list[str]] = {}
        for hit in hits:
            runs.setdefault(hit["fingerprint"], []).append(hit["run_id"])
        return [{**dict(row), "runs": runs.get(row["fingerprint"], [])} for row in rows]
