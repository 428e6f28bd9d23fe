"""A generated corpus of notes with known answers, for the ranking tests and the benchmark.

Each note is one (control, behaviour) pair: its symptom names both ("The amount field reverts to
the old value after save"). Every query names its note's control and behaviour in other words
(other inflections: "reverted", "saving"), so every other note of the same control or of the same
behaviour is a distractor that matches part of the query; the fixes name further controls so the
bodies share words too. Only one note matches all of a query's ideas.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopkit_tools.memory import Note

CONTROLS = [
    ("amount field", "amount field"),
    ("customer combo box", "customer combo"),
    ("due date picker", "due date picker"),
    ("invoice table", "invoice table"),
    ("delete button", "delete button"),
    ("save button", "save button"),
    ("tax rate spin box", "tax rate spinbox"),
    ("currency selector", "currency selector"),
    ("notes text area", "notes textarea"),
    ("search filter", "search filter"),
    ("status bar", "status bar"),
    ("export menu", "export menu"),
    ("print preview", "print preview"),
    ("discount checkbox", "discount checkbox"),
    ("line item editor", "line item editor"),
    ("payment terms list", "payment terms"),
    ("address panel", "address panel"),
    ("logo upload dialog", "logo upload"),
    ("reminder scheduler", "reminder scheduler"),
    ("language switcher", "language switcher"),
    ("quantity cell", "quantity cell"),
    ("unit price cell", "unit price"),
    ("totals footer", "totals footer"),
    ("pdf exporter", "pdf exporter"),
    ("email sender", "email sender"),
    ("archive view", "archive view"),
    ("sort header", "sort header"),
    ("undo action", "undo action"),
    ("toolbar icons", "toolbar icons"),
    ("settings page", "settings page"),
    ("login form", "login form"),
    ("vendor lookup", "vendor lookup"),
    ("tooltip popup", "tooltip"),
    ("progress indicator", "progress indicator"),
    ("zoom slider", "zoom slider"),
    ("recent files menu", "recent files"),
    ("backup wizard", "backup wizard"),
    ("license banner", "license banner"),
    ("keyboard shortcut map", "keyboard shortcuts"),
    ("report chart", "report chart"),
]

BEHAVIOURS = [
    ("reverts to the old value after save", "reverted after saving"),
    ("stays disabled after typing a value", "disabled while typing"),
    ("crashes the application when empty", "crash when empty"),
    ("shows garbled characters for umlauts", "garbled umlaut characters"),
    ("loses focus on every keystroke", "losing focus keystrokes"),
    ("is hidden behind the main window", "hidden behind main window"),
    ("ignores the enter key", "ignoring enter key"),
    ("shows a stale total after deleting a row", "stale total deleted rows"),
    ("flickers while scrolling quickly", "flickering scroll"),
    ("opens twice on double click", "opened twice double clicking"),
    ("rounds cents the wrong way", "wrong cent rounding"),
    ("freezes for seconds on large files", "frozen large file"),
    ("has no accessible name for screen readers", "missing accessible name screen reader"),
    ("resets the sort order on refresh", "sort order reset refreshing"),
    ("accepts negative numbers silently", "negative number accepted"),
    ("keeps a deleted customer selected", "deleted customer still selected"),
    ("truncates long names without ellipsis", "long names truncated"),
    ("uses the wrong date format in german", "german date format wrong"),
    ("reports success although nothing was written", "success reported nothing written"),
    ("steals the clipboard contents", "clipboard stolen"),
    ("jumps to the first page after editing", "jumping first page edit"),
    ("draws overlapping labels at high dpi", "overlapping labels dpi"),
    ("times out when the network is slow", "timeout slow network"),
    ("duplicates entries after undo", "duplicated entries undoing"),
    ("forgets the window size on restart", "window size forgotten restarting"),
]


@dataclass(frozen=True)
class CorpusNote:
    note: Note
    query: str


def corpus(size: int) -> list[CorpusNote]:
    """``size`` notes (at most controls × behaviours), each with a query only it fully answers."""
    notes: list[CorpusNote] = []
    for b, (behaviour, said) in enumerate(BEHAVIOURS):
        for c, (control, named) in enumerate(CONTROLS):
            if len(notes) == size:
                return notes
            other = CONTROLS[(c + 7) % len(CONTROLS)][0]
            note = Note(
                kind="failure",
                topic=f"area-{c % 10}",
                title=f"{control.capitalize()} {behaviour}",
                symptom=f"The {control} {behaviour}.",
                cause=f"Case {b}-{c}: the {other} handler runs first and the {control} waits.",
                fix=f"Close the {other}, then retry the {control} step; check it live.",
            )
            notes.append(CorpusNote(note, f"{named} {said}"))
    if len(notes) < size:
        raise ValueError(f"the corpus has at most {len(notes)} notes")
    return notes
