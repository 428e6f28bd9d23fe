"""The approvals of a run as its log tells them: asked (a tool call waiting for a person) and
answered (yes or no, by whom), for the run page and the Slack thread.

The run writes ``approval_requested`` when a call to a tool in ``approval_required`` waits, and
``approval`` with the answer (:mod:`loopkit.durable.approval`); the answer itself travels to
the run as a durable message (:func:`~loopkit.durable.approval.send_approval`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Approval", "read_approvals"]


@dataclass(slots=True)
class Approval:
    """One approval of a run: the call it is about, and the answer once there is one."""

    number: int
    name: str
    arguments: dict[str, Any]
    asked_at: str | None
    approved: bool | None = None
    by: str | None = None
    note: str | None = None
    answered_at: str | None = None

    @property
    def waiting(self) -> bool:
        return self.approved is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "name": self.name,
            "arguments": self.arguments,
            "asked_at": self.asked_at,
            "approved": self.approved,
            "by": self.by,
            "note": self.note,
            "answered_at": self.answered_at,
        }


def approvals_from_lines(lines: list[dict[str, Any]]) -> list[Approval]:
    """The approvals in a run log's lines (parsed), in the order asked."""
    found: dict[int, Approval] = {}
    for line in lines:
        kind, data = line.get("type"), line.get("data")
        if kind not in ("approval_requested", "approval") or not isinstance(data, dict):
            continue
        number = data.get("number")
        if not isinstance(number, int):
            continue
        if kind == "approval_requested":
            arguments = data.get("arguments")
            found.setdefault(
                number,
                Approval(
                    number,
                    str(data.get("name", "")),
                    arguments if isinstance(arguments, dict) else {},
                    line.get("time"),
                ),
            )
        else:
            seen = found.setdefault(number, Approval(number, str(data.get("name", "")), {}, None))
            seen.approved = bool(data.get("approved"))
            seen.by = str(data.get("by") or "") or None
            seen.note = data.get("note") if isinstance(data.get("note"), str) else None
            seen.answered_at = line.get("time")
    return [found[n] for n in sorted(found)]


def read_approvals(log_path: str | Path | None) -> list[Approval]:
    """The approvals in the run log at ``log_path`` (none when there is no log yet)."""
    if log_path is None:
        return []
    lines: list[dict[str, Any]] = []
    try:
        with Path(log_path).open(encoding="utf-8", errors="replace") as f:
            for raw in f:
                if '"approval' not in raw:
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(line, dict):
                    lines.append(line)
    except OSError:
        return []
    return approvals_from_lines(lines)
