"""Checks of settings a user passes, with errors that say what was expected.

Standard library only (imported by the loop, which must not load pydantic or asyncio)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

__all__ = ["check_count", "check_tool_names", "check_unknown_keywords", "tool_name_set"]


def check_count(
    name: str, value: object, minimum: int, *, optional: bool = False, what: str | None = None
) -> None:
    """Raise ``TypeError`` unless ``value`` is an ``int`` (or None when ``optional``), and
    ``ValueError`` when it is below ``minimum``; both name the setting (``what`` says what it
    must be, default ``>= minimum``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        expected = what or f"a whole number >= {minimum}"
        expected += " or None" if optional else ""
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be {what or f'>= {minimum}'}, got {value}")


def tool_name_set(setting: str, names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set of tool names; one string is refused (``"add"`` would be the set of
    its letters)."""
    if isinstance(names, str):
        raise TypeError(
            f"{setting} must be a collection of tool names, e.g. {{{names!r}}}; got the string "
            f"{names!r}"
        )
    return frozenset(names)


def check_tool_names(setting: str, names: Iterable[str], tools: Iterable[str]) -> None:
    """Raise ``ValueError`` naming the known tools when ``names`` (the value of ``setting``,
    e.g. ``approval_required``) holds a name that is no tool: a typo there would otherwise be
    ignored silently (an approval never asked for)."""
    known = sorted(set(tools))
    unknown = sorted(set(names) - set(known))
    if not unknown:
        return
    import difflib

    hints = [
        f"{name!r} -> {close[0]!r}"
        for name in unknown
        if (close := difflib.get_close_matches(name, known, n=1))
    ]
    are = "is not a tool" if len(unknown) == 1 else "are not tools"
    raise ValueError(
        f"{setting} names {', '.join(map(repr, unknown))}, which {are} of this run; the tools "
        f"are: {', '.join(known) or '(none)'}."
        + (f" Did you mean {', '.join(hints)}?" if hints else "")
        + f" Fix the name in {setting} (or add the tool)."
    )


def check_unknown_keywords(call: str, given: Iterable[str], accepted: Collection[str]) -> None:
    """Raise ``TypeError`` for keyword arguments ``call`` does not take, suggesting the
    closest accepted name (``max_round`` -> ``max_rounds``)."""
    unknown = sorted(set(given) - set(accepted))
    if not unknown:
        return
    import difflib

    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(accepted), n=1)
        parts.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    raise TypeError(
        f"{call} got unexpected keyword argument(s) {', '.join(parts)}; it takes: "
        f"{', '.join(sorted(accepted))}"
    )
