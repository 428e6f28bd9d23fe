"""A card's acceptance criteria as data: ids ``C1``, ``C2``, ... in the order the card lists them.

The criteria are the bullet points under the card's "Acceptance criteria" heading (a bullet may
run over several lines). A criterion that cannot be checked in the running app (say, "the new
method has a docstring") is marked ``(manual)`` at the start or the end of its bullet::

    - (manual) The new method has a docstring.

It needs no evidence from the run and is reported as *unverified*, never as passed. The ids are
positions: the same card text always gives the same ids, and they are shown to the model with
the criteria (:func:`criteria_section`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["MANUAL_TAG", "Criterion", "criteria_section", "parse_criteria"]

#: The tag that marks a criterion as not checkable in the app.
MANUAL_TAG = "(manual)"

_HEADING = re.compile(
    r"acceptance criteria\**:?\**\s*\n(.*?)(?:\n\s*\n(?![ \t]*[-*] )|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_BULLET = re.compile(r"^\s*[-*]\s+")
_TAG_FIRST = re.compile(r"^\(manual\)\s*[:\-–]?\s*", re.IGNORECASE)
_TAG_LAST = re.compile(r"\s*\(manual\)\s*[.]?$", re.IGNORECASE)


class Criterion(BaseModel):
    """One acceptance criterion: its id, its text (without the tag) and whether it is manual."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    #: Marked ``(manual)``: not checkable in the running app; reported as unverified.
    manual: bool = False

    def line(self) -> str:
        """How the model is shown it: ``C2: text`` (manual ones say so)."""
        if self.manual:
            return (
                f"{self.id} (manual: not checked in the app; reported as unverified): {self.text}"
            )
        return f"{self.id}: {self.text}"


def parse_criteria(body: str) -> list[Criterion]:
    """The criteria under the "Acceptance criteria" heading of a card's ``body`` (may be
    empty), numbered from ``C1``."""
    found = _HEADING.search(body)
    if not found:
        return []
    items: list[str] = []
    for line in found.group(1).splitlines():
        if _BULLET.match(line):
            items.append(_BULLET.sub("", line).strip())
        elif items and line.strip():
            items[-1] += " " + line.strip()
    criteria = []
    for number, item in enumerate(items, start=1):
        text, manual = _untagged(item)
        criteria.append(Criterion(id=f"C{number}", text=text, manual=manual))
    return criteria


def _untagged(item: str) -> tuple[str, bool]:
    for tag in (_TAG_FIRST, _TAG_LAST):
        if tag.search(item):
            return tag.sub("", item, count=1).strip(), True
    return item, False


def criteria_section(criteria: Sequence[Criterion]) -> str:
    """The criteria by id, as they follow the card in a run's prompt ("" without criteria)."""
    if not criteria:
        return ""
    title = "ACCEPTANCE CRITERIA BY ID"
    lines = "\n".join(c.line() for c in criteria)
    return f"\n\n{title}\n{'-' * len(title)}\n{lines}\n"
