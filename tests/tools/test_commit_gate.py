"""git_commit refuses unbuilt code (commit_requires_build), and answers a commit asked for again
(a durable run resumed after its commit) with that commit; real repositories, a real build
(``python -m compileall`` of the app's folder: it fails on a syntax error)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tools_helpers import git, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, ToolsConfig

pytestmark = pytest.mark.integration

MESSAGE = "card: total ignores the discount\n\nSubtract the discount. Verified live."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "invoice_app").mkdir(parents=True)
    (repo / "invoice_app" / "model.py").write_text("TOTAL = 1\n")
    (repo / ".gitignore").write_text("__pycache__/\n")  # as the demo's scratch repository
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "Test")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / "notes").mkdir()  # a writable folder git does not know yet (the demo's notes/)
    return repo


def tools_for(repo: Path, **settings: object) -> LocalTools:
    values: dict[str, object] = {
        "root": repo,
        "write_folders": ["invoice_app", "notes"],
        "build_inputs": ["invoice_app"],
        "commit_requires_build": True,
        "build_command": [sys.executable, "-m", "compileall", "-q", "invoice_app"],
        "app_ready": None,
    }
    values.update(settings)
    return LocalTools(ToolsConfig.model_validate(values))


async def call(local: LocalTools, name: str, **arguments: object) -> str:
    return str(await tool_by_name(local, name).invoke(arguments))


def commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


async def test_a_change_is_committed_only_after_a_successful_build(repo: Path) -> None:
    async with tools_for(repo) as local:
        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = 2\n")
        with pytest.raises(ToolError) as refused:
            await call(local, "git_commit", message=MESSAGE)
        assert "the code changed since the last successful build (invoice_app/model.py)" in str(
            refused.value
        )
        assert "build first" in str(refused.value) and commits(repo) == 1

        # A build that fails does not count.
        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = (\n")
        assert (await call(local, "build_app")).startswith("Build failed")
        with pytest.raises(ToolError, match="changed since the last successful build"):
            await call(local, "git_commit", message=MESSAGE)

        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = 2\n")
        assert (await call(local, "build_app")).startswith("Build succeeded")
        assert (await call(local, "git_commit", message=MESSAGE)).startswith("Committed ")
        assert commits(repo) == 2

        # An edit after the build needs a build again, a new file too.
        await call(local, "write_file", path="invoice_app/extra.py", content="X = 1\n")
        with pytest.raises(ToolError, match=r"\(invoice_app/extra\.py\)"):
            await call(local, "git_commit", message="card: more")


async def test_without_a_code_change_no_build_is_needed(repo: Path) -> None:
    async with tools_for(repo) as local:
        (repo / "notes" / "a.md").write_text("a note\n")  # not one of the build's inputs
        assert (await call(local, "git_commit", message=MESSAGE)).startswith("Committed ")


async def test_the_gate_is_off_unless_asked_for(repo: Path) -> None:
    async with tools_for(repo, commit_requires_build=False) as local:
        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = 2\n")
        assert (await call(local, "git_commit", message=MESSAGE)).startswith("Committed ")


async def test_a_new_process_knows_what_the_last_build_saw(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "run" / "build-state.json"
    async with tools_for(repo, build_state_file=state) as local:
        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = 2\n")
    # A resumed run: new tools, the edit already made, no build since.
    async with tools_for(repo, build_state_file=state) as resumed:
        with pytest.raises(ToolError, match="changed since the last successful build"):
            await call(resumed, "git_commit", message=MESSAGE)
        assert (await call(resumed, "build_app")).startswith("Build succeeded")
    async with tools_for(repo, build_state_file=state) as again:
        assert (await call(again, "git_commit", message=MESSAGE)).startswith("Committed ")


async def test_the_same_commit_asked_for_again_answers_that_commit(repo: Path) -> None:
    async with tools_for(repo) as local:
        await call(local, "write_file", path="invoice_app/model.py", content="TOTAL = 2\n")
        await call(local, "build_app")
        first = await call(local, "git_commit", message=MESSAGE)
        again = await call(local, "git_commit", message=MESSAGE)
        head = git(repo, "rev-parse", "HEAD").strip()
        assert (
            first.splitlines()[0]
            == again.splitlines()[0]
            == (f"Committed {head[:12]} with 1 file(s):")
        )
        assert again.splitlines()[1] == "M invoice_app/model.py"
        assert again.endswith("(this commit existed already: nothing new was committed)")
        assert commits(repo) == 2
        # Another message with nothing to commit is still refused.
        with pytest.raises(ToolError, match="nothing to commit"):
            await call(local, "git_commit", message="card: something else")
