"""What a run left on disk: its HTML reports, screenshots and GIFs, its commit's diff, findings.

A card run works in its own run folder (``runs/<time>-<card>/``: the scratch repository
``repo/``, ``run.jsonl``, ``ui/`` screenshots, and the script runner's ``report.html``,
``run.gif`` and ``results.sqlite`` when the run ran test scripts). Files are listed relative to
that folder and served only from inside it.

Code the model writes runs in ``repo/`` with the runner's rights, so it can plant anything in
the run folder: a symlink to a secret file, or a hard link to one (a hard link cannot be told
apart from its target). So a file of the folder is read (:func:`open_run_file`,
:func:`read_run_file`) only when it is a regular file with one link, reached without following
any symlink, and not in ``repo/``; and the board writes its own files there
(:func:`write_run_file`) through a new temporary file renamed over the name, which replaces a
planted link instead of writing through it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DIFF_CHARS",
    "RunArtifacts",
    "list_run_files",
    "merge_findings",
    "open_run_file",
    "read_run_file",
    "run_artifacts",
    "write_run_file",
]

#: A diff is cut here in the page (the repository keeps it whole).
MAX_DIFF_CHARS = 200_000
_IMAGES = (".png", ".gif", ".jpg", ".jpeg", ".webp")
_MAX_FILES = 200
#: Top folders of a run folder never served: the model's repository.
_NOT_SERVED = ("repo", ".git")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)


def _parts(relative: str) -> list[str] | None:
    parts = relative.split("/")
    if any(p in ("", ".", "..") or "\0" in p or "\\" in p for p in parts):
        return None
    return None if parts[0] in _NOT_SERVED else parts


def _one_link_file(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def open_run_file(folder: str | Path, relative: str) -> int | None:
    """A read-only descriptor of ``folder/relative`` (``/``-separated), or None unless that is a
    regular file with one link, reached without following a symlink at any step, outside
    ``repo/``. The caller closes it."""
    parts = _parts(relative)
    if parts is None:
        return None
    if os.open not in os.supports_dir_fd or not _NOFOLLOW:  # Windows: no descriptors to walk
        path = Path(folder).joinpath(*parts)
        try:
            if any(p.is_symlink() for p in [path, *path.parents][: len(parts)]):
                return None
            fd = os.open(path, _FILE_FLAGS)
        except OSError:
            return None
    else:
        try:
            # The run folder itself may lie behind a link (runs_dir); nothing below it may.
            at = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        except OSError:
            return None
        try:
            for name in parts[:-1]:
                inner = os.open(name, _DIR_FLAGS, dir_fd=at)
                os.close(at)
                at = inner
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=at)
        except OSError:
            return None
        finally:
            os.close(at)
    if not _one_link_file(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def read_run_file(folder: str | Path, relative: str, *, max_bytes: int) -> bytes | None:
    """The bytes of ``folder/relative`` under :func:`open_run_file`'s rules (None when refused
    or larger than ``max_bytes``)."""
    fd = open_run_file(folder, relative)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def write_run_file(folder: str | Path, name: str, data: bytes) -> Path:
    """Write ``folder/name`` (a plain file name) whole: a new temporary file renamed over the
    name, so a link planted there is replaced, never written through."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"{name!r}: expected a plain file name")
    target = Path(folder) / name
    temporary = Path(folder) / f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


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


#: Folders of a run folder never walked: the model's code (the repository, the replay's copy
#: of it), git's own, the memory's index.
_NOT_WALKED = {("repo",), (".git",), ("replay", "code"), ("memory-index",)}


def list_run_files(folder: Path) -> tuple[list[str], list[str], list[Path]]:
    """The images, HTML reports and findings databases of the run folder ``folder`` (relative
    paths, sorted; only files :func:`open_run_file` would open), without walking the model's
    code."""
    images: list[str] = []
    reports: list[str] = []
    dbs: list[Path] = []
    for top, dirs, files in os.walk(folder):
        rel = Path(top).relative_to(folder).parts
        dirs[:] = sorted(d for d in dirs if (*rel, d) not in _NOT_WALKED and d != ".git")
        for name in sorted(files):
            if len(images) + len(reports) > _MAX_FILES:
                return images, reports, dbs
            path = Path(top) / name
            try:  # listed only what open_run_file would open (no link, one name)
                if not _one_link_file(path.lstat()):
                    continue
            except OSError:
                continue
            relative = "/".join((*rel, name))
            suffix = path.suffix.lower()
            if suffix in _IMAGES:
                images.append(relative)
            elif suffix == ".html":
                reports.append(relative)
            elif name == "results.sqlite":
                dbs.append(path)
    return sorted(images), sorted(reports), dbs


def run_artifacts(run_dir: str | Path | None, *, base: str | None = None) -> RunArtifacts:
    """The artifacts of the run folder ``run_dir`` (nothing when it is None or gone); ``base``
    is the scratch repository's first commit: the diff is what the run committed after it."""
    if run_dir is None or not Path(run_dir).is_dir():
        return RunArtifacts(None)
    folder = Path(run_dir)
    images, reports, dbs = list_run_files(folder)
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
