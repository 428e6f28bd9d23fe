"""A regression script from a live session: the UI server's tool calls an agent made, as steps.

An agent that checks a change live calls the UI server's tools (``ui_click``, ``ui_get_text``,
...). :func:`steps_from_session` turns those calls into the script runner's steps so the same
checks run again without the agent, on a fresh app: every action that succeeded becomes an
``action`` step (with its ``expect``), every read becomes an ``assert`` that the element still
shows what the agent read (``ui_get_text`` ``Total: 225.00`` becomes ``assert TotalLabel equals
"Total: 225.00"``), every ``ui_assert_*`` and ``ui_wait_for`` the step it was, and a restart of the
app a ``restart_app`` step; a text a field refused (``ui_set_cell`` answered ``success: false``)
an action with ``refused: true``. Calls that failed, and calls that show nothing by themselves (a
screenshot, a tree written to a file, a window list), are left out.

Steps that replay the evidence of an acceptance criterion are named after it (``[C2] ...``), so
a failed step in the runner's report says which criterion no longer holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LiveCall", "SessionSteps", "steps_from_session"]

_CLICKS = {"ui_click": "click", "ui_double_click": "double_click", "ui_right_click": "right_click"}
_ASSERTS = {
    "ui_assert_exists": "exists",
    "ui_assert_visible": "visible",
    "ui_assert_enabled": "enabled",
    "ui_assert_text": "text",
    "ui_assert_value": "value",
}
_MATCH = {"equals": "equals", "contains": "contains", "regex": "matches"}
#: The tools whose call starts the app again (the session's first start is the runner's own).
START_TOOLS = frozenset({"start_app", "ui_restart_app"})


@dataclass(frozen=True, slots=True)
class LiveCall:
    """One tool call of the live session: its id, name, arguments, answer (as the agent read
    it), whether it succeeded (no error, no ``success: false``) and whether it was an error."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    result: str
    ok: bool
    error: bool = False


@dataclass(slots=True)
class SessionSteps:
    """The steps of a session, and which steps replay which criterion's evidence."""

    steps: list[dict[str, Any]]
    #: Criterion id -> indexes into ``steps`` (only criteria with a replayed check).
    criteria: dict[str, list[int]]
    #: Criterion id -> the ids of its checks that have no step (not replayable).
    not_replayed: dict[str, list[str]]


def steps_from_session(
    calls: Sequence[LiveCall], evidence: Mapping[str, Sequence[str]] | None = None
) -> SessionSteps:
    """The script steps that replay ``calls`` (see the module docstring); ``evidence`` maps a
    criterion id to the ids of the calls that show it."""
    cited: dict[str, list[str]] = {}
    for criterion, ids in (evidence or {}).items():
        for call_id in ids:
            cited.setdefault(call_id, []).append(criterion)
    steps: list[dict[str, Any]] = []
    criteria: dict[str, list[int]] = {}
    replayed: set[str] = set()
    started = False
    for call in calls:
        if call.name in START_TOOLS:
            if call.ok:
                if started:
                    steps.append({"type": "restart_app"})
                started = True
            continue
        step = _step(call) if call.ok else _refused(call)
        if step is None:
            continue
        owners = cited.get(call.call_id, [])
        if owners:
            step = {"name": f"[{', '.join(owners)}] {_describe(step)}", **step}
            for criterion in owners:
                criteria.setdefault(criterion, []).append(len(steps))
            replayed.add(call.call_id)
        steps.append(step)
    not_replayed = {
        criterion: [i for i in ids if i not in replayed]
        for criterion, ids in (evidence or {}).items()
        if any(i not in replayed for i in ids)
    }
    return SessionSteps(steps, criteria, not_replayed)


def _where(arguments: Mapping[str, Any], *, target: str = "target") -> dict[str, Any]:
    where: dict[str, Any] = {"target": arguments[target]}
    for key in ("row", "column", "window"):
        if arguments.get(key) is not None:
            where[key] = arguments[key]
    return where


