"""git_commit against a real repository: only the writable folder, never empty, first-line rule."""

from __future__ import annotations

import re
import subprocess
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


# --- git runs nothing but itself ----------------------------------------------------------------

HOOKS = [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
]


def _planter(side_effects: Path, label: str) -> str:
    """A shell script that records that it ran, then passes its input through (for filters)."""
    return f'#!/bin/sh\necho "{label} $0 $*" >> "{side_effects}"\ncat 2>/dev/null\nexit 0\n'


def _plant_hooks(folder: Path, side_effects: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        path = folder / hook
        path.write_text(_planter(side_effects, "hook"))
        path.chmod(0o755)


async def test_planted_hooks_filters_and_helpers_do_not_run(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    ran = outside / "ran.log"
    program = outside / "program.sh"
    program.write_text(_planter(ran, "program"))
    program.chmod(0o755)
    # hooks where git looks by default, and in a folder the repository's config points to
    _plant_hooks(repo / ".git" / "hooks", ran)
    _plant_hooks(outside / "hooks", ran)
    git(repo, "config", "core.hooksPath", str(outside / "hooks"))
    # a filter driver (required), an fsmonitor, an external diff, a text conversion, a signer
    git(repo, "config", "filter.evil.clean", str(program))
    git(repo, "config", "filter.evil.smudge", str(program))
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "filter.other.process", str(program))
    git(repo, "config", "core.fsmonitor", str(program))
    git(repo, "config", "diff.external", str(program))
    git(repo, "config", "diff.evil.textconv", str(program))
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "gpg.program", str(program))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    (repo / "invoice_app" / ".gitattributes").write_text("*.py filter=other\n")
    # and the same in a global configuration (HOME), which the commit must not read
    home = outside / "home"
    _plant_hooks(home / "global-hooks", ran)
    home.joinpath(".gitconfig").write_text(
        f"[core]\n\thooksPath = {home / 'global-hooks'}\n\tfsmonitor = {program}\n"
        f'[filter "lfs"]\n\tclean = {program}\n\trequired = true\n'
    )
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "attributes").write_text("* filter=lfs\n")
    monkeypatch.setenv("HOME", str(home))

    content = "A = 'committed as written'\n"
    (repo / "invoice_app" / "main.py").write_text(content)
    text = await tools_for(repo).git_commit("card: nothing else runs")
    assert text.startswith("Committed ")
    assert not ran.exists(), ran.read_text()
    # the blob is the file's bytes: no clean filter touched it
    assert git(repo, "show", "HEAD:invoice_app/main.py") == content
    assert git(repo, "log", "-1", "--format=%G?") == "N\n"  # not signed
    # control: plain git in the same repository does run what was planted
    (repo / "invoice_app" / "main.py").write_text("A = 'by plain git'\n")
    subprocess.run(  # noqa: ASYNC221 (a quick local git command)
        ["git", "-c", "commit.gpgSign=false", "commit", "-qam", "plain"], cwd=repo, check=False
    )
    assert "hook" in ran.read_text() and "program" in ran.read_text()


async def test_identity_comes_from_the_users_git_config(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("home")
    home.joinpath(".gitconfig").write_text(
        "[user]\n\tname = Global Person\n\temail = g@ex.invalid\n"
    )
    monkeypatch.setenv("HOME", str(home))
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    (repo / "invoice_app" / "main.py").write_text("A = 6\n")
    await tools_for(repo).git_commit("card: who")
    assert git(repo, "log", "-1", "--format=%an <%ae>") == "Global Person <g@ex.invalid>\n"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("card: x\rrm -rf /", "U+000D (a control character)"),
        ("card: x\u2028rm -rf /", "U+2028 (a line separator)"),
        ("card: x\u2029y", "U+2029 (a paragraph separator)"),
        ("card: x\x0bsecond", "U+000B (a control character)"),
        ("card: x\x85second", "U+0085 (a control character)"),
        ("card: x\x1csecond", "U+001C (a control character)"),
        ("card: a\tb", "U+0009 (a control character)"),
        ("card: \x1b[31mred", "U+001B (a control character)"),
        ("card: evil\u202eexe.txt", "U+202E (an invisible format character)"),
        ("card: zero\u200bwidth", "U+200B (an invisible format character)"),
        ("card: ok\n\nbody \x1b[2J clears the screen", "line 3 of the commit message"),
        ("card: ok\n\nbody\u2028line", "line 3 of the commit message"),
        ("card: ok\n\nbody \u202eevil", "line 3 of the commit message"),
        ("card: ok\n\nnul\x00byte", "line 3 of the commit message"),
    ],
)
async def test_control_characters_are_refused(repo: Path, message: str, problem: str) -> None:
    (repo / "invoice_app" / "main.py").write_text("A = 7\n")
    before = git(repo, "rev-parse", "HEAD")
    with pytest.raises(ToolError, match=re.escape(problem)):
        await tools_for(repo).git_commit(message)
    assert git(repo, "rev-parse", "HEAD") == before


async def test_message_is_committed_exactly_as_checked(repo: Path) -> None:
    (repo / "invoice_app" / "main.py").write_text("A = 8\n")
    message = "\r\n  \r\ncard: windows lines  \r\n\r\nbody\twith a tab \r\nemoji 👩\u200d💻\r\n\r\n"
    await tools_for(repo).git_commit(message)
    assert git(repo, "log", "-1", "--format=%B") == (
        "card: windows lines\n\nbody\twith a tab\nemoji 👩\u200d💻\n\n"
    )
    assert git(repo, "log", "-1", "--format=%s") == "card: windows lines\n"


async def test_nothing_to_commit_looks_only_at_the_writable_folder(repo: Path) -> None:
    """A change in docs/ (staged, unstaged, untracked) with none in invoice_app/ is nothing to
    commit, and docs/ stays exactly as it was: nothing staged or unstaged there."""
    (repo / "docs" / "rules.md").write_text("staged change\n")
    git(repo, "add", "docs/rules.md")
    (repo / "docs" / "rules.md").write_text("staged change, then more\n")
    (repo / "docs" / "new.md").write_text("untracked\n")
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"))
    staged_before = git(repo, "diff", "--cached")
    with pytest.raises(
        ToolError, match=r"nothing to commit: there are no changes under invoice_app/"
    ):
        await tools_for(repo).git_commit("card: docs only")
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")) == before
    assert before[1].splitlines() == ["MM docs/rules.md", "?? docs/new.md"]
    assert git(repo, "diff", "--cached") == staged_before
    assert (repo / "docs" / "rules.md").read_text() == "staged change, then more\n"


async def test_an_empty_writable_folder_does_not_stop_the_commit(repo: Path) -> None:
    # notes/ exists but is empty (no note written yet): git knows nothing of it, and
    # `git commit -- notes` alone would fail on its pathspec.
    (repo / "notes").mkdir()
    local = LocalTools(
        ToolsConfig(root=repo, app_ready=None, write_folders=["invoice_app", "notes"])
    )
    await tool_by_name(local, "write_file").invoke(
        {"path": "invoice_app/main.py", "content": "A = 3\n"}
    )
    text = await tool_by_name(local, "git_commit").invoke({"message": "card: empty notes"})
    assert text.splitlines()[1:] == ["M invoice_app/main.py"]
    # and once a note is there, the next commit takes it along
    (repo / "notes" / "README.md").write_text("# Notes\n")
    text = await tool_by_name(local, "git_commit").invoke({"message": "card: a note"})
    assert text.splitlines()[1:] == ["A notes/README.md"]
