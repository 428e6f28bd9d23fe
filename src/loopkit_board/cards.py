"""A folder of card files as the board sees it: each card with its state, or with its error.

Cards are read through :mod:`loopkit.cards.card` (the demo's card code) and written through
:func:`~loopkit.cards.card.write_card` (checked first, written atomically). A card that does not
parse is listed with its error instead of breaking the listing. Parsed cards are cached by the
file's size and modification time, so listing a folder of 500 unchanged cards costs 500
``stat`` calls, not 500 YAML parses.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from loopkit.cards.card import MAX_CARD_BYTES, Card, CardState, read_card_text, write_card
from loopkit.errors import CardError

__all__ = ["CardEntry", "CardFolder", "card_text"]

#: A card's file name: letters, digits, '.', '_', '-', ending in .md (no folders).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,100}\.md")
_SLUG = re.compile(r"[^a-z0-9]+")
NEW = CardState.NEW.value


@dataclass(frozen=True, slots=True)
class CardEntry:
    """One card file of the folder: parsed (``error`` None) or not (``error`` says why; the
    card then shows in the New column with its file name as title)."""

    name: str
    path: Path
    title: str
    state: str
    category: str | None
    body: str
    text: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def card_text(title: str, body: str, *, state: str = "New", category: str | None = None) -> str:
    """A card file's text from its fields (YAML front matter, then the body)."""
    front: dict[str, str] = {"title": title.strip(), "state": state}
    if category:
        front["category"] = category.strip()
    dumped = yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
    body = body.replace("\r\n", "\n")
    return f"---\n{dumped}---\n{body if body.endswith(chr(10)) or not body else body + chr(10)}"


class CardFolder:
    """The card files (``*.md``) of one folder."""

    def __init__(self, folder: str | Path, *, max_bytes: int = MAX_CARD_BYTES) -> None:
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self._cache: dict[str, tuple[tuple[int, int], CardEntry]] = {}

    def check_name(self, name: str) -> Path:
        """The path of card ``name`` in the folder; :class:`CardError` for a name that is not
        a plain ``*.md`` file name."""
        if not _NAME.fullmatch(name):
            raise CardError(
                f"card name {name!r}: expected a file name ending in .md (letters, digits, "
                "'.', '_', '-'; no folders)"
            )
        return self.folder / name

    def _inside(self, path: Path) -> Path | None:
        """``path`` resolved (links followed) when that is a file directly in the folder."""
        try:
            target = path.resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        if target.parent != self.folder.resolve() or not _NAME.fullmatch(target.name):
            return None
        return target if target.is_file() else None

    def _existing(self, name: str) -> Path:
        path = self.check_name(name)
        if self._inside(path) is None:
            raise CardError(f"there is no card {name!r} in the cards folder")
        return path

    def resolve(self, card: str | Path) -> Path:
        """The path of a card of this folder (resolved) given by its file name, or by a path
        (relative to the working folder, or absolute) that resolves, links followed, to a file
        directly in the folder; :class:`CardError` for anything else: never a path outside."""
        text = str(card)
        if isinstance(card, str) and "/" not in text:
            return self._existing(text).resolve()
        target = self._inside(Path(text))
        if target is None:
            raise CardError(
                f"card {text!r}: there is no such card in the cards folder (give a card's file "
                "name, e.g. my-card.md)"
            )
        return target

    def slug(self, title: str) -> str:
        """A free file name for a new card titled ``title``."""
        base = _SLUG.sub("-", title.lower()).strip("-")[:60] or "card"
        name, n = f"{base}.md", 2
        while (self.folder / name).exists():
            name, n = f"{base}-{n}.md", n + 1
        return name

    def list(self) -> list[CardEntry]:
        """Every card of the folder, by file name."""
        entries: list[CardEntry] = []
        seen: set[str] = set()
        try:
            scan = sorted(
                (e for e in os.scandir(self.folder) if e.name.endswith(".md")),
                key=lambda e: e.name,
            )
        except FileNotFoundError:
            return []
        for item in scan:
            seen.add(item.name)
            try:
                st = item.stat()
            except OSError:
                continue
            key = (st.st_size, st.st_mtime_ns)
            cached = self._cache.get(item.name)
            if cached is not None and cached[0] == key:
                entries.append(cached[1])
                continue
            path = Path(item.path)
            if item.is_symlink() and self._inside(path) is None:
                outside = "a link to a file outside the cards folder: not read"
                entry = CardEntry(item.name, path, item.name, NEW, None, "", "", outside)
            else:
                entry = self._read(item.name, path)
            self._cache[item.name] = (key, entry)
            entries.append(entry)
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return entries

    def get(self, name: str) -> CardEntry:
        """One card (:class:`CardError` when there is no such file in the folder)."""
        return self._read(name, self._existing(name))

    def _read(self, name: str, path: Path) -> CardEntry:
        try:
            text = read_card_text(path, max_bytes=self.max_bytes)
        except CardError as e:
            return CardEntry(name, path, name, CardState.NEW.value, None, "", "", str(e))
        try:
            card = Card.parse(text, path)
        except CardError as e:
            return CardEntry(name, path, name, CardState.NEW.value, None, "", text, str(e))
        fm = card.front_matter
        return CardEntry(name, path, card.title, card.state.value, fm.category, card.body, text)

    def create(
        self, title: str, body: str, *, category: str | None = None, name: str | None = None
    ) -> CardEntry:
        """A new card (state New) in a new file: ``name`` (``.md`` added when missing), else
        one made from its title."""
        if not title.strip():
            raise CardError("a card needs a title")
        self.folder.mkdir(parents=True, exist_ok=True)
        name = (name if name.endswith(".md") else f"{name}.md") if name else self.slug(title)
        return self.write(name, card_text(title, body, category=category), new=True)

    def write(self, name: str, text: str, *, new: bool = False) -> CardEntry:
        """Write card ``name`` from its whole text (checked first: nothing is written when it
        is not a valid card). ``new``: refuse to overwrite an existing file."""
        path = self.check_name(name)
        if new and os.path.lexists(path):
            raise CardError(f"card {name!r} exists already")
        if not new:
            path = self._existing(name)
        write_card(path, text.replace("\r\n", "\n"), max_bytes=self.max_bytes)
        return self._read(name, path)
