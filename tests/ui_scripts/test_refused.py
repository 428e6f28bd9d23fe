"""``"refused": true`` on type_text / set_cell: the element must not take the text. The invoice
app as shipped takes any text in a cell and in the discount field, so a refused step fails there
with the reason, and the same steps without ``refused`` pass (the replay of a run that fixed the
validation uses it: tests/demo/test_demo_cards.py, the validate card). The real app under Xvfb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit_ui.scripts import ScriptLoadError, load_script

from .conftest import LIBRARY, RunnerFactory


def script(tmp_path: Path, steps: list[dict[str, object]]) -> Path:
    path = tmp_path / "refused.json"
    path.write_text(
        json.dumps({"name": "refused", "imports": [str(LIBRARY)], "steps": steps}),
        encoding="utf-8",
    )
    return path


def test_refused_is_only_for_text_actions(tmp_path: Path) -> None:
    with pytest.raises(ScriptLoadError, match="'refused' is for type_text and set_cell"):
        load_script(
            script(
                tmp_path, [{"type": "action", "action": "click", "target": "X", "refused": True}]
            )
        )


@pytest.mark.ui
@pytest.mark.integration
def test_a_text_that_was_taken_fails_a_refused_step(
    tmp_path: Path, make_runner: RunnerFactory
) -> None:
    cell = {"type": "action", "action": "set_cell", "target": "ItemsTable", "row": 0, "column": 1}
    steps = [
        {**cell, "text": "abc", "refused": True, "continue_on_failure": True},
        {**cell, "text": "4"},
        {
            "type": "action",
            "action": "type_text",
            "target": "DiscountInput",
            "text": "15",
            "refused": True,
            "continue_on_failure": True,
        },
    ]
    result = make_runner(screenshots="none").run(script(tmp_path, steps))
    got = [(s.status, s.message) for s in result.steps if s.phase == "steps"]
    assert got[0][0] == "failed" and got[0][1].startswith(
        "set_cell ItemsTable[0, 1]: the text was taken (cell text is now 'abc'); expected it to "
        "be refused"
    ), got
    assert got[1][0] == "passed", got
    assert got[2][0] == "failed" and "expected it to be refused" in got[2][1], got
