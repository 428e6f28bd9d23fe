"""A live session's UI calls as script steps (loopkit_ui.scripts.from_session): what each tool
call becomes, what is left out, the steps named after the criterion they replay; the result
validates against the runner's schema."""

from __future__ import annotations

import json

from loopkit_ui.scripts.from_session import LiveCall, steps_from_session
from loopkit_ui.scripts.loader import validate_document


def live(
    call_id: str, name: str, result: str = "", ok: bool = True, **arguments: object
) -> LiveCall:
    return LiveCall(call_id, name, arguments, result, ok, error=False)


def test_each_call_becomes_the_step_that_replays_it() -> None:
    cell = json.dumps({"name": "Consulting", "text": "Consulting", "role": "table cell"})
    refused = json.dumps({"success": False, "detail": "cell text is now '2'"})
    calls = [
        live("s1", "start_app", "The app is running"),
        live("w", "ui_list_windows", '{"windows": []}'),
        live("k", "ui_click", '{"success": true}', target="DeleteSelectedButton",
             expect_appear=["ConfirmDeleteDialog"]),
        live("t", "ui_get_text", 'Delete the item "Consulting"?', target="ConfirmDeleteText"),
        live("c", "ui_get_cell", cell, table="ItemsTable", row=0, column=0),
        live("r", "ui_set_cell", refused, ok=False, table="ItemsTable", row=0, column=1, text="-3"),
        live("x", "ui_click", "Error: no element", ok=False, target="Nope"),
        live("shot", "ui_screenshot", '{"path": "/x.png"}'),
        live("s2", "start_app", "The app is running"),
        live("a", "ui_assert_text", '{"passed": true}', target="TotalLabel", expected="Total",
             match="contains"),
        live("p", "ui_get_property", '{"property": "enabled", "value": false}',
             target="SaveButton", property="enabled"),
    ]  # fmt: skip
    # A failed action that was an error (x) is left out; a refused text (r) is replayed refused.
    calls[6] = LiveCall("x", "ui_click", {"target": "Nope"}, "Error: no element", False, True)
    derived = steps_from_session(calls, {"C1": ["k", "t"], "C2": ["c", "w"]})
    assert derived.steps == [
        {"name": "[C1] click DeleteSelectedButton", "type": "action", "action": "click",
         "target": "DeleteSelectedButton", "expect": {"appear": ["ConfirmDeleteDialog"]}},
        {"name": "[C1] assert ConfirmDeleteText.text equals 'Delete the item \"Consulting\"?'",
         "type": "assert", "target": "ConfirmDeleteText",
         "equals": 'Delete the item "Consulting"?'},
        {"name": "[C2] assert ItemsTable[0, 0].text equals 'Consulting'", "type": "assert",
         "target": "ItemsTable", "row": 0, "column": 0, "equals": "Consulting"},
        {"type": "action", "action": "set_cell", "target": "ItemsTable", "row": 0, "column": 1,
         "text": "-3", "refused": True},
        {"type": "restart_app"},
        {"type": "assert", "target": "TotalLabel", "property": "text", "contains": "Total"},
        {"type": "assert", "target": "SaveButton", "property": "enabled", "equals": False},
    ]  # fmt: skip
    assert derived.criteria == {"C1": [0, 1], "C2": [2]}
    assert derived.not_replayed == {"C2": ["w"]}  # a window list has no step
    validate_document({"name": "replay", "steps": derived.steps}, "replay")
