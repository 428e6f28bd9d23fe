"""Feedback rules: numbered rules from testers and developers, each with a scope.

The rules are one Markdown file in the notes folder (``<notes>/rules.md``), one rule a line::

    1. [test] Set a different value, save, reopen and read it back for every field.
    2. [documentation] Name menu paths with ' > ' between the items.
    3. [all] Write dates as YYYY-MM-DD.

A rule's number never changes: a new rule gets the highest number so far plus one, lines are
appended and never renumbered, and a rule that no longer holds is retired by changing its scope to
``retired`` (reading a scope never returns retired rules), not by deleting the line. Rules of scope
``all`` apply in every scope. A chat message that starts with "remember" is a new rule
(:func:`rule_from_message`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from loopkit_tools.memory.notebook import Notebook, NotesError

RULES_NAME = "rules.md"
ALL_SCOPES = "all"
RETIRED = "retired"
SCOPE_PATTERN = r"[a-z][a-z0-9-]{0,31}"

_SCOPE = re.compile(SCOPE_PATTERN)
_LINE = re.compile(rf"^(?P<number>\d+)\. \[(?P<scope>{SCOPE_PATTERN})\] (?P<text>\S.*)$")
_REMEMBER = re.compile(r"^\s*remember\b[\s,:;.!-]*(?:that\s+)?", re.IGNORECASE)
_HEADER = (
    "# Feedback rules\n\n"
    "Numbered rules from testers and developers, each with a scope. Cite the numbers you applied "
    "in your report. Numbers never change: retire a rule by setting its scope to [retired].\n\n"
)


class Rule(BaseModel):
    """One feedback rule."""

    number: int
    scope: str
    text: str

    def render(self) -> str:
        """The rule's line in the rules file."""
        return f"{self.number}. [{self.scope}] {self.text}"


def parse_rules(text: str) -> list[Rule]:
    """The rules of a rules file, in file order; other lines are skipped."""
    rules = []
    for line in text.splitlines():
        if m := _LINE.match(line.strip()):
            rules.append(Rule(number=int(m["number"]), scope=m["scope"], text=m["text"].strip()))
    return rules


def rule_from_message(message: str) -> str | None:
    """The rule a chat message asks to remember ("remember: ..."), or None if it asks none."""
    m = _REMEMBER.match(message)
    if m is None:
        return None
    return " ".join(message[m.end() :].split()) or None


def check_scope(scope: object) -> str:
    """``scope`` if it is a valid scope name, else a :class:`NotesError` naming it."""
    if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
        raise NotesError(
            f"scope {scope!r} is not a scope name: expected lowercase letters, digits and '-' "
            "starting with a letter, e.g. 'test' or 'documentation'"
        )
    return scope


class FeedbackRules:
    """The rules file of a :class:`Notebook`."""

    def __init__(self, notebook: Notebook) -> None:
        self.notebook = notebook
        self.path = f"{notebook.folder}/{RULES_NAME}"

    def all(self) -> list[Rule]:
        """Every rule, retired ones too."""
        return parse_rules(self.notebook.read_if_exists(self.path) or "")

    def in_scope(self, scope: str) -> list[Rule]:
        """The rules that apply in ``scope``: its own and those of scope ``all``."""
        check_scope(scope)
        if scope == RETIRED:
            return [rule for rule in self.all() if rule.scope == RETIRED]
        return [rule for rule in self.all() if rule.scope in (scope, ALL_SCOPES)]

    def add(self, text: str, scope: str) -> tuple[Rule, bool]:
        """Add a rule (a leading "remember" is dropped); returns it and whether it is new.

        The same text in the same scope is not added twice: the existing rule is returned.
        """
        check_scope(scope)
        if scope == RETIRED:
            raise NotesError(
                "scope 'retired' is for rules that no longer hold; add to a live scope"
            )
        if not isinstance(text, str):
            raise NotesError(f"rule text must be a string, got {type(text).__name__}")
        cleaned = rule_from_message(text) or " ".join(text.split())
        if _REMEMBER.fullmatch(cleaned) or not cleaned:
            raise NotesError(f"rule text {text!r} is empty; say what to remember")
        if len(cleaned) > 500:
            raise NotesError(f"rule text has {len(cleaned)} characters; keep a rule under 500")
        with self.notebook.locked():
            existing = self.notebook.read_if_exists(self.path)
            rules = parse_rules(existing or "")
            for rule in rules:
                if rule.scope == scope and rule.text.casefold() == cleaned.casefold():
                    return rule, False
            rule = Rule(
                number=max((r.number for r in rules), default=0) + 1, scope=scope, text=cleaned
            )
            base = existing if existing is not None else _HEADER
            if base and not base.endswith("\n"):
                base += "\n"
            self.notebook.guard.write_text(self.path, base + rule.render() + "\n")
        return rule, True