def _step(call: LiveCall) -> dict[str, Any] | None:
    """The step that replays one successful call (None: nothing to replay)."""
    a = call.arguments
    name = call.name
    if name in _CLICKS:
        step: dict[str, Any] = {"type": "action", "action": _CLICKS[name], **_where(a)}
        if a.get("method", "auto") != "auto":
            step["method"] = a["method"]
        expect = {
            k: list(a[f"expect_{k}"]) for k in ("appear", "disappear") if a.get(f"expect_{k}")
        }
        if expect:
            if a.get("expect_timeout") is not None:
                expect["timeout"] = a["expect_timeout"]
            step["expect"] = expect
        return step
    if name == "ui_hover":
        return {"type": "action", "action": "hover", **_where(a)}
    if name == "ui_type_text":
        step = {"type": "action", "action": "type_text", **_where(a), "text": a["text"]}
        if a.get("clear") is False:
            step["clear"] = False
        return step
    if name == "ui_press_keys":
        step = {"type": "action", "action": "press_keys", "keys": a["keys"]}
        if a.get("target"):
            step.update(_where(a))
        return step
    if name == "ui_select_item":
        return {"type": "action", "action": "select_item", **_where(a), "item": a["item"]}
    if name == "ui_drag_and_drop":
        step = {"type": "action", "action": "drag_and_drop", "target": a["source"]}
        step["to"] = a["target"]
        return step
    if name == "ui_set_cell":
        return {"type": "action", "action": "set_cell", **_where(a, target="table"),
                "text": a["text"]}  # fmt: skip
    return _check(call)


def _refused(call: LiveCall) -> dict[str, Any] | None:
    """A ``ui_set_cell`` or ``ui_type_text`` whose read-back differed (``success: false``, no
    error): the field refused the text, which the replay expects again."""
    if call.error or call.name not in ("ui_set_cell", "ui_type_text"):
        return None
    step = _step(call)
    if step is not None:
        step["refused"] = True
    return step


def _check(call: LiveCall) -> dict[str, Any] | None:
    a = call.arguments
    name = call.name
    if name == "ui_get_text":
        return {"type": "assert", **_where(a), "equals": call.result}
    if name == "ui_get_cell":
        element = _json(call.result)
        if not isinstance(element, dict):
            return None
        text = element.get("text") if element.get("text") is not None else element.get("name")
        return {"type": "assert", **_where(a, target="table"), "equals": text}
    if name == "ui_get_property":
        answer = _json(call.result)
        if not isinstance(answer, dict) or "value" not in answer or answer["value"] is None:
            return None
        return {"type": "assert", **_where(a), "property": a["property"], "equals": answer["value"]}
    if name == "ui_get_element":
        return {"type": "assert", **_where(a), "property": "exists", "equals": True}
    if name in _ASSERTS:
        prop = _ASSERTS[name]
        if prop in ("exists", "visible", "enabled"):
            return {"type": "assert", **_where(a), "property": prop,
                    "equals": a.get("expected", True)}  # fmt: skip
        operator = _MATCH.get(str(a.get("match", "equals")), "equals")
        return {"type": "assert", **_where(a), "property": prop, operator: a["expected"]}
    if name == "ui_wait_for":
        step = {"type": "wait_for", **_where(a), "condition": a["condition"]}
        if a.get("value") is not None:
            step["value"] = a["value"]
        if a.get("timeout") is not None:
            step["timeout"] = a["timeout"]
        return step
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _describe(step: dict[str, Any]) -> str:
    where = str(step.get("target", ""))
    if step.get("row") is not None:
        where += f"[{step['row']}, {step.get('column')}]"
    if step["type"] == "action":
        extra = step.get("text") or step.get("keys") or step.get("item")
        return f"{step['action']} {where}" + (f" {extra!r}" if extra else "")
    if step["type"] == "assert":
        operator = next(k for k in ("equals", "contains", "matches") if k in step)
        return f"assert {where}.{step.get('property', 'text')} {operator} {step[operator]!r}"
    return f"{step['type']} {where}"
