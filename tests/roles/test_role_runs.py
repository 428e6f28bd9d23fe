"""Role runs for real (``python -m loopkit.demo --role``): the document role after the develop
role on the same repository finds the develop run's note by searching and cites it, a "remember"
message becomes rule 1 and the answer cites it; the tool groups decide the tools offered; an
unknown role starts nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit_ui.headless_desktop import HeadlessDesktop
from tests.demo.helpers import ROOT, copy_card, demo_env, run_demo
from tests.installed import import_or_unavailable

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

NOTE = "notes/deleting-items/delete-an-item-with-confirmation.md"
RULE = "remember: name buttons exactly as the app shows them"


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.integration
@pytest.mark.ui
@pytest.mark.slow
def test_document_after_develop_finds_and_cites_the_note_and_the_rule(
    tmp_path: Path, headless_desktop: HeadlessDesktop
) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    develop = run_demo(tmp_path, card)
    assert develop.returncode == 0, develop.output
    repo = develop.repo()
    # the develop run wrote a note and committed it with the app's change
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert NOTE in committed and "notes/README.md" in committed, committed

    document = run_demo(
        tmp_path, card, "--role", "document", "--repo", str(repo), "--message", RULE
    )
    assert document.returncode == 0, document.output
    assert "Role: document" in document.output
    assert "it plays the bundled document transcript for" in document.output.splitlines()[0]
    assert "Added rule 1 [document]" in document.output
    assert Card.load(card).state is CardState.DONE
    [log] = [p for p in (tmp_path / "runs").glob("*-document/run.jsonl")]
    lines = events(log)
    start, result = lines[0]["data"], lines[-1]["data"]
    assert (start["role"], start["rules_offered"]) == ("document", [1])
    assert "read_reference" in start["tools"] and "search_notes" in start["tools"]
    assert "ui_click" in start["tools"] and "build_app" in start["tools"]
    # the note's path came from a real search answer (strict replay checks it too) ...
    [search] = [
        e["data"] for e in lines if e["type"] == "tool" and e["data"]["name"] == "search_notes"
    ]
    assert search["result"].splitlines()[1].startswith(f"1. {NOTE} ")
    # ... and the final answer cites it and the rule it applied
    final = [e["data"]["text"] for e in lines if e["type"] == "round"][-1]
    assert NOTE in final and "Applied rules: 1." in final
    assert (result["status"], result["rules_cited"], result["rules_not_offered"]) == (
        "done",
        [1],
        [],
    )
    # the page and the rule are committed together, the app is untouched
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["docs/deleting-items.md", "notes/rules.md"]
    assert (
        "1. [document] name buttons exactly as the app shows them"
        in (repo / "notes" / "rules.md").read_text()
    )
    assert git(repo, "status", "--porcelain").strip() == ""


def write_role(folder: Path, text: str, name: str = "reader") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text, encoding="utf-8")


READER = """---
name: reader
description: Reads the app's files and says what it found.
tools: [files]
limits:
  max_rounds: 7
