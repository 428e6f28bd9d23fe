"""Reading element properties and comparing them: shared by assert, if, store and wait."""

from __future__ import annotations

import re
from typing import Any

from loopkit_ui.backends import (
    ElementNotFoundError,
    ElementVanishedError,
    Locator,
    UIBackend,
)
from loopkit_ui.scripts.variables import format_value

__all__ = ["compare", "read_property"]

_INFO_FIELDS = ("text", "value", "name", "role", "visible", "enabled", "focused", "id", "window")


def read_property(backend: UIBackend, locator: Locator, prop: str) -> Any:
    """One property of an element. ``exists`` never raises (False when absent); ``states`` is
    the comma-separated state list; other names go to the backend's ``get_property``."""
    if prop == "exists":
        try:
            backend.get_element(locator)
        except (ElementNotFoundError, ElementVanishedError):
            return False
        return True
    if prop in _INFO_FIELDS or prop == "states":
        info = backend.get_element(locator)
        if prop == "states":
            return ",".join(info.states)
        if prop == "text":
            return info.text if info.text is not None else info.name
        return getattr(info, prop)
    return backend.get_property(locator, prop)


def compare(operator: str, actual: Any, expected: Any) -> bool:
    """Apply one operator; values compare as text (``true``/``false`` for booleans)."""
    left, right = format_value(actual), format_value(expected)
    if operator == "equals":
        return left == right
    if operator == "not_equals":
        return left != right
    if operator == "contains":
        return right in left
    if operator == "not_contains":
        return right not in left
    if operator == "matches":
        return re.search(right, left) is not None
    raise ValueError(f"unknown operator {operator!r}")
