"""Every git loopkit runs is the safe one: programs a repository's configuration names never run.

Real repositories in temp folders, a real git. Each planted program appends its name to a file
when it runs; plain git is run first on the same repository to show the plant works, then the
board's diff of a run (``run_artifacts``), the demo's scratch repository (``ScratchRepo``) and the
``git_commit`` tool, none of which may run it. A ``git`` on ``PATH`` that records its
environment shows what git gets: the allowlist, never the provider key or a ``GIT_*`` variable.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.demo.workspace import ScratchRepo
from loopkit_board.artifacts import run_artifacts
from loopkit_tools import GitCommitter
from loopkit_tools.safe_git import SAFE_CONFIG, git_argv, run_git

pytestmark = pytest.mark.integration

IDENTITY = ["-c", "user.name=T", "-c", "user.email=t@example.invalid"]


def plain_git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=repo, env=env, capture_output=True, text=True, check=check
    )


def planter(folder: Path, ran: Path, label: str, name: str | None = None) -> str:
    program = folder / (name or f"planted-{label}")
    program.write_text(f'#!/bin/sh\necho {label} >> "{ran}"\nexit 0\n')
    program.chmod(0o755)
    return str(program)


def planted_repo(tmp_path: Path) -> tuple[Path, Path, str]:
    """A run folder whose ``repo/`` has two commits and a configuration that names programs
    for every way git runs one; returns (run folder, side-effect file, base commit)."""
    run_dir = tmp_path / "run"
    repo = run_dir / "repo"
    repo.mkdir(parents=True)
    ran = tmp_path / "ran.txt"
    plain_git(repo, "init", "-q", "-b", "main")
    (repo / "app").mkdir()
    (repo / "app" / "main.py").write_text("A = 1\n")
    plain_git(repo, "add", "-A")
    plain_git(repo, "commit", "-q", "-m", "base")
    base = plain_git(repo, "rev-parse", "HEAD").stdout.strip()
    (repo / "app" / "main.py").write_text("A = 2\n")
    plain_git(repo, "commit", "-q", "-am", "card: change")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "commit-msg", "post-commit", "post-index-change"):
        planter(hooks, ran, f"hook-{hook}", name=hook)
    config = {
        "diff.external": planter(tmp_path, ran, "diff.external"),
        "diff.planted.textconv": planter(tmp_path, ran, "textconv"),
        "diff.planted.command": planter(tmp_path, ran, "diff-driver"),
        "core.fsmonitor": planter(tmp_path, ran, "fsmonitor"),
        "core.hooksPath": str(hooks),
    }
    for key, value in config.items():
        plain_git(repo, "config", key, value)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* diff=planted\n")
    return run_dir, ran, base


def ran_programs(ran: Path) -> list[str]:
    return sorted(set(ran.read_text().split())) if ran.exists() else []


def test_plain_git_runs_what_the_repository_configures(tmp_path: Path) -> None:
    # The control: without the safe options, the same commands run the planted programs.
    run_dir, ran, base = planted_repo(tmp_path)
    repo = run_dir / "repo"
    plain_git(repo, "show", "HEAD", check=False)
    plain_git(repo, "diff", f"{base}..HEAD", check=False)
    (repo / "app" / "main.py").write_text("A = 3\n")
    plain_git(repo, "commit", "-q", "-am", "card: again", check=False)
    found = ran_programs(ran)
    assert "diff-driver" in found or "diff.external" in found, found
    assert "fsmonitor" in found and "hook-pre-commit" in found and "hook-post-commit" in found


def test_the_boards_diff_of_a_run_runs_nothing_but_git(tmp_path: Path) -> None:
    run_dir, ran, base = planted_repo(tmp_path)
    for given in (base, None):  # diff base..HEAD, and show HEAD without a base
        artifacts = run_artifacts(run_dir, base=given)
        assert "-A = 1\n+A = 2" in artifacts.diff, artifacts.diff
    assert ran_programs(ran) == []


def test_the_demos_scratch_repository_runs_nothing_but_git(tmp_path: Path) -> None:
    run_dir, ran, base = planted_repo(tmp_path)
    scratch = ScratchRepo(run_dir=run_dir, repo=run_dir / "repo", app_folder="app")
    commits = scratch.commits_since(base)
    assert [(c.subject, c.files) for c in commits] == [("card: change", ["app/main.py"])]
    (scratch.repo / "app" / "main.py").write_text("A = 3\n")
    scratch.git("add", "-A")
    scratch.git("commit", "-q", "-m", "card: by the demo")
    scratch.git("status", "--porcelain")
    assert scratch.head() == plain_git(scratch.repo, "rev-parse", "HEAD").stdout.strip()
    assert ran_programs(ran) == []


async def test_the_commit_tool_runs_nothing_but_git(tmp_path: Path) -> None:
    run_dir, ran, _ = planted_repo(tmp_path)
    repo = run_dir / "repo"
    (repo / "app" / "main.py").write_text("A = 4\n")
    committer = GitCommitter(repo, ["app"], r"^card: .+", author_name="T", author_email="t@x.y")
    done = await committer.commit("card: by the tool")
    assert done.files == ["M app/main.py"]
    assert ran_programs(ran) == []


def test_a_lazy_fetch_through_a_promisor_remote_is_never_made(tmp_path: Path) -> None:
    # A partial clone's missing object makes plain git fetch it from the promisor remote, and
    # the remote's URL can be a command (ext::).
    repo = tmp_path / "repo"
    repo.mkdir()
    ran = tmp_path / "ran.txt"
    plain_git(repo, "init", "-q")
    (repo / "f").write_text("hello\n")
    plain_git(repo, "add", "f")
    plain_git(repo, "commit", "-q", "-m", "one")
    blob = plain_git(repo, "rev-parse", "HEAD:f").stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.promisor": "true",
        "remote.origin.url": f"ext::{planter(tmp_path, ran, 'fetch')}",
        "protocol.ext.allow": "always",
    }.items():
        plain_git(repo, "config", key, value)
    plain_git(repo, "show", "HEAD", check=False)
    assert ran_programs(ran) == ["fetch"]  # the control
    ran.unlink()
    assert run_git(repo, "show", "HEAD").returncode != 0  # the object is missing, that is all
    assert ran_programs(ran) == []


def test_git_gets_the_allowlisted_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `git` first on PATH that records its environment and arguments, then runs nothing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "env.txt"
    fake = bin_dir / "git"
    fake.write_text(
        f"#!{sys.executable}\nimport os, sys, json\n"
        f"open({str(record)!r}, 'a').write(json.dumps([dict(os.environ), sys.argv[1:]]) + '\\n')\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-planted-key-0123456789",
        "LOOPKIT_DATABASE_URL": "postgresql://loopkit:hunter2-password@db/loopkit",
        "GIT_EXTERNAL_DIFF": "/bin/planted",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "diff.external",
        "GIT_CONFIG_VALUE_0": "/bin/planted",
        "GIT_DIR": "/somewhere/else",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "run" / "repo").mkdir(parents=True)
    run_artifacts(tmp_path / "run", base="abc")
    ScratchRepo(tmp_path / "run", tmp_path / "run" / "repo", "app").commits_since("abc")
    import json

    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(lines) == 2
    for env, argv in lines:
        for name in secrets:
            assert name not in env, (name, argv)
        assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull
        assert env["PATH"].startswith(str(bin_dir))
        assert "--no-ext-diff" in argv and "--no-textconv" in argv
        assert argv.count("-c") >= len(SAFE_CONFIG) // 2


def test_the_command_line_puts_the_callers_options_after_the_safe_ones() -> None:
    argv = git_argv("diff", "--cached", config=["-c", "user.name=X"])
    assert argv[:3] == ["git", "--no-pager", "--literal-pathspecs"]
    assert argv.index("user.name=X") > argv.index("core.fsmonitor=false")
    assert argv[-4:] == ["diff", "--no-ext-diff", "--no-textconv", "--cached"]
    unsafe = git_argv("config", "--get", "user.name", safe=False)
    assert "core.hooksPath=" + os.devnull not in unsafe