success_word: approved
---
Read the files. End with RESULT: approved or RESULT: failed: <reason>.
"""


def transcript(path: Path, final: str) -> Path:
    # A transcript of this test's own role, written here (not a bundled one).
    turns = [
        {
            "calls": [
                {
                    "name": "list_files",
                    "arguments": {"folder": "invoice_app"},
                    "expect": {"error": False, "contains": ["invoice_app/main_window.py"]},
                }
            ]
        },
        {"text": final},
    ]
    path.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    return path


def test_a_user_role_gets_only_its_groups_tools_its_limits_and_its_word(tmp_path: Path) -> None:
    roles = tmp_path / "my-roles"
    write_role(roles, READER)
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    env = {"LOOPKIT_ROLES_DIR": str(roles), "LOOPKIT_HEADLESS": "never"}
    played = transcript(tmp_path / "reader.json", "Nothing odd.\nRESULT: approved")
    run = run_demo(tmp_path, card, "--role", "reader", "--transcript", str(played), env=env)
    assert run.returncode == 0, run.output
    assert "RESULT: approved" in run.output
    start = run.events()[0]["data"]
    # no UI server, no build or git tools, no memory tools: only the files group (and the
    # reference files)
    assert start["tools"] == READER_TOOLS
    assert start["limits"]["max_rounds"] == 7 and start["role"] == "reader"
    # the command line beats the role's limit
    again = run_demo(
        tmp_path, card, "--role", "reader", "--transcript", str(played), "--max-rounds", "5",
        env=env,
    )  # fmt: skip
    assert again.events()[0]["data"]["limits"]["max_rounds"] == 5
    # RESULT: done is not this role's word
    wrong = transcript(tmp_path / "wrong.json", "RESULT: done")
    failed = run_demo(tmp_path, card, "--role", "reader", "--transcript", str(wrong), env=env)
    assert failed.returncode == 1, failed.output
    assert "not 'RESULT: approved' or 'RESULT: failed: <reason>'" in failed.output


def test_an_unknown_role_is_one_line_listing_the_roles_and_starts_nothing(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--role", "tester"],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == ("error: unknown role 'tester'; the roles are: develop, document, test\n")
    assert not (tmp_path / "runs").exists()
    assert Card.load(card).state is CardState.NEW


def test_a_bad_user_role_file_is_named_with_its_field(tmp_path: Path) -> None:
    roles = tmp_path / "my-roles"
    write_role(roles, READER.replace("[files]", "[files, shell]"))
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--role", "reader"],
        cwd=ROOT,
        env=demo_env(tmp_path, {"LOOPKIT_ROLES_DIR": str(roles)}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error: role file {roles / 'reader.md'}: tools.1: Input should be"
    )
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_a_repo_that_is_not_an_earlier_runs_repository_is_refused(tmp_path: Path) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--repo", str(tmp_path)],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "not the top folder of a git repository" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_durable_run_takes_its_role_through_the_workflow(tmp_path: Path) -> None:
    import_or_unavailable("dbos", install="loopkit[durable]")
    roles = tmp_path / "my-roles"
    write_role(roles, READER)
    card = copy_card(tmp_path, "total-ignores-the-discount")
    env = {"LOOPKIT_ROLES_DIR": str(roles), "LOOPKIT_HEADLESS": "never"}
    played = transcript(tmp_path / "reader.json", "Applied rules: 1.\nRESULT: approved")
    run = run_demo(
        tmp_path, card, "--durable", "--role", "reader", "--transcript", str(played),
        "--message", "remember: be brief", env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.output
    assert "RESULT: approved" in run.output
    lines = run.events()
    start, result = lines[0]["data"], lines[-1]["data"]
    assert start["tools"] == READER_TOOLS
    assert (start["role"], start["rules_offered"], start["limits"]["max_rounds"]) == (
        "reader",
        [1],
        7,
    )
    assert (result["status"], result["rules_cited"]) == ("done", [1])
    assert "1. [reader] be brief" in (run.repo() / "notes" / "rules.md").read_text()
    listed = subprocess.run(
        [sys.executable, "-m", "loopkit.runs", "list", "--json"],
        cwd=ROOT,
        env=demo_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    [record] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (record["role"], record["state"]) == ("reader", "done")


def test_a_role_without_a_transcript_for_the_card_is_refused_naming_the_role(
    tmp_path: Path,
) -> None:
    card = copy_card(tmp_path, "total-ignores-the-discount")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--role", "document"],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: the scripted model has no transcript for total-ignores-the-discount.md in the "
        "role 'document' (bundled: delete-asks-for-confirmation)"
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("remember:", "error: --message 'remember:' says to remember nothing; say what\n"),
        ("remember " + "x" * 501, "error: --message: the rule to remember has 501 characters"),
    ],
)
def test_a_remember_message_without_a_rule_is_bad_input(
    tmp_path: Path, message: str, expected: str
) -> None:
    card = copy_card(tmp_path, "delete-asks-for-confirmation")
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), "--message", message],
        cwd=ROOT,
        env=demo_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()
