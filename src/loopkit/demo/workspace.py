"""The scratch repository a demo run works in: a fresh git repository with a copy of the app.

The project's own copy of the app keeps its gaps, so every card can run again.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from loopkit_tools.safe_git import run_git

_DOCS = """# How the invoice app is built

- `invoice_app/model.py`: the invoice model and its totals (no Qt).
- `invoice_app/main_window.py`: the window, its widgets and their accessible ids.
- `invoice_app/storage.py`: saving and opening invoice files (JSON).
- `invoice_app/build.py`: `python -m invoice_app.build` compiles and imports every module.

Every control has an accessible id (`setAccessibleIdentifier`) and the same object name. A new
control gets one too, named after its purpose (e.g. `ConfirmDeleteDialog`).
"""

GIT_IDENTITY = ["-c", "user.name=loopkit demo", "-c", "user.email=demo@loopkit.invalid"]


class WorkspaceError(RuntimeError):
    """The scratch repository could not be created."""


@dataclass(frozen=True, slots=True)
class Commit:
    id: str
    subject: str
    files: list[str]

    def describe(self) -> str:
        return f"{self.id[:10]} {self.subject} ({', '.join(self.files)})"


@dataclass(slots=True)
class ScratchRepo:
    """A run's folder: ``repo`` (the git repository) and the run log beside it."""

    run_dir: Path
    repo: Path
    app_folder: str

    def git(self, *args: str) -> str:
        # The model's code may have configured this repository: the safe git runs nothing else.
        try:
            done = run_git(self.repo, *args, config=GIT_IDENTITY, timeout_s=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise WorkspaceError(f"git {' '.join(args)} failed in {self.repo}: {e}") from None
        if done.returncode != 0:
            raise WorkspaceError(
                f"git {' '.join(args)} failed in {self.repo}: {done.stderr.strip()}"
            )
        return done.stdout

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def commits_since(self, base: str) -> list[Commit]:
        """The commits after ``base``, newest first."""
        out: list[Commit] = []
        for line in self.git("log", "--format=%H%x09%s", f"{base}..HEAD").splitlines():
            sha, _, subject = line.partition("\t")
            files = self.git("show", "--name-only", "--format=", sha).split()
            out.append(Commit(sha, subject, files))
        return out


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "card"


def check_app_source(app_source: Path) -> None:
    """``app_source`` is an app package folder (it has a ``__main__.py``)."""
    if not (app_source / "__main__.py").is_file():
        raise WorkspaceError(
            f"app_source {app_source} is not the invoice app (no __main__.py there); set "
            "app_source in the config to the app's package folder"
        )


def new_run_dir(runs_dir: Path, name: str) -> Path:
    """The folder of a new run under ``runs_dir`` (named by the time and ``name``; not created)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return (runs_dir / f"{stamp}-{slug(name)}").resolve()


def create_scratch_repo(
    app_source: Path, runs_dir: Path, name: str, *, run_dir: Path | None = None
) -> ScratchRepo:
    """Copy ``app_source`` into a new git repository under ``runs_dir`` and commit it (in
    ``run_dir`` when given, e.g. chosen before by :func:`new_run_dir`)."""
    check_app_source(app_source)
    run_dir = run_dir or new_run_dir(runs_dir, name)
    repo = run_dir / "repo"
    app_folder = app_source.name
    shutil.copytree(
        app_source, repo / app_folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    (repo / "docs").mkdir()
    (repo / "docs" / "CODING.md").write_text(_DOCS, encoding="utf-8")
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n", encoding="utf-8")
    scratch = ScratchRepo(run_dir=run_dir, repo=repo, app_folder=app_folder)
    scratch.git("init", "-q", "-b", "main")
    # A local identity: the model's git_commit must work on machines without a global one.
    scratch.git("config", "user.name", "loopkit demo")
    scratch.git("config", "user.email", "demo@loopkit.invalid")
    scratch.git("add", "-A")
    scratch.git("commit", "-q", "-m", "Initial copy of the app")
    return scratch


def open_scratch_repo(
    repo: Path, runs_dir: Path, name: str, app_folder: str, *, run_dir: Path | None = None
) -> ScratchRepo:
    """A new run folder under ``runs_dir`` (``run_dir`` when given, e.g. chosen before by
    :func:`new_run_dir`) for a run that continues in ``repo``, the repository of an earlier run
    (e.g. a ``test`` run after the ``develop`` run of the same card)."""
    check_earlier_repo(repo, app_folder)
    run_dir = run_dir or new_run_dir(runs_dir, name)
    # May exist: the run's UI server, started first, makes its ui/ folder in it.
    run_dir.mkdir(parents=True, exist_ok=True)
    return ScratchRepo(run_dir=run_dir, repo=repo.resolve(), app_folder=app_folder)


def check_earlier_repo(repo: Path, app_folder: str) -> None:
    """``repo`` is the top of a git repository with the app's folder in it."""
    if not repo.is_dir():
        raise WorkspaceError(f"--repo {repo}: not a folder (give the 'repository' of a run)")
    try:
        done = run_git(repo, "rev-parse", "--show-toplevel", timeout_s=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WorkspaceError(f"--repo {repo}: git could not tell its top folder ({e})") from None
    top = Path(done.stdout.strip()) if done.returncode == 0 else None
    if top is None or top.resolve() != repo.resolve():
        raise WorkspaceError(
            f"--repo {repo}: not the top folder of a git repository (give the 'repository' "
            "folder a run's summary names)"
        )
    if not (repo / app_folder).is_dir():
        raise WorkspaceError(f"--repo {repo}: it has no {app_folder}/ folder (the app)")
