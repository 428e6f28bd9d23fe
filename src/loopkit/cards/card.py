"""Cards: a Kanban card as a Markdown file with YAML front matter, and its state changes.

```
---
title: Deleting an item should ask first
state: New
category: Improvement
---
Body with **Acceptance criteria** ...
```
States move New → In Work → Done / Failed; a card tested after it was developed goes New → In
Work → In Test → Done / Failed (docs/cards.md). Writing a state back changes only the ``state:``
line of the front matter; the body is left byte for byte as it was. The file keeps its mode (and,
where allowed, its owner), and a card reached through a symlink is written at the symlink's
target.

A card larger than ``max_bytes`` (64 KiB by default) is refused unread: at most ``max_bytes + 1``
bytes are ever read, and such a file is never rewritten.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from loopkit.cards.criteria import Criterion, parse_criteria
from loopkit.errors import CardError, describe_validation_error

#: Cards are short Markdown files; a larger file is refused unread.
MAX_CARD_BYTES = 64 * 1024

# libyaml's safe loader when PyYAML was built with it: 9x faster than the pure-Python one (a
# board lists hundreds of cards); the same safe subset of YAML.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_STATE_LINE = re.compile(r"^(state[ \t]*:[ \t]*)([^\r\n]*?)([ \t]*\r?)$", re.MULTILINE)


class CardState(StrEnum):
    NEW = "New"
    IN_WORK = "In Work"
    #: Developed, and being tested by a test run (the develop → test pipeline, a test run).
    IN_TEST = "In Test"
    DONE = "Done"
    FAILED = "Failed"


class CardFrontMatter(BaseModel):
    model_config = ConfigDict(extra="allow")

    title: str
    state: CardState = CardState.NEW
    category: str | None = None

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("title must not be empty")
        return v.strip()


class Card(BaseModel):
    """A parsed card file."""

    path: Path | None = None
    front_matter: CardFrontMatter
    body: str
    text: str

    @property
    def title(self) -> str:
        return self.front_matter.title

    @property
    def state(self) -> CardState:
        return self.front_matter.state

    @property
    def criteria(self) -> list[Criterion]:
        """The acceptance criteria with their ids (``C1``, ``C2``, ...; may be empty): the
        bullet points under an "Acceptance criteria" heading (:mod:`loopkit.cards.criteria`)."""
        return parse_criteria(self.body)

    @property
    def acceptance_criteria(self) -> list[str]:
        """The acceptance criteria's texts, in order (a ``(manual)`` tag left out)."""
        return [c.text for c in self.criteria]

    @classmethod
    def parse(cls, text: str, path: Path | None = None) -> Card:
        where = str(path) if path else "card"
        m = _FRONT_MATTER.match(text)
        if m is None:
            raise CardError(
                f"{where}: no front matter. A card starts with a '---' line, then YAML with at "
                "least 'title:' (and 'state:', 'category:'), then a closing '---' line."
            )
        try:
            data: Any = yaml.load(m.group(1), Loader=_SAFE_LOADER) or {}
        except yaml.YAMLError as e:
            raise CardError(f"{where}: the front matter is not valid YAML: {e}") from None
        if not isinstance(data, dict):
            raise CardError(f"{where}: the front matter must be a YAML mapping (key: value lines)")
        try:
            fm = CardFrontMatter.model_validate(data)
        except ValidationError as e:
            problems = describe_validation_error(e)
            states = ", ".join(s.value for s in CardState)
            raise CardError(f"{where}: {problems} (states are: {states})") from None
        return cls(path=path, front_matter=fm, body=text[m.end() :], text=text)

    @classmethod
    def load(cls, path: str | Path, *, max_bytes: int = MAX_CARD_BYTES) -> Card:
        """Read and parse a card file; :class:`CardError` when it cannot be read (missing, not a
        regular file, above ``max_bytes``, not UTF-8) or is not a valid card."""
        p = Path(path)
        return cls.parse(read_card_text(p, max_bytes=max_bytes), p)

    def with_state(self, state: CardState) -> Card:
        """A copy whose text has ``state:`` set to ``state`` (added if missing); body untouched."""
        m = _FRONT_MATTER.match(self.text)
        assert m is not None  # parse() guarantees front matter
        fm_text = m.group(1)
        if _STATE_LINE.search(fm_text):
            new_fm = _STATE_LINE.sub(
                lambda s: f"{s.group(1)}{state.value}{s.group(3)}", fm_text, count=1
            )
        else:
            new_fm = fm_text + f"\nstate: {state.value}"
        start, end = m.span(1)
        text = self.text[:start] + new_fm + self.text[end:]
        return Card.parse(text, self.path)

    def save_state(self, state: CardState) -> Card:
        """Write the new state to the card file atomically and return the updated card."""
        if self.path is None:
            raise CardError("this card was not loaded from a file; there is nowhere to save it")
        updated = self.with_state(state)
        _atomic_write(self.path, updated.text)
        return updated


