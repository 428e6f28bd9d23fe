"""A note of the agent's memory: the pydantic model and its Markdown form.

A note is one Markdown file, ``<notes>/<topic>/<slug>.md``: front matter with its kind and topic,
a ``#`` heading with its title, and one ``##`` section per field::

    ---
    kind: failure
    topic: editing
    ---
    # Amount reverts after save

    ## Symptom
    The amount field shows the old value after Save.

    ## Cause
    The field commits its value on focus loss only.

    ## Fix
    Press Tab before Save.

Three kinds: ``failure`` (symptom, cause, fix: the step that works), ``workflow`` (steps: a
checked sequence) and ``verdict`` (the judgement of a feature). :meth:`Note.from_markdown` reads
what :meth:`Note.to_markdown` writes; a hand-written note that does not fit is still searchable
(the index keeps its raw text), but :func:`parse_note` names what is wrong with it.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

NoteKind = Literal["failure", "workflow", "verdict"]
"""The three kinds of note."""

KINDS: tuple[str, ...] = get_args(NoteKind)
TOPIC_PATTERN = r"[a-z0-9][a-z0-9-]{0,47}"
RESERVED_TOPICS = frozenset({"readme", "rules", "glossary"})
"""Names of the memory's own files and folders, so no topic may take them."""

# libyaml's safe loader where it is built in: the pure-Python one is half of indexing 1,000 notes
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOPIC = re.compile(TOPIC_PATTERN)
_FRONT = re.compile(r"\A---\n(.*?)\n---\n?", re.S)
_SECTION = re.compile(r"^## +(.+?) *$", re.M)
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+(.*)$")
_MAX_TITLE = 120
_MAX_FIELD = 2_000


def check_topic(topic: object) -> str:
    """``topic`` if it is a valid topic name; a ``ValueError`` naming it and the rule otherwise."""
    if not isinstance(topic, str) or not _TOPIC.fullmatch(topic):
        raise ValueError(
            f"topic {topic!r} is not a topic name: expected lowercase letters, digits and '-' "
            "(at most 48, starting with a letter or digit), e.g. 'invoice-editing'"
        )
    if topic in RESERVED_TOPICS:
        raise ValueError(f"topic {topic!r} is reserved for the memory's own files; choose another")
    return topic


def slug(title: str) -> str:
    """The file name (without ``.md``) of a note titled ``title``: lowercase words joined by '-'."""
    words = re.findall(r"[a-z0-9]+", title.casefold())
    return "-".join(words)[:60].strip("-") or "note"


def _one_line(value: str) -> str:
    return " ".join(value.split())


class Note(BaseModel):
    """One note. Which fields must be filled depends on ``kind`` (the validator says which)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    kind: NoteKind
    topic: str
    title: str = Field(min_length=1, max_length=_MAX_TITLE)
    symptom: str = Field(default="", max_length=_MAX_FIELD, description="failure: what was seen")
    cause: str = Field(default="", max_length=_MAX_FIELD, description="failure: why it happened")
    fix: str = Field(default="", max_length=_MAX_FIELD, description="failure: the step that works")
    steps: list[str] = Field(default_factory=list, description="workflow: the checked sequence")
    verdict: str = Field(default="", max_length=_MAX_FIELD, description="verdict: the judgement")

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return check_topic(value)

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("title must be one line")
        return value

    @field_validator("steps")
    @classmethod
    def _steps(cls, value: list[str]) -> list[str]:
        return [_one_line(step) for step in value if step.strip()]

    @model_validator(mode="after")
    def _fields_of_kind(self) -> Note:
        needed = {
            "failure": ("symptom", "cause", "fix"),
            "workflow": ("steps",),
            "verdict": ("verdict",),
        }[self.kind]
        missing = [name for name in needed if not getattr(self, name)]
        if missing:
            raise ValueError(f"a {self.kind} note needs {', '.join(missing)} (empty here)")
        stray = [
            name
            for name in ("symptom", "cause", "fix", "steps", "verdict")
            if name not in needed and getattr(self, name)
        ]
        if stray:
            raise ValueError(
                f"a {self.kind} note has no {', '.join(stray)}; it has {', '.join(needed)}"
            )
        return self

    @property
    def slug(self) -> str:
        """The note's file name without ``.md``."""
        return slug(self.title)

    def summary(self) -> str:
        """One line for the topic file: the symptom, steps or verdict, shortened."""
        text = {
            "failure": self.symptom,
            "workflow": " → ".join(self.steps),
            "verdict": self.verdict,
        }[self.kind]
        text = _one_line(text)
        return text if len(text) <= 140 else text[:139] + "…"

    def to_markdown(self) -> str:
        """The note's file content."""
        front = yaml.safe_dump({"kind": self.kind, "topic": self.topic}, sort_keys=False)
        parts = [f"---\n{front}---\n# {self.title}\n"]
        if self.kind == "failure":
            parts += [f"## Symptom\n{self.symptom}\n", f"## Cause\n{self.cause}\n"]
            parts.append(f"## Fix\n{self.fix}\n")
        elif self.kind == "workflow":
            steps = "\n".join(f"{i}. {step}" for i, step in enumerate(self.steps, 1))
            parts.append(f"## Steps\n{steps}\n")
        else:
            parts.append(f"## Verdict\n{self.verdict}\n")
        return "\n".join(parts)

    @classmethod
    def from_markdown(cls, text: str) -> Note:
        """Read a note file; a ``ValueError`` says what does not fit."""
        front = _FRONT.match(text)
        if front is None:
            raise ValueError("the note has no front matter (a '---' block with kind and topic)")
        try:
            meta = yaml.load(front.group(1), Loader=_SafeLoader)
        except yaml.YAMLError as e:
            raise ValueError(f"the note's front matter is not YAML: {e}") from None
        if not isinstance(meta, dict):
            raise ValueError("the note's front matter must map kind and topic")
        body = text[front.end() :]
        heading = re.search(r"^# +(.+?) *$", body, re.M)
        fields: dict[str, object] = {
            "kind": meta.get("kind"),
            "topic": meta.get("topic"),
            "title": heading.group(1) if heading else "",
        }
        for name, content in sections(body).items():
            key = name.casefold()
            if key == "steps":
                steps = [m.group(1) for line in content.splitlines() if (m := _STEP.match(line))]
                fields["steps"] = steps
            elif key in ("symptom", "cause", "fix", "verdict"):
                fields[key] = content
        try:
            return cls.model_validate(fields)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(map(str, err['loc'])) or 'note'}: {err['msg']}" for err in e.errors()
            )
            raise ValueError(problems) from None


def sections(body: str) -> dict[str, str]:
    """The ``## Name`` sections of a Markdown body, name → stripped content."""
    found: dict[str, str] = {}
    matches = list(_SECTION.finditer(body))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        found[m.group(1)] = body[m.end() : end].strip()
    return found
