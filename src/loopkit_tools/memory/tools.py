"""``MemoryTools``: the memory as loopkit Tools for the model.

``read_router``, ``read_topic``, ``read_note``, ``search_notes``, ``write_note``, ``add_rule``,
``read_rules`` and ``check_terms``, built like :class:`~loopkit_tools.local_tools.LocalTools`
builds its tools (bound methods as :class:`~loopkit.abstractions.FunctionTool`, schemas from the
``Annotated`` signatures). Bad input is a :class:`~loopkit.abstractions.ToolError` naming the
input and what was expected, which the loop hands to the model as the tool's result.

Usage::

    memory = MemoryTools(repo)                  # notes in repo/notes, index in the cache folder
    options = ChatOptions(tools=[*local.tools, *memory.tools])
    ...
    memory.close()
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import ValidationError

from loopkit.abstractions import FunctionTool, Tool
from loopkit_tools.memory.glossary import GlossaryFiles, check_language
from loopkit_tools.memory.models import Note
from loopkit_tools.memory.notebook import Notebook, NotesError
from loopkit_tools.memory.rules import FeedbackRules, check_scope
from loopkit_tools.memory.search import NoteIndex


def _validation_message(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'note'}: {e['msg']}".replace("Value error, ", "")
        for e in error.errors()
    )


class MemoryTools:
    """The memory tools of one repository's notes folder.

    Args:
        root: the repository.
        folder: its notes folder (relative to ``root``).
        language: the glossary ``write_note`` and ``check_terms`` use by default.
        cache_dir: where the search index goes (default: the user's cache folder).
        index_path: the search index file, if not in ``cache_dir``.
        check_notes: refuse a note that uses a wrong term of the glossary (when one exists).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        folder: str = "notes",
        *,
        language: str = "en",
        cache_dir: str | os.PathLike[str] | None = None,
        index_path: str | os.PathLike[str] | None = None,
        check_notes: bool = True,
    ) -> None:
        self.notebook = Notebook(root, folder, cache_dir=cache_dir)
        self.index = NoteIndex(self.notebook, index_path)
        self.rules = FeedbackRules(self.notebook)
        self.glossaries = GlossaryFiles(self.notebook)
        self.language = check_language(language)
        self.check_notes = check_notes
        self.tools: list[Tool] = self._make_tools()
        """The tools to hand to the model."""

    def close(self) -> None:
        """Close the search index."""
        self.index.close()

    def __enter__(self) -> MemoryTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ notes

    def read_router(self) -> str:
        text = self.notebook.read_if_exists(self.notebook.router_path)
        if text is None:
            return (
                f"There are no notes yet ({self.notebook.router_path} does not exist); "
                "write_note creates the router with the first note."
            )
        return text

    def read_topic(
        self, topic: Annotated[str, "a topic name as the router lists it, e.g. 'invoice-editing'"]
    ) -> str:
        return self.notebook.read_topic(topic)

    def read_note(
        self,
        path: Annotated[str, "the note's path as search_notes or a topic file shows it"],
    ) -> str:
        return self.notebook.read_note(path)

    def search_notes(
        self,
        symptom: Annotated[str, "what you saw, in a few words, e.g. 'value reverts after save'"],
        limit: Annotated[int, "at most this many notes (1 to 50)"] = 5,
    ) -> str:
        hits = self.index.search(symptom, limit)
        if not hits:
            return (
                f"No note matches {symptom!r}. Try other words for what you saw, or read the "
                "router (read_router)."
            )
        matches = "1 note matches" if len(hits) == 1 else f"{len(hits)} notes match"
        lines = [f"{matches} {symptom!r}, best first:"]
        for i, hit in enumerate(hits, 1):
            where = ", ".join(filter(None, [hit.kind, hit.topic])) or "unparsed"
            lines.append(f"{i}. {hit.path} [{where}] {hit.title} — {hit.summary}")
        lines.append("Open one with read_note(path).")
        return "\n".join(lines)

    def write_note(
        self,
        kind: Annotated[
            Literal["failure", "workflow", "verdict"],
            "failure: symptom, cause and fix; workflow: steps; verdict: verdict",
        ],
        topic: Annotated[str, "the topic: an existing one from the router, or a new name"],
        title: Annotated[str, "one line; the same title in the same topic rewrites that note"],
        symptom: Annotated[str, "failure: what you saw, in the words you would search for"] = "",
        cause: Annotated[str, "failure: why it happened"] = "",
        fix: Annotated[str, "failure: the step that works"] = "",
        steps: Annotated[list[str] | None, "workflow: the checked sequence, one step each"] = None,
        verdict: Annotated[str, "verdict: your judgement of the feature or task"] = "",
        related: Annotated[list[str] | None, "neighbouring topics the topic file links to"] = None,
        topic_description: Annotated[str, "one line describing a new topic (optional)"] = "",
    ) -> str:
        try:
            note = Note(
                kind=kind,
                topic=topic,
                title=title,
                symptom=symptom,
                cause=cause,
                fix=fix,
                steps=steps or [],
                verdict=verdict,
            )
        except ValidationError as e:
            raise NotesError(f"the note was not written: {_validation_message(e)}") from None
        glossary = self.glossaries.find(self.language) if self.check_notes else None
        if glossary is not None:
            text = "\n".join([note.title, note.symptom, note.cause, note.fix, *note.steps])
            wrong = glossary.check(f"{text}\n{note.verdict}")
            if wrong:
                named = "; ".join(f"{w.found!r} → {w.replacement!r}" for w in wrong)
                raise NotesError(f"the note was not written: it uses wrong terms: {named}")
        written = self.notebook.write_note(
            note, related=related or [], description=topic_description or None
        )
        action = "Rewrote" if written.replaced else "Wrote"
        topic_state = "new topic" if written.new_topic else "topic"
        count = written.notes_in_topic
        return (
            f"{action} {written.path}; router and {topic_state} {written.topic!r} updated "
            f"({count} {'note' if count == 1 else 'notes'} in it)."
        )

    # ------------------------------------------------------------------ rules and glossary

    def add_rule(
        self,
        text: Annotated[str, "the rule, e.g. the user's message 'remember: ...'"],
        scope: Annotated[str, "where it applies: 'test', 'documentation', ... or 'all'"],
    ) -> str:
        rule, new = self.rules.add(text, scope)
        if not new:
            return f"Rule {rule.number} [{rule.scope}] already says this; nothing added."
        return f"Added rule {rule.number} [{rule.scope}]: {rule.text}"

    def read_rules(
        self, scope: Annotated[str, "the scope of this run, e.g. 'test' or 'documentation'"]
    ) -> str:
        check_scope(scope)
        rules = self.rules.in_scope(scope)
        if not rules:
            return f"No rules apply in scope {scope!r}."
        lines = [f"Rules in scope {scope!r} (cite the numbers you applied in your report):"]
        lines += [rule.render() for rule in rules]
        return "\n".join(lines)

    def check_terms(
        self,
        text: Annotated[str, "the text for a report or a note, checked before it is written"],
        language: Annotated[str | None, "the glossary's language (default: the run's)"] = None,
    ) -> str:
        if not isinstance(text, str):
            raise NotesError(f"text must be a string, got {type(text).__name__}")
        language = check_language(language or self.language)
        wrong = self.glossaries.load(language).check(text)
        if not wrong:
            return f"No wrong terms (glossary {language!r})."
        count = "1 wrong term" if len(wrong) == 1 else f"{len(wrong)} wrong terms"
        lines = [f"{count} (glossary {language!r}); replace them:"]
        lines += [f"- {w.describe()}" for w in wrong]
        return "\n".join(lines)

    # ------------------------------------------------------------------ descriptions

    def _make_tools(self) -> list[Tool]:
        folder = f"{self.notebook.folder}/"
        descriptions = {
            "read_router": (
                f"Reads the notes' router ({folder}README.md): one line per topic with its number "
                "of notes. Read it before the first action of a run, then open one to three "
                "topics with read_topic."
            ),
            "read_topic": (
                "Reads one topic file: one line per note (kind, title, path, summary) and links "
                "to neighbouring topics (follow at most one). Open a note with read_note."
            ),
            "read_note": f"Reads one note under {folder} by the path a topic or search shows.",
            "search_notes": (
                "Searches every note by symptom (full-text, ranked, best first). Use it when a "
                "step fails, instead of repeating the call: describe what you saw ('value "
                "reverts after save'), not the feature."
            ),
            "write_note": (
                "Writes a note and updates its topic file and the router in one change. Kinds: "
                "failure (symptom, cause, fix: the step that works), workflow (steps: a checked "
                "sequence), verdict (verdict: your judgement of a feature). Write only what you "
                "checked live. The same title in the same topic rewrites that note."
            ),
            "add_rule": (
                "Adds a numbered feedback rule with a scope; use it when the user's message "
                "starts with 'remember'. Numbers never change."
            ),
            "read_rules": (
                "Reads the feedback rules of a scope (and those of scope 'all'). Read them at "
                "the start of a run; cite the numbers you applied in your report."
            ),
            "check_terms": (
                "Checks a text against the glossary before it goes into a report or a note; "
                "names each wrong term, where it is, and its replacement."
            ),
        }
        return [self._tool(name, text) for name, text in descriptions.items()]

    def _tool(self, name: str, description: str) -> FunctionTool[Any, Any]:
        fn: Any = getattr(self, name)
        return FunctionTool(fn, name=name, description=description)