def write_card(path: str | Path, text: str, *, max_bytes: int = MAX_CARD_BYTES) -> Card:
    """Write a whole card (front matter and body) to ``path`` atomically, after checking that
    ``text`` is a valid card no larger than ``max_bytes``; returns the card as written.
    :class:`CardError` (and nothing written) when it is not. A new file gets the umask's mode,
    an existing one keeps its mode and owner (a symlink is written at its target)."""
    p = Path(path)
    if len(text.encode("utf-8")) > max_bytes:
        raise CardError(f"card {p.name}: larger than {max_bytes:,} bytes (max_card_bytes)")
    card = Card.parse(text, p)
    _atomic_write(p, text)
    return card


def read_card_text(path: str | Path, *, max_bytes: int = MAX_CARD_BYTES) -> str:
    """The text of a card file, reading at most ``max_bytes + 1`` bytes; :class:`CardError`
    naming the file when it is missing, not a regular file, larger than ``max_bytes`` or not
    UTF-8."""
    p = Path(path)
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):  # a FIFO would block, a device never ends
            raise CardError(f"card file {p} is not a regular file (a Markdown card was expected)")
        with p.open("rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise CardError(f"card file not found: {p}") from None
    except OSError as e:
        raise CardError(f"cannot read card file {p}: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise CardError(
            f"card file {p} is larger than {max_bytes:,} bytes (max_card_bytes); a card is a "
            "short Markdown file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CardError(f"cannot read card file {p}: not UTF-8 text (byte {e.start})") from None


def mark_failed_in_file(path: str | Path, *, max_bytes: int = MAX_CARD_BYTES) -> bool:
    """Set ``state: Failed`` in a card file that does not parse, if it has front matter at all.

    A run refused for a bad card still leaves the card marked; returns False when the file has
    no front matter or cannot be read (missing, above ``max_bytes``, not UTF-8): a file that was
    refused unread is never rewritten.
    """
    p = Path(path)
    try:
        text = read_card_text(p, max_bytes=max_bytes)
    except CardError:
        return False
    m = _FRONT_MATTER.match(text)
    if m is None:
        return False
    fm = m.group(1)
    if _STATE_LINE.search(fm):
        fm = _STATE_LINE.sub(lambda s: f"{s.group(1)}{CardState.FAILED.value}{s.group(3)}", fm, 1)
    else:
        fm += f"\nstate: {CardState.FAILED.value}"
    _atomic_write(p, text[: m.start(1)] + fm + text[m.end(1) :])
    return True


def _umask() -> int:
    """The process's umask, read without changing it (os.umask would, for every thread)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _atomic_write(path: Path, text: str) -> None:
    """Replace the file's content atomically (a temporary file renamed over it), keeping its
    mode and owner, and writing at the target of a symlink instead of replacing the link."""
    target = Path(os.path.realpath(path))
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    fd, tmp = tempfile.mkstemp(prefix=".card-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            # mkstemp creates 0600: give the file the mode it had (a new one: umask's default).
            if before is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(before.st_mode))
                if (before.st_uid, before.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(PermissionError):  # only root may give files away
                        os.fchown(f.fileno(), before.st_uid, before.st_gid)
            else:
                os.fchmod(f.fileno(), 0o666 & ~_umask())
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
