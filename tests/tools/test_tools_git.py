"""git_commit against a real repository: only the writable folder, never empty, first-line rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools_helpers import git, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, ToolsConfig

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.name", "Test")
    git(tmp_path, "config", "user.email", "test@example.invalid")
    git(tmp_path, "config", "commit.gpgsign", "false")
    (tmp_path / "invoice_app").mkdir()
    (tmp_path / "invoice_app" / "main.py").write_text("A = 1\n")
    (tmp_path / "invoice_app" / "old.py").write_text("OLD = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("rules\n")
    (tmp_path / "other.txt").write_text("other\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "initial")
    return tmp_path


def tools_for(repo: Path) -> LocalTools:
    return LocalTools(ToolsConfig(root=repo, app_ready=None))


async def test_commit_contains_only_the_writable_folder(repo: Path) -> None:
    local = tools_for(repo)
    await tool_by_name(local, "write_file").invoke(
        {"path": "invoice_app/main.py", "content": "A = 2\n"}
    )
    await tool_by_name(local, "write_file").invoke(
        {"path": "invoice_app/new.py", "content": "N = 1\n"}
    )
    (repo / "invoice_app" / "old.py").unlink()
    (repo / "other.txt").write_text("changed outside\n")
    (repo / "docs" / "rules.md").write_text("changed rules\n")
    (repo / "untracked.txt").write_text("new outside\n")
    (repo / "staged.txt").write_text("staged by someone else\n")
    git(repo, "add", "staged.txt")  # already in the index: must stay out of the commit too

    text = await tool_by_name(local, "git_commit").invoke(
        {"message": "card: total ignores the discount\n\nSubtract the discount. Verified live."}
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    assert text.splitlines()[0] == f"Committed {head[:12]} with 3 file(s):"
    assert sorted(text.splitlines()[1:]) == [
        "A invoice_app/new.py",
        "D invoice_app/old.py",
        "M invoice_app/main.py",
    ]
    in_commit = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(in_commit) == ["invoice_app/main.py", "invoice_app/new.py", "invoice_app/old.py"]
    assert git(repo, "log", "-1", "--format=%B", "HEAD").startswith(
        "card: total ignores the discount\n\nSubtract the discount."
    )
    # everything outside is exactly as it was: modified, untracked, and still staged
    status = git(repo, "status", "--porcelain").splitlines()
    assert sorted(status) == [
        " M docs/rules.md",
        " M other.txt",
        "?? untracked.txt",
        "A  staged.txt",
    ]


async def test_empty_commit_is_refused(repo: Path) -> None:
    (repo / "other.txt").write_text("only outside changed\n")
    before = git(repo, "rev-parse", "HEAD")
    with pytest.raises(
        ToolError, match=r"nothing to commit: there are no changes under invoice_app/"
    ):
        await tool_by_name(tools_for(repo), "git_commit").invoke({"message": "card: x"})
    assert git(repo, "rev-parse", "HEAD") == before


@pytest.mark.parametrize(
    "message",
    [
        "fix the total",
        "Card: capital letter",
        "card:no space",
        "  \n  ",
        "",
        "card: ",
        "fix\ncard: on line two",
    ],
)
async def test_bad_first_line_is_refused(repo: Path, message: str) -> None:
    (repo / "invoice_app" / "main.py").write_text("A = 3\n")
    before = git(repo, "rev-parse", "HEAD")
    with pytest.raises(ToolError) as info:
        await tool_by_name(tools_for(repo), "git_commit").invoke({"message": message})
    assert "'^card: .+'" in str(info.value)
    assert git(repo, "rev-parse", "HEAD") == before
    assert git(repo, "diff", "--cached", "--name-only") == ""  # nothing was staged either


async def test_custom_pattern_and_author(repo: Path) -> None:
    cfg = ToolsConfig(
        root=repo,
        app_ready=None,
        commit_message_pattern=r"^feat\(app\): [a-z]",
        git_author_name="Card Runner",
        git_author_email="runner@example.invalid",
    )
    (repo / "invoice_app" / "main.py").write_text("A = 4\n")
    local = LocalTools(cfg)
    with pytest.raises(ToolError, match="does not match"):
        await local.git_commit("card: old style")
    await local.git_commit("feat(app): new style")
    assert git(repo, "log", "-1", "--format=%an <%ae>") == "Card Runner <runner@example.invalid>\n"


async def test_git_failure_is_reported(tmp_path: Path) -> None:
    (tmp_path / "invoice_app").mkdir()
    (tmp_path / "invoice_app" / "a.py").write_text("")
    with pytest.raises(ToolError, match="git add failed"):
        await tools_for(tmp_path).git_commit("card: not a repository")


async def test_leading_blank_lines_are_dropped_like_git_does(repo: Path) -> None:
    (repo / "invoice_app" / "main.py").write_text("A = 5\n")
    await tools_for(repo).git_commit("\n\ncard: after blank lines\n\nbody\n\n")
    assert git(repo, "log", "-1", "--format=%B") == "card: after blank lines\n\nbody\n\n"
