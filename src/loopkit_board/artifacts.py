"""What a run left on disk: its HTML reports, screenshots and GIFs, its commit's diff, findings.

A card run works in its own run folder (``runs/<time>-<card>/``: the scratch repository
``repo/``, ``run.jsonl``, ``ui/`` screenshots, and the script runner's ``report.html``,
``run.gif`` and ``results.sqlite`` when the run ran test scripts). Files are listed relative to
that folder and served only from inside it.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MAX_DIFF_CHARS", "RunArtifacts", "merge_findings", "run_artifacts"]

#: A diff is cut here in the page (the repository keeps it whole).
MAX_DIFF_CHARS = 200_000
_IMAGES = (".png", ".gif", ".jpg", ".jpeg", ".webp")
_MAX_FILES = 200


@dataclass(frozen=True, slots=True)
class RunArtifacts:
    """The files of one run folder worth showing (paths relative to ``folder``)."""

    folder: Path | None
    images: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    diff: str = ""
    findings_dbs: list[Path] = field(default_factory=list)


def _git(repo: Path, *args: str) -> str:
    # The run's repository is the model's: its configuration may name programs (an external
    # diff, a textconv, an fsmonitor); the safe git runs none, with the child environment.
    from loopkit_tools.safe_git import run_git

    try:
        done = run_git(repo, *args, timeout_s=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def run_artifacts(run_dir: str | Path | None, *, base: str | None = None) -> RunArtifacts:
    """The artifacts of the run folder ``run_dir`` (nothing when it is None or gone); ``base``
    is the scratch repository's first commit: the diff is what the run committed after it."""
    if run_dir is None or not Path(run_dir).is_dir():
        return RunArtifacts(None)
    folder = Path(run_dir)
    images: list[str] = []
    reports: list[str] = []
    dbs: list[Path] = []
    for path in sorted(folder.rglob("*")):
        if len(images) + len(reports) > _MAX_FILES:
            break
        rel = path.relative_to(folder)
        if rel.parts and rel.parts[0] in ("repo", ".git"):
            continue
        if path.suffix.lower() in _IMAGES:
            images.append(rel.as_posix())
        elif path.suffix.lower() == ".html":
            reports.append(rel.as_posix())
        elif path.name == "results.sqlite":
            dbs.append(path)
    diff = ""
    repo = folder / "repo"
    if repo.is_dir():
        diff = _git(repo, "diff", f"{base}..HEAD") if base else _git(repo, "show", "HEAD")
        if len(diff) > MAX_DIFF_CHARS:
            diff = diff[:MAX_DIFF_CHARS] + f"\n… (cut: {len(diff):,} characters)"
    return RunArtifacts(folder, images, reports, diff, dbs)


def merge_findings(databases: list[Path]) -> list[dict[str, Any]]:
    """Findings of every script-runner database given, one row per fingerprint with the count
    of runs that hit it summed across databases, most frequent first. A database that cannot
    be read is skipped."""
    from loopkit_ui.scripts.store import ResultStore, ResultStoreError

    merged: dict[str, dict[str, Any]] = {}
    for db in databases:
        with contextlib.suppress(ResultStoreError, OSError, Exception):
            for row in ResultStore(db, read_only=True).findings():
                fp = str(row.get("fingerprint"))
                seen = merged.get(fp)
                if seen is None:
                    merged[fp] = {**row, "runs": list(row.get("runs") or [])}
                else:
                    seen["count"] = int(seen.get("count") or 0) + int(row.get("count") or 0)
                    seen["runs"] = [*seen["runs"], *(row.get("runs") or [])]
    return sorted(merged.values(), key=lambda r: (-int(r.get("count") or 0), str(r.get("title"))))
