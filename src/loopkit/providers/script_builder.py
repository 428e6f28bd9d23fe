"""Writing transcripts in code, for any agent and any card: :class:`ScriptBuilder` and helpers.

A transcript written by hand as JSON drifts from what it replays; written by a small program it is
derived from the things it checks (a file's content, the values a criterion names) and rewritten
when they change. ``scripts/make_transcripts.py`` does that for the demo's bundled cards; this
module is the part that is not tied to them::

    from loopkit.providers.script_builder import ScriptBuilder, call, ok

    script = (
        ScriptBuilder("Scripted run of my card.")
        .turn(call("read_file", ok("def total"), path="app/model.py"), text="Reading first.")
        .turn(call("write_file", ok("Wrote app/model.py"), path="app/model.py", content=fixed))
        .answer("Fixed.\\n\\nRESULT: done")
    )
    script.save("my-card.json")          # or: sync_transcripts({...}, folder, check=True)

Every turn is checked by :class:`~loopkit.providers.scripted.Script`'s own model when it is added,
so a misspelt ``expect`` key fails where it is written, not when the transcript is played.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from loopkit.errors import describe_validation_error
from loopkit.providers.scripted import Script, ScriptedTurn

__all__ = [
    "ScriptBuilder",
    "call",
    "expect",
    "ok",
    "refused",
    "render_script",
    "sync_transcripts",
]


def expect(
    *,
    error: bool | None = None,
    contains: tuple[str, ...] | list[str] = (),
    not_contains: tuple[str, ...] | list[str] = (),
    equals: str | None = None,
    regex: str | None = None,
    json_subset: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``expect`` for a call's result: every condition given must hold."""
    found: dict[str, Any] = {}
    if error is not None:
        found["error"] = error
    if equals is not None:
        found["equals"] = equals
    if contains:
        found["contains"] = list(contains)
    if not_contains:
        found["not_contains"] = list(not_contains)
    if regex is not None:
        found["regex"] = regex
    if json_subset is not None:
        found["json"] = json_subset
    return found


def ok(*fragments: str) -> dict[str, Any]:
    """The result is not an error and contains every fragment."""
    return expect(error=False, contains=fragments)


def refused(*fragments: str) -> dict[str, Any]:
    """The result is an error (the tool refused) and contains every fragment."""
    return expect(error=True, contains=fragments)


def call(name: str, expected: dict[str, Any] | None = None, /, **arguments: Any) -> dict[str, Any]:
    """A tool call of a turn: its name, its arguments, and what its result must look like."""
    made: dict[str, Any] = {"name": name, "arguments": arguments}
    if expected:
        made["expect"] = expected
    return made


class ScriptBuilder:
    """A transcript built turn by turn; each turn is checked as it is added."""

    def __init__(self, description: str = "") -> None:
        self.description = description
        self.turns: list[dict[str, Any]] = []

    def turn(self, *calls: dict[str, Any], text: str = "") -> ScriptBuilder:
        """Add a turn: the model says ``text`` and makes ``calls`` (made by :func:`call`)."""
        made: dict[str, Any] = {"calls": list(calls)}
        if text:
            made["text"] = text
        return self._add(made)

    def answer(self, text: str) -> ScriptBuilder:
        """Add the final turn: text only (the RESULT line of a card run, for one)."""
        return self._add({"text": text})

    def _add(self, made: dict[str, Any]) -> ScriptBuilder:
        try:
            ScriptedTurn.model_validate(made)
        except ValidationError as e:
            raise ValueError(
                f"turn {len(self.turns) + 1} is not valid: {describe_validation_error(e)}"
            ) from None
        self.turns.append(made)
        return self

    def data(self) -> dict[str, Any]:
        """The transcript as JSON data."""
        return {"description": self.description, "turns": list(self.turns)}

    def script(self) -> Script:
        """The transcript as a :class:`Script` (what the scripted model plays)."""
        return Script.model_validate(self.data())

    def render(self) -> str:
        """The transcript file's text (stable: the same turns give the same bytes)."""
        return render_script(self.data())

    def save(self, path: str | Path) -> Path:
        """Write the transcript to ``path`` (its folder is created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.render(), encoding="utf-8")
        return target


def render_script(data: Mapping[str, Any]) -> str:
    """A transcript's file text: JSON, one space of indent, non-ASCII kept, a final newline."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def sync_transcripts(
    builders: Mapping[str, Callable[[], ScriptBuilder | Mapping[str, Any]]],
    folder: str | Path,
    *,
    check: bool = False,
) -> list[Path]:
    """Write ``folder/<name>.json`` for each builder (``name`` may hold a folder: ``test/card``);
    with ``check`` write nothing. Returns the files that were stale (missing or different)."""
    stale: list[Path] = []
    for name, build in builders.items():
        built = build()
        text = built.render() if isinstance(built, ScriptBuilder) else render_script(built)
        target = Path(folder) / f"{name}.json"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(target)
            if not check:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    return stale
