"""Script variables: scopes and ``${...}`` interpolation.

- ``${name}`` is the variable ``name``; ``${name.key}`` / ``${name.0}`` reach into dicts/lists.
- ``${env:NAME}`` is the runner's environment variable NAME (an error when unset).
- A string that is exactly one ``${...}`` keeps the value's type (a list stays a list, for
  ``for_each``); inside longer text values are formatted (``true``/``false``, ``None`` -> ``""``).
- ``$${`` writes a literal ``${``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["InterpolationError", "Scope", "format_value", "interpolate"]

_REF = re.compile(r"\$\$\{|\$\{([^}]*)\}")
_WHOLE = re.compile(r"^\$\{([^}]*)\}$")


class InterpolationError(ValueError):
    """A ``${...}`` reference that cannot be resolved; the message names it."""


class Scope:
    """Variables of one script level; lookups fall back to the parent scope."""

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        parent: Scope | None = None,
        env: Mapping[str, str] | None = None,
        *,
        script_level: bool = False,
    ) -> None:
        self.values: dict[str, Any] = dict(values or {})
        self.parent = parent
        self.script_level = script_level or parent is None
        self._env = env

    @property
    def env(self) -> Mapping[str, str]:
        """The environment ``${env:NAME}`` reads (the root scope's, else ``os.environ``)."""
        if self._env is not None:
            return self._env
        return self.parent.env if self.parent is not None else os.environ

    def child(
        self, values: Mapping[str, Any] | None = None, *, script_level: bool = False
    ) -> Scope:
        """A nested scope; reads see the parents. A script-level scope (a script or
        sub-script) keeps assignments to new names; a loop or block scope passes them up."""
        return Scope(values, parent=self, script_level=script_level)

    def set(self, name: str, value: Any) -> None:
        """Set ``name`` in this scope."""
        self.values[name] = value

    def assign(self, name: str, value: Any) -> None:
        """``set``/``store``: update the scope that defines ``name`` (up to the script), else
        define it at script level, so a value stored inside a loop is seen after it."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values or scope.script_level:
                scope.values[name] = value
                return
            scope = scope.parent

    def names(self) -> list[str]:
        """Every visible variable name."""
        names = set(self.values)
        if self.parent is not None:
            names |= set(self.parent.names())
        return sorted(names)

    def lookup(self, name: str) -> Any:
        """The value of ``name`` (KeyError when undefined)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        raise KeyError(name)

    def resolve(self, reference: str, text: str) -> Any:
        """The value of one ``${reference}`` found in ``text`` (for messages)."""
        reference = reference.strip()
        if reference.startswith("env:"):
            key = reference[4:]
            if key not in self.env:
                raise InterpolationError(
                    f"environment variable {key!r} (used in {text!r}) is not set"
                )
            return self.env[key]
        head, *rest = reference.split(".")
        try:
            value = self.lookup(head)
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise InterpolationError(
                f"unknown variable {head!r} in {text!r}; defined variables: {known}"
            ) from None
        for part in rest:
            value = _index(value, part, reference, text)
        return value


def _index(value: Any, part: str, reference: str, text: str) -> Any:
    if isinstance(value, Mapping) and part in value:
        return value[part]
    if (
        isinstance(value, list)
        and part.lstrip("-").isdigit()
        and -len(value) <= int(part) < len(value)
    ):
        return value[int(part)]
    raise InterpolationError(
        f"{reference!r} in {text!r}: {part!r} is not a key or index of {format_value(value)!r}"
    )


def format_value(value: Any) -> str:
    """A value as text inside a string: ``true``/``false`` for booleans, ``""`` for None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def interpolate(value: Any, scope: Scope) -> Any:
    """``value`` with every ``${...}`` in its strings (recursively) replaced."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return scope.resolve(whole.group(1), value)

        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            return format_value(scope.resolve(match.group(1), value))

        return _REF.sub(replace, value)
    if isinstance(value, list):
        return [interpolate(item, scope) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item, scope) for key, item in value.items()}
    return value
