"""The demo's ``id_fixer`` tool group: the subagent's folders follow the role (it writes the
role's folders, never the notes), a read-only role's call is refused, and the scripted model's
missing transcript for the subagent is that call's error, naming the file it looked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit.abstractions import ToolError
from loopkit.cards import RunnerConfig
from loopkit.cards.roles import parse_role
from loopkit.demo.id_fixer_tools import id_fixer_group
from loopkit.demo.role_tools import find_role
from loopkit.demo.tool_groups import GroupContext
from loopkit_tools import IdFixer

TASK = "Add an accessible id to each of these 1 controls.\n\n1. push button 'Clear notes': ..."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "invoice_app").mkdir(parents=True)
    (repo / "invoice_app" / "panel.py").write_text("X = 1\n", encoding="utf-8")
    (repo / "notes").mkdir()
    (repo / "notes" / "README.md").write_text("# Notes\n", encoding="utf-8")
    return repo


def context(repo: Path, role_text: str | None = None, **settings: object) -> GroupContext:
    config = RunnerConfig(**settings)  # type: ignore[arg-type]
    role = find_role(config, "develop") if role_text is None else parse_role(role_text)
    return GroupContext(config, role, repo, repo.parent / "run", "invoice_app")


async def test_the_subagent_writes_the_roles_folders_not_the_notes(repo: Path) -> None:
    source = id_fixer_group(context(repo))
    assert isinstance(source, IdFixer)
    async with source as fixer:
        write = next(t for t in fixer.file_tools if t.name == "write_file")
        with pytest.raises(ToolError, match="notes"):
            await write.invoke({"path": "notes/README.md", "content": "# Notes\nmore\n"})
        answer = await write.invoke({"path": "invoice_app/panel.py", "content": "X = 1\nY = 2\n"})
        assert "Wrote invoice_app/panel.py" in answer
    assert (repo / "notes" / "README.md").read_text() == "# Notes\n"


async def test_a_read_only_roles_call_is_refused(repo: Path) -> None:
    reviewer = (
        "---\nname: reviewer\ndescription: Reviews.\ntools: [files, ui, id_fixer]\n"
        "writes: []\n---\nReview the change.\n"
    )
    async with id_fixer_group(context(repo, reviewer)) as fixer:
        with pytest.raises(ToolError, match="'reviewer' writes no folder"):
            await fixer.tools[0].invoke({"task": TASK})


async def test_the_scripted_subagent_needs_its_own_transcript(repo: Path, tmp_path: Path) -> None:
    main = tmp_path / "my-card.json"
    main.write_text('{"turns": [{"text": "RESULT: done"}]}', encoding="utf-8")
    ctx = context(repo)
    ctx = GroupContext(ctx.config, ctx.role, ctx.repo, ctx.run_dir, ctx.app_folder, None, main)
    async with id_fixer_group(ctx) as fixer:
        with pytest.raises(ToolError, match=r"no transcript for the id fixer: .*id_fixer/my-card"):
            await fixer.tools[0].invoke({"task": TASK})
    async with id_fixer_group(context(repo)) as fixer:  # no transcript played at all
        with pytest.raises(ToolError, match="plays no transcript"):
            await fixer.tools[0].invoke({"task": TASK})
