"""``expect`` on every kind of action step, not only on clicks: a step whose expected element does
not appear (or does not go away) fails and says which, whatever the action was.

One script against the small fixture app under Xvfb; every step has ``continue_on_failure`` so
each one's own verdict is recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import MINI_APP

from .conftest import RunnerFactory

pytestmark = [pytest.mark.ui, pytest.mark.integration]

SHORT = 0.5


def step(action: str, expect: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "action", "action": action, "continue_on_failure": True,
            "expect": {"timeout": SHORT, **expect}, **fields}  # fmt: skip


# (step, passes?, what the failure message must say)
CASES: list[tuple[dict[str, Any], bool, str]] = [
    (step("type_text", {"appear": ["NoSuchLabel"]}, target="NameInput", text="abc"),
     False, "expected NoSuchLabel to appear within 0.5 s"),
    # Exists but hidden: it has not appeared.
    (step("type_text", {"appear": ["HiddenLabel"]}, target="NameInput", text="abd"),
     False, "expected HiddenLabel to appear within 0.5 s; it did not (actual: hidden)"),
    (step("type_text", {"disappear": ["NameInput"]}, target="NameInput", text="abe"),
     False, "expected NameInput to disappear within 0.5 s"),
    (step("set_cell", {"appear": ["zzz"]}, target="ItemsTable", row=0, column=0, text="zzz"),
     True, ""),
    (step("set_cell", {"appear": ["NoSuchCell"]}, target="ItemsTable", row=1, column=0,
          text="yyy"),
     False, "expected NoSuchCell to appear within 0.5 s"),
    (step("select_item", {"disappear": ["ItemsList"]}, target="ItemsList", item="Cherry"),
     False, "expected ItemsList to disappear within 0.5 s"),
    (step("press_keys", {"appear": ["NoSuchDialog"]}, target="NameInput", keys="End"),
     False, "expected NoSuchDialog to appear within 0.5 s"),
    (step("press_keys", {"disappear": ["GreetButton"]}, keys="Home"),
     False, "expected GreetButton to disappear within 0.5 s"),
    (step("hover", {"disappear": ["GreetButton"]}, target="GreetButton"),
     False, "expected GreetButton to disappear within 0.5 s"),
    (step("drag_and_drop", {"appear": ["NoSuchItem"]}, target="first", to="third"),
     False, "expected NoSuchItem to appear within 0.5 s"),
    (step("double_click", {"disappear": ["ItemsTable"]}, target="ItemsTable", row=2, column=1),
     False, "ItemsTable (still there)"),
    # A dialog opened by a click, closed by a key press: the disappearance is awaited and met.
    (step("click", {"appear": ["ConfirmOkButton"]}, target="DialogButton"), True, ""),
    (step("press_keys", {"disappear": ["ConfirmDialog"]}, keys="Escape"), True, ""),
    (step("click", {"disappear": ["GreetButton"]}, target="GreetButton"),
     False, "GreetButton (still there)"),
]  # fmt: skip


def test_every_action_fails_when_its_expectation_is_not_met(
    tmp_path: Path, make_runner: RunnerFactory
) -> None:
    script = tmp_path / "expect.json"
    script.write_text(
        json.dumps(
            {
                "name": "expectations on every action",
                "app": {"command": ["${python}", str(MINI_APP)], "call_timeout": 5},
                "steps": [case for case, _, _ in CASES],
            }
        ),
        encoding="utf-8",
    )
    result = make_runner(screenshots="none").run(script)
    steps = [s for s in result.steps if s.phase == "steps"]
    assert len(steps) == len(CASES), [(s.path, s.status, s.message) for s in steps]
    for (case, passes, message), got in zip(CASES, steps, strict=True):
        where = f"{got.path} {case['action']}: {got.status} {got.message!r}"
        assert got.status == ("passed" if passes else "failed"), where
        assert message in got.message, where
    assert result.status == "failed"
