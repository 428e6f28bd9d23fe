"""Unknown arguments to a ``ui_*`` tool are refused with the list of the tool's arguments (as
loopkit's local tools refuse them), never dropped silently; the tool schemas say so; and the
bundled demo transcripts call the tools only with arguments they take."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient

from .conftest import REPO

pytestmark = [pytest.mark.ui, pytest.mark.integration]

TRANSCRIPTS = REPO / "src" / "loopkit" / "demo" / "transcripts"


@pytest.fixture(scope="module")
def server(headless_desktop: HeadlessDesktop) -> Iterator[UIServerClient]:
    # No app is needed: arguments are checked before the backend is asked anything.
    args = ["-m", "loopkit_ui.server", "--app-name", "no_such_app", "--attach-timeout", "0.2"]
    client = UIServerClient(args, env=headless_desktop.child_env())
    try:
        yield client
    finally:
        client.close()


def test_an_unknown_argument_is_refused_with_the_valid_ones(server: UIServerClient) -> None:
    shot = server.call("ui_screenshot", path="after.png")
    assert shot.error, shot
    assert "ui_screenshot" in shot.text and "'path'" in shot.text, shot.text
    assert "target" in shot.text and "window" in shot.text, shot.text  # what it does take
    two = server.call("ui_click", target="AddItemButton", button="right", colour="red")
    assert two.error and "'button'" in two.text and "'colour'" in two.text, two.text
    assert "expect_appear" in two.text  # the valid arguments are listed
    # A call with only known arguments goes through to the backend (no app here).
    known = server.call("ui_list_windows")
    assert known.error and "is not running" in known.text, known.text


def test_schemas_forbid_other_properties(server: UIServerClient) -> None:
    for tool in server.tools():
        assert tool.name.startswith("ui_")
        assert tool.input_schema.get("additionalProperties") is False, tool.name


def test_bundled_transcripts_use_only_arguments_the_tools_take(server: UIServerClient) -> None:
    schemas = {tool.name: tool.input_schema for tool in server.tools()}
    files = sorted(TRANSCRIPTS.glob("*.json"))
    assert files
    calls = 0
    for path in files:
        for turn in json.loads(path.read_text(encoding="utf-8"))["turns"]:
            for call in turn.get("calls", []):
                if call["name"] not in schemas:
                    continue  # a local tool (files, build, app, git)
                calls += 1
                unknown = set(call["arguments"]) - set(schemas[call["name"]]["properties"])
                assert not unknown, f"{Path(path).name}: {call['name']} has no {sorted(unknown)}"
    assert calls > 20
