"""Role files: the bundled roles load, bad files are refused naming file and field, user roles
override bundled ones, reference files are read by name, RESULT parsing follows the role."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit.abstractions import ToolError
from loopkit.cards import RunnerConfig, parse_result
from loopkit.cards.references import ReferenceShelf
from loopkit.cards.result import cited_rules
from loopkit.cards.roles import RoleCatalog, RoleError, load_role, parse_role
from loopkit.demo.role_tools import bundled_roles_folder, find_role, reference_shelf

GOOD = """---
name: reviewer
description: Review the change.
tools: [files, git]
limits:
  max_rounds: 12
success_word: approved
---
Review it.
"""


def write_role(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_bundled_roles_load_with_their_groups_and_words() -> None:
    catalog = RoleCatalog([bundled_roles_folder()])
    assert catalog.names() == ["develop", "document", "test"]
    develop, document, test = catalog.roles()
    assert develop.tools == ["files", "build_app", "git", "ui", "memory", "id_fixer"]
    assert develop.write_folders("invoice_app") == ["invoice_app"]
    assert develop.success_word == "done" and "RESULT: done" in develop.instructions
    assert document.write_folders("invoice_app") == ["docs"]
    assert document.front_matter.limits.given() == {"max_rounds": 40}
    assert test.success_word == "passed" and "RESULT: passed" in test.instructions


def test_a_role_file_reads_its_front_matter_and_body(tmp_path: Path) -> None:
    role = load_role(write_role(tmp_path, "reviewer", GOOD))
    assert (role.name, role.description, role.tools) == (
        "reviewer",
        "Review the change.",
        ["files", "git"],
    )
    assert role.instructions == "Review it.\n"
    assert role.rules_scope == "reviewer"
    assert role.front_matter.limits.given() == {"max_rounds": 12}
    assert role.write_folders("app") == ["app"]  # the default: the app's folder


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no front matter\n", "no front matter"),
        ("---\nname: [x\n---\nbody\n", "not valid YAML"),
        ("---\n- a list\n---\nbody\n", "must be a YAML mapping"),
        ("---\ndescription: d\ntools: [files]\n---\nbody\n", "name: Field required"),
        (GOOD.replace("[files, git]", "[files, shell]"), "tools.1: Input should be 'files'"),
        (GOOD.replace("[files, git]", "[files, files]"), "a group is named twice: files"),
        (GOOD.replace("max_rounds: 12", "max_rounds: 0"), "limits.max_rounds"),
        (GOOD.replace("max_rounds: 12", "max_round: 12"), "limits.max_round: Extra inputs"),
        (GOOD.replace("success_word: approved", "success_word: failed"), "success_word"),
        (
            GOOD.replace("tools: [files, git]", "tools: [files]\nwrites: ['../up']"),
            "writes: Value error, '../up'",
        ),
        (GOOD.replace("Review it.\n", "  \n"), "the instructions (the body"),
        (GOOD.replace("name: reviewer", "name: Reviewer"), "name: Value error, 'Reviewer'"),
    ],
)
def test_a_bad_role_file_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write_role(tmp_path, "reviewer", text)
    with pytest.raises(RoleError) as caught:
        load_role(path)
    message = str(caught.value)
    assert message.startswith(f"role file {path}"), message
    assert expected in message, message
    assert "\n" not in message


def test_the_name_must_be_the_file_name(tmp_path: Path) -> None:
    path = write_role(tmp_path, "other", GOOD)
    with pytest.raises(RoleError, match="name: 'reviewer' differs from the file's name 'other'"):
        load_role(path)


def test_unknown_groups_list_the_groups(tmp_path: Path) -> None:
    with pytest.raises(RoleError, match="tool groups are: files, build_app, git, ui, memory"):
        parse_role(GOOD.replace("[files, git]", "[shell]"), "x.md")


def test_a_user_role_overrides_the_bundled_one_of_the_same_name(tmp_path: Path) -> None:
    own = tmp_path / "roles"
    write_role(own, "reviewer", GOOD)
    write_role(own, "develop", GOOD.replace("reviewer", "develop"))
    config = RunnerConfig(roles_dir=own)
    assert find_role(config, "develop").path == own / "develop.md"
    assert find_role(config, "develop").success_word == "approved"
    assert find_role(config, "test").path == bundled_roles_folder() / "test.md"
    assert find_role(RunnerConfig(), "developer").name == "develop"  # the old name still works
    with pytest.raises(RoleError) as caught:
        find_role(config, "nope")
    assert str(caught.value) == (
        "unknown role 'nope'; the roles are: develop, document, reviewer, test"
    )


def test_reference_files_are_read_by_name_and_listed_in_the_tool(tmp_path: Path) -> None:
    shelf = reference_shelf(RunnerConfig())
    assert shelf.names() == ["debugging", "live-testing", "memory-protocol", "writing-scripts"]
    assert "search_notes" in shelf.read("memory-protocol")
    tool = shelf.tool()
    assert tool.name == "read_reference"
    for name in shelf.names():
        assert name in tool.description
    with pytest.raises(
        ToolError, match="there is no reference 'nope'; the references are: debugging"
    ):
        shelf.read("nope")
    with pytest.raises(ToolError):
        shelf.read("../roles/develop")
    # a user's reference file overrides the bundled one of the same name
    own = tmp_path / "reference"
    own.mkdir()
    (own / "debugging.md").write_text("# Our debugging\nAsk Ana.\n")
    mine = ReferenceShelf([own, *shelf.folders])
    assert mine.read("debugging").startswith("# Our debugging")
    assert mine.titles()["debugging"] == "Our debugging"


async def test_the_reference_tool_answers_the_model() -> None:
    tool = reference_shelf(RunnerConfig()).tool()
    text = await tool.invoke({"name": "debugging"})
    assert "Search the memory" in text


def test_the_result_line_follows_the_role_word() -> None:
    passed = parse_result("All checked.\nRESULT: passed", success="passed")
    assert passed.done and passed.word == "passed" and passed.line() == "RESULT: passed"
    done_in_test = parse_result("RESULT: done", success="passed")
    assert not done_in_test.done
    assert "'RESULT: passed' or 'RESULT: failed: <reason>'" in (done_in_test.reason or "")
    failed = parse_result("RESULT: failed: the dialog never opened", success="passed")
    assert (failed.done, failed.word, failed.reason) == (False, "failed", "the dialog never opened")
    assert parse_result("RESULT: done").done  # the default word is unchanged
    assert not parse_result("RESULT: passed").done


def test_cited_rule_numbers_are_read_from_the_text() -> None:
    assert cited_rules("Applied rules: 1, 3 and 12. Also rule 2.") == [1, 2, 3, 12]
    assert cited_rules("No rule applied; 3 rows deleted.") == []


def test_the_example_config_adds_the_example_review_role() -> None:
    from loopkit.cards import load_config
    from loopkit.demo.role_tools import local_tool_filter, role_catalog

    config = load_config(Path(__file__).resolve().parents[2] / "examples/configs/own-roles.toml")
    assert role_catalog(config).names() == ["develop", "document", "review", "test"]
    review = find_role(config, "review")
    assert (review.success_word, review.front_matter.writes) == ("approved", [])
    offered = [
        n
        for n in (
            "list_files",
            "search_files",
            "read_file",
            "edit_file",
            "write_file",
            "git_commit",
        )
        if local_tool_filter(review)(n)
    ]
    # it writes nothing: no write_file nor edit_file; git_commit stays for its notes (memory)
    assert offered == ["list_files", "search_files", "read_file", "git_commit"]
    without_memory = review.model_copy(
        update={"front_matter": review.front_matter.model_copy(update={"tools": ["files", "git"]})}
    )
    writers = ("write_file", "edit_file", "git_commit")
    assert [n for n in writers if local_tool_filter(without_memory)(n)] == []


def test_the_roles_limits_apply_unless_the_command_line_gave_them() -> None:
    # loopkit.demo.run.with_role_limits: the board's queue checks look it up there
    from loopkit.demo.run import with_role_limits

    config = RunnerConfig(max_rounds=60, max_tokens=1000)
    document = find_role(config, "document")
    assert with_role_limits(config, document).max_rounds == 40
    assert with_role_limits(config, document, {"max_rounds"}).max_rounds == 60
    assert with_role_limits(config, document).max_tokens == 1000  # the role sets none
    assert with_role_limits(config, find_role(config, "develop")) is config
