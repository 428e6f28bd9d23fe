"""The router and the topic files: the two levels of the notes' table of contents.

The router (``<notes>/README.md``) has one line per topic; a topic file (``<notes>/<topic>.md``)
has one line per note and links to neighbouring topics. Both are rewritten together with the note
by :meth:`~loopkit_tools.memory.notebook.Notebook.write_note`. Parsing is lenient (lines that do
not fit are skipped), rendering is deterministic, so a file read and rendered again is unchanged.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from loopkit_tools.memory.models import KINDS, TOPIC_PATTERN, Note

ROUTER_TITLE = "# Notes"
ROUTER_INTRO = (
    "One line per topic. Open one to three topics with read_topic; on a failure search the notes "
    "by symptom with search_notes."
)

_ROUTER_LINE = re.compile(
    rf"^- \[(?P<topic>{TOPIC_PATTERN})\]\((?P=topic)\.md\) — (?P<description>.*?) "
    r"\((?P<count>\d+) notes?\)$"
)
_KINDS = "|".join(KINDS)
_NOTE_LINE = re.compile(
    rf"^- (?P<kind>{_KINDS}): \[(?P<title>.+?)\]\((?P<path>{TOPIC_PATTERN}/[^)\s]+\.md)\)"
    r"(?: — (?P<summary>.*))?$"
)
_RELATED = re.compile(rf"\[({TOPIC_PATTERN})\]\(\1\.md\)")


def default_description(topic: str) -> str:
    """The description a new topic gets when the writer gives none."""
    return f"notes about {topic.replace('-', ' ')}"


class RouterLine(BaseModel):
    """One topic in the router."""

    topic: str
    description: str
    count: int = Field(ge=0)

    def render(self) -> str:
        """The line as the router shows it."""
        plural = "note" if self.count == 1 else "notes"
        return f"- [{self.topic}]({self.topic}.md) — {self.description} ({self.count} {plural})"


class Router(BaseModel):
    """The router file: its topics, sorted by name."""

    lines: list[RouterLine] = Field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Router:
        """Read a router file; lines that are not topic lines are skipped."""
        lines = [
            RouterLine(
                topic=m["topic"], description=m["description"].strip(), count=int(m["count"])
            )
            for line in text.splitlines()
            if (m := _ROUTER_LINE.match(line.strip()))
        ]
        return cls(lines=lines)

    def get(self, topic: str) -> RouterLine | None:
        """The line of ``topic``, if the router has one."""
        return next((line for line in self.lines if line.topic == topic), None)

    def upsert(self, line: RouterLine) -> None:
        """Add or replace the line of ``line.topic``."""
        self.lines = sorted(
            [*(other for other in self.lines if other.topic != line.topic), line],
            key=lambda other: other.topic,
        )

    def render(self) -> str:
        """The router file's content."""
        body = "\n".join(line.render() for line in self.lines)
        return f"{ROUTER_TITLE}\n\n{ROUTER_INTRO}\n\n{body}\n"


class TopicEntry(BaseModel):
    """One note in a topic file; ``path`` is relative to the notes folder."""

    kind: str
    title: str
    path: str
    summary: str = ""

    @classmethod
    def of(cls, note: Note) -> TopicEntry:
        """The entry of ``note``."""
        return cls(
            kind=note.kind,
            title=note.title,
            path=f"{note.topic}/{note.slug}.md",
            summary=note.summary(),
        )

    def render(self) -> str:
        """The line as the topic file shows it."""
        line = f"- {self.kind}: [{self.title}]({self.path})"
        return f"{line} — {self.summary}" if self.summary else line


class TopicFile(BaseModel):
    """A topic file: its description, neighbouring topics and notes."""

    topic: str
    description: str
    related: list[str] = Field(default_factory=list)
    entries: list[TopicEntry] = Field(default_factory=list)

    @classmethod
    def parse(cls, topic: str, text: str) -> TopicFile:
        """Read a topic file; what does not fit its form is skipped."""
        description = ""
        related: list[str] = []
        entries: list[TopicEntry] = []
        for raw in text.splitlines():
            line = raw.strip()
            if m := _NOTE_LINE.match(line):
                entries.append(
                    TopicEntry(
                        kind=m["kind"],
                        title=m["title"],
                        path=m["path"],
                        summary=(m["summary"] or "").strip(),
                    )
                )
            elif line.startswith("See also:"):
                related = _RELATED.findall(line)
            elif line and not line.startswith("#") and not description and not entries:
                description = line
        return cls(
            topic=topic,
            description=description or default_description(topic),
            related=related,
            entries=entries,
        )

    def upsert(self, entry: TopicEntry) -> None:
        """Add the entry, or replace the one with the same path (a note rewritten)."""
        for i, other in enumerate(self.entries):
            if other.path == entry.path:
                self.entries[i] = entry
                return
        self.entries.append(entry)

    def link(self, topics: list[str]) -> None:
        """Add neighbouring topics (never the topic itself), keeping the first order."""
        for topic in topics:
            if topic != self.topic and topic not in self.related:
                self.related.append(topic)

    def render(self) -> str:
        """The topic file's content."""
        parts = [f"# Topic: {self.topic}\n", f"{self.description}\n"]
        if self.related:
            links = ", ".join(f"[{topic}]({topic}.md)" for topic in self.related)
            parts.append(f"See also: {links}\n")
        notes = "\n".join(entry.render() for entry in self.entries)
        parts.append(f"## Notes\n{notes}\n" if notes else "## Notes\n")
        return "\n".join(parts)
