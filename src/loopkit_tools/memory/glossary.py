"""The glossary of one language: allowed terms with definitions, wrong terms with replacements.

One Markdown file per language in the notes folder (``<notes>/glossary/<language>.md``)::

    # Glossary (en)

    ## Terms
    - **invoice**: a bill sent to a customer, with its lines and total.
    - **customer**: the person or company an invoice is addressed to.

    ## Wrong terms
    - bill → invoice
    - pop-up → dialog

:meth:`Glossary.check` names each wrong term in a text: whole words only (``bill`` does not match
``billing``), case-insensitive, a term of several words matching across any whitespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loopkit_tools.memory.models import sections
from loopkit_tools.memory.notebook import Notebook, NotesError

LANGUAGE_PATTERN = r"[a-z]{2,3}(?:-[a-z0-9]{2,8})?"
_LANGUAGE = re.compile(LANGUAGE_PATTERN)
_TERM = re.compile(r"^[-*]\s+\*\*(?P<term>.+?)\*\*\s*:\s*(?P<definition>.+)$")
_WRONG = re.compile(r"^[-*]\s+(?P<wrong>.+?)\s*(?:→|->)\s*(?P<right>.+?)\s*$")


@dataclass(frozen=True)
class WrongTerm:
    """A wrong term found in a text, where, and what to write instead."""

    term: str
    """The wrong term as the glossary lists it."""
    found: str
    """The text as it appears (its case, its whitespace)."""
    replacement: str
    line: int
    column: int

    def describe(self) -> str:
        """One line for the model: where, what, and the replacement."""
        return (
            f"line {self.line}, column {self.column}: {self.found!r} is a wrong term; "
            f"write {self.replacement!r}"
        )


def _pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(word) for word in term.split()]
    # \w on both sides: whole words, also for terms that start or end with punctuation
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


class Glossary:
    """The terms of one language.

    Args:
        language: e.g. ``en``, ``de``, ``pt-br``.
        terms: allowed term → definition.
        wrong: wrong term → its replacement.
    """

    def __init__(self, language: str, terms: dict[str, str], wrong: dict[str, str]) -> None:
        self.language = language
        self.terms = dict(terms)
        self.wrong = dict(wrong)
        # longest first, so "pop up window" is named before "pop up" inside it
        self._patterns = [
            (term, _pattern(term))
            for term in sorted(self.wrong, key=lambda t: (-len(t), t))
            if term.split()
        ]

    @classmethod
    def parse(cls, language: str, text: str) -> Glossary:
        """Read a glossary file (the sections ``## Terms`` and ``## Wrong terms``)."""
        parts = {name.casefold(): content for name, content in sections(text).items()}
        terms: dict[str, str] = {}
        for line in parts.get("terms", "").splitlines():
            if m := _TERM.match(line.strip()):
                terms[m["term"].strip()] = m["definition"].strip()
        wrong: dict[str, str] = {}
        for line in parts.get("wrong terms", "").splitlines():
            if m := _WRONG.match(line.strip()):
                wrong[m["wrong"].strip()] = m["right"].strip()
        return cls(language, terms, wrong)

    def render(self) -> str:
        """The glossary file's content."""
        terms = "\n".join(f"- **{term}**: {text}" for term, text in self.terms.items())
        wrong = "\n".join(f"- {term} → {right}" for term, right in self.wrong.items())
        return f"# Glossary ({self.language})\n\n## Terms\n{terms}\n\n## Wrong terms\n{wrong}\n"

    def check(self, text: str) -> list[WrongTerm]:
        """Every wrong term in ``text``, in the order they appear (overlaps named once)."""
        found: list[tuple[int, int, str]] = []
        for term, pattern in self._patterns:
            for m in pattern.finditer(text):
                if not any(start < m.end() and m.start() < end for start, end, _ in found):
                    found.append((m.start(), m.end(), term))
        hits = []
        for start, end, term in sorted(found):
            line = text.count("\n", 0, start) + 1
            column = start - (text.rfind("\n", 0, start) + 1) + 1
            hits.append(WrongTerm(term, text[start:end], self.wrong[term], line, column))
        return hits


def check_language(language: object) -> str:
    """``language`` if it is a language code, else a :class:`NotesError` naming it."""
    if not isinstance(language, str) or not _LANGUAGE.fullmatch(language):
        raise NotesError(
            f"language {language!r} is not a language code: expected e.g. 'en', 'de' or 'pt-br'"
        )
    return language


class GlossaryFiles:
    """The glossary files of a :class:`Notebook`, one per language."""

    def __init__(self, notebook: Notebook) -> None:
        self.notebook = notebook
        self.folder = f"{notebook.folder}/glossary"

    def path(self, language: str) -> str:
        """The glossary file of ``language``, relative to the repository."""
        return f"{self.folder}/{check_language(language)}.md"

    def languages(self) -> list[str]:
        """The languages that have a glossary file."""
        prefix = f"{self.folder}/"
        names = [path[len(prefix) : -3] for path in self.notebook.guard.stamps(self.folder)]
        return sorted(name for name in names if _LANGUAGE.fullmatch(name))

    def find(self, language: str) -> Glossary | None:
        """The glossary of ``language``, or None when it has none."""
        text = self.notebook.read_if_exists(self.path(language))
        return None if text is None else Glossary.parse(language, text)

    def load(self, language: str) -> Glossary:
        """The glossary of ``language``; a missing one is refused with the languages that exist."""
        glossary = self.find(language)
        if glossary is None:
            known = ", ".join(self.languages()) or "none yet"
            raise NotesError(
                f"no glossary for language {language!r} ({self.path(language)} does not exist); "
                f"glossaries: {known}"
            )
        return glossary

    def save(self, glossary: Glossary) -> None:
        """Write ``glossary`` to its language's file."""
        with self.notebook.locked():
            self.notebook.guard.write_text(self.path(glossary.language), glossary.render())
