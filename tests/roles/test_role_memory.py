"""Memory wired into a role: the rules of the role's scope are in its instructions, a
"remember" message adds one (any other message goes with the card), the memory tools come with
the memory group only, and every run's runner records the rules it offered."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import loopkit_tools
from loopkit.cards import Card, RunnerConfig
from loopkit.demo.card_runner import card_runner
from loopkit.demo.role_tools import RoleMemory, find_role, role_instructions, take_message
from loopkit.demo.tool_provider import local_tools
from loopkit.demo.workspace import ScratchRepo
from loopkit.middleware.run_log import RunLog
from loopkit.providers.scripted import ScriptedChatClient
from loopkit.redacting_console import RedactingConsole

#: The tools of a role with the ``files`` group only: its file tools, read_reference, and
#: load_tools (write_file is deferred until loaded, see ToolDisclosure).
READER_TOOLS = [
    "list_files",
    "search_files",
    "read_file",
    "write_file",
    "edit_file",
    "read_reference",
    "load_tools",
]

CARD = Card.parse("---\ntitle: Delete asks first\n---\nAsk before deleting.\n")


def memory_of(tmp_path: Path) -> RoleMemory:
    repo = tmp_path / "repo"
    (repo / "invoice_app").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return RoleMemory(loopkit_tools, repo, tmp_path / "index")


def test_a_remember_message_is_a_rule_of_the_roles_scope_and_reaches_the_instructions(
    tmp_path: Path,
) -> None:
    memory = memory_of(tmp_path)
    memory.tools.add_rule("Write dates as YYYY-MM-DD.", "all")
    memory.tools.add_rule("Check every field twice.", "test")
    document = find_role(RunnerConfig(), "document")
    console = RedactingConsole(record=True, width=200)
    left = take_message(memory, document, "Remember: name buttons in bold", console)
    assert left is None  # a rule, not a message for the card
    assert "Added rule 3 [document]: name buttons in bold" in console.export_text()
    rules = memory.rules(document.rules_scope)
    assert rules == [
        (1, "1. [all] Write dates as YYYY-MM-DD."),
        (3, "3. [document] name buttons in bold"),
    ]
    text = role_instructions(document, rules)
    assert text.startswith(document.instructions.rstrip())
    assert "FEEDBACK RULES (scope 'document' and 'all')" in text
    assert "1. [all] Write dates as YYYY-MM-DD.\n3. [document] name buttons in bold" in text
    assert "Check every field twice" not in text  # another scope
    # a message that asks nothing to be remembered goes with the card
    assert take_message(memory, document, "The dialog title changed.", console) == (
        "The dialog title changed."
    )
    assert take_message(memory, document, "remembering is hard", console) == "remembering is hard"
    assert role_instructions(document, []) == document.instructions
    memory.tools.close()


async def test_the_runner_offers_the_rules_and_the_groups_tools_only(tmp_path: Path) -> None:
    memory = memory_of(tmp_path)
    memory.tools.add_rule("remember: keep it short", "reviewer")
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\ntools: [files]\n---\nReview.\n"
    )
    config = RunnerConfig(roles_dir=roles)
    role = find_role(config, "reviewer")
    scratch = ScratchRepo(run_dir=tmp_path, repo=tmp_path / "repo", app_folder="invoice_app")
    model = ScriptedChatClient([{"text": "Applied rules: 1, 4.\nRESULT: done"}])
    with RunLog(tmp_path / "run.jsonl") as log:
        runner = card_runner(
            config,
            model,
            local_tools(config, scratch, role),
            scratch,
            log,
            role=role,
            memory=memory,
            message="Look at the totals too.",
        )
        assert "1. [reviewer] keep it short" in runner.instructions
        outcome = await runner.run(CARD, write_state=False)
    assert outcome.result.done
    # the card and the message that came with it are the user's message
    [request] = model.requests
    assert request[-1].text.endswith(
        "A MESSAGE FROM THE USER\n-----------------------\nLook at the totals too."
    )
    events = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
    start, result = events[0]["data"], events[-1]["data"]
    assert start["tools"] == READER_TOOLS
    assert (start["role"], start["rules_offered"]) == ("reviewer", [1])
    assert (result["rules_cited"], result["rules_not_offered"]) == ([1, 4], [4])
