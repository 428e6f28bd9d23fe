"""What a Slack message asks for: ``<role> <card>``, the first word the role, the rest the card
(a card file's path, or the card's text)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ApprovalReply",
    "RunCommand",
    "UnknownCommand",
    "follow_up_role",
    "is_cancel",
    "parse_approval",
    "parse_command",
    "roles_help",
]

# A leading mention of the bot (``<@U0BOT>``) in a channel message is not part of the command.
_MENTION = re.compile(r"^\s*<@[A-Z0-9]+(?:\|[^>]*)?>[\s:,]*")
# Slack links a path-like word: <http://x|x> or <mailto:...|x>; the label is what was typed.
_LINK = re.compile(r"<[^>|]+\|([^>]+)>|<([^>@#!][^>]*)>")


@dataclass(frozen=True)
class RunCommand:
    """Run ``card`` (a path or a card's text) in ``role``."""

    role: str
    card: str


@dataclass(frozen=True)
class UnknownCommand:
    """Not ``<role> <card>``: ``word`` is what came first (empty for an empty message), and
    ``reason`` says what was wrong."""

    word: str
    reason: str


def _plain(text: str) -> str:
    """Slack's message text as typed: links back to their labels, entities decoded."""
    text = _MENTION.sub("", text, count=1)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2), text)
    return html.unescape(text).strip()


def is_cancel(text: str) -> bool:
    """True for a reply in a run's thread that asks to cancel the run: the word ``cancel``
    alone (a mention before it, a full stop or ``!`` after it allowed); anything longer is a
    question about the run."""
    return _plain(text).lower().rstrip(".!") == "cancel"


_APPROVAL = re.compile(
    r"^(?P<word>approve|approved|yes|deny|denied|refuse|refused|no)(?:\s+#?(?P<number>\d{1,6}))?"
    r"(?:\s*[:,.!-]?\s+(?P<note>.+))?$",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class ApprovalReply:
    """A reply in a run's thread that answers an approval: yes or no, to ``number`` (None: the
    one waiting, when only one waits), with an optional note."""

    approved: bool
    number: int | None
    note: str | None


def parse_approval(text: str) -> ApprovalReply | None:
    """``approve``, ``approve 2``, ``deny 1 not on main`` (also ``yes``/``no``, ``refuse``);
    None for anything else."""
    found = _APPROVAL.match(_plain(text).rstrip(".!"))
    if found is None:
        return None
    word = found.group("word").lower()
    number = found.group("number")
    note = (found.group("note") or "").strip() or None
    if word in ("yes", "no") and number is None and note is not None:
        return None  # "no, what happened at round 3?" is a question
    return ApprovalReply(
        approved=word in ("approve", "approved", "yes"),
        number=int(number) if number else None,
        note=note,
    )


_FOLLOW_UP = re.compile(r"^(?P<role>[a-z][a-z0-9-]*)(?:\s+(?:this(?:\s+change)?|it|again))?$")


def follow_up_role(text: str, roles: Sequence[str]) -> str | None:
    """The role of a reply in a run's thread that asks for a run after it, in its repository:
    a role alone, or followed by "this", "this change", "it" or "again" ("test", "test this
    change"); None for anything else (a question about the run)."""
    found = _FOLLOW_UP.match(_plain(text).lower().rstrip(".!"))
    if found is None or found.group("role") not in roles:
        return None
    return found.group("role")


def parse_command(text: str, roles: Sequence[str]) -> RunCommand | UnknownCommand:
    """Split a message into role and card; anything else is an :class:`UnknownCommand`."""
    plain = _plain(text)
    if not plain:
        return UnknownCommand("", "the message is empty")
    word, _, rest = (
        plain.partition(" ") if " " in plain.split("\n", 1)[0] else (plain.partition("\n"))
    )
    role = word.strip().lower()
    if role not in roles:
        return UnknownCommand(word.strip(), f"{word.strip()!r} is not a role")
    card = rest.strip()
    if not card:
        return UnknownCommand(word.strip(), f"{role!r} needs a card after it (a path or text)")
    return RunCommand(role, card)


def roles_help(roles: Sequence[str], reason: str) -> str:
    """The answer to an unknown command: what was wrong and the list of roles."""
    listed = ", ".join(f"`{r}`" for r in roles)
    return (
        f"I did not understand that: {reason}. Write `<role> <card>`: the role is one of "
        f"{listed}; the card is a card file's path or the card's text."
    )
