"""Assertions on elements (exists, visible, enabled, value, text), shared by the MCP server and
scripts. An assertion reads the element live once and compares; it never waits (use wait_for)."""

from __future__ import annotations

import re
import time
from typing import Literal

from pydantic import BaseModel

from loopkit_ui.backends.protocol import (
    ElementInfo,
    ElementNotFoundError,
    ElementVanishedError,
    Locator,
    UIBackend,
    UIError,
)

__all__ = ["AssertionResult", "TextMatch", "check"]

Check = Literal["exists", "visible", "enabled", "value", "text"]
TextMatch = Literal["equals", "contains", "regex"]


class AssertionResult(BaseModel):
    """The outcome of one assertion."""

    passed: bool
    check: str
    id: str
    expected: str
    actual: str
    ms: float

    def message(self) -> str:
        """One line for humans and models."""
        verdict = "passed" if self.passed else "FAILED"
        return (
            f"assert {self.check} {verdict}: {self.id} is {self.actual}, expected {self.expected}"
        )


def _matches(actual: str | None, expected: str, match: TextMatch) -> bool:
    if actual is None:
        return False
    if match == "equals":
        return actual == expected
    if match == "contains":
        return expected in actual
    try:
        return re.search(expected, actual) is not None
    except re.error as error:
        raise UIError(
            f"expected is not a valid regular expression ({error}): {expected!r}"
        ) from None


def check(
    backend: UIBackend,
    locator: Locator,
    what: Check,
    *,
    expected: str | bool = True,
    match: TextMatch = "equals",
) -> AssertionResult:
    """Evaluate one assertion. ``expected`` is a bool for exists/visible/enabled, a string for
    value/text (compared by ``match``)."""
    start = time.perf_counter()
    info: ElementInfo | None
    try:
        info = backend.get_element(locator)
    except (ElementNotFoundError, ElementVanishedError):
        info = None
    if what in ("exists", "visible", "enabled"):
        if not isinstance(expected, bool):
            raise UIError(f"assert {what} expects true or false, got {expected!r}")
        state = {
            "exists": info is not None,
            "visible": info is not None and info.visible,
            "enabled": info is not None and info.enabled,
        }[what]
        words = {"exists": ("present", "absent"), "visible": ("visible", "not visible"),
                 "enabled": ("enabled", "not enabled")}[what]  # fmt: skip
        actual = words[0] if state else words[1]
        if info is None and what != "exists":
            actual = "absent"
        return AssertionResult(
            passed=state == expected,
            check=what,
            id=locator.describe(),
            expected=words[0] if expected else words[1],
            actual=actual,
            ms=round((time.perf_counter() - start) * 1000, 1),
        )
    if not isinstance(expected, str):
        raise UIError(f"assert {what} expects a string to compare with, got {expected!r}")
    value = None if info is None else (info.value if what == "value" else info.text)
    description = {"equals": repr(expected), "contains": f"containing {expected!r}",
                   "regex": f"matching /{expected}/"}[match]  # fmt: skip
    return AssertionResult(
        passed=_matches(value, expected, match),
        check=what,
        id=locator.describe(),
        expected=description,
        actual="absent" if info is None else repr(value),
        ms=round((time.perf_counter() - start) * 1000, 1),
    )
