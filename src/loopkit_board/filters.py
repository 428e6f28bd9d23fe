"""What the board's lists are narrowed to: :class:`RunFilter` for runs, :class:`CardFilter`
for cards (by their own fields and by their latest run: its role, its result, who started it).

Both read a request's query parameters (``q``, ``state``, ``role``, ``result``, ``by``,
``category``, ``card``); a value is one line of at most 100 characters, and an unknown parameter
is ignored, so a shared link keeps working as the board grows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopkit_board.cards import CardEntry
    from loopkit_board.run_index import RunSummary

__all__ = ["CardFilter", "RunFilter"]

#: ``result``: a run ended (any way), or has not.
_ENDED = ("done", "failed", "cancelled")


def _one(query: Any, name: str) -> str:
    value = query.get(name) or ""
    return " ".join(str(value).split())[:100]


def _result_matches(wanted: str, run: RunSummary | None) -> bool:
    if not wanted:
        return True
    if run is None:
        return wanted == "none"
    if wanted == "ended":
        return run.state in _ENDED
    if wanted == "open":
        return run.state not in _ENDED
    return run.state == wanted


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What a list of runs is narrowed to: words in the card's name, title or the run's id
    (``q``), a state, a role, a result (``done``, ``failed``, ``cancelled``; ``ended``: any of
    them; ``open``: not ended), who started it, one card (its file name)."""

    q: str = ""
    state: str = ""
    role: str = ""
    result: str = ""
    started_by: str = ""
    card: str = ""

    @classmethod
    def from_query(cls, query: Any) -> RunFilter:
        """From a request's query parameters (unknown ones are ignored; each value is cut)."""
        return cls(
            q=_one(query, "q"),
            state=_one(query, "state"),
            role=_one(query, "role"),
            result=_one(query, "result"),
            started_by=_one(query, "by"),
            card=_one(query, "card"),
        )

    @property
    def active(self) -> bool:
        return any((self.q, self.state, self.role, self.result, self.started_by, self.card))

    def without_card(self) -> RunFilter:
        return replace(self, card="")

    def matches(self, run: RunSummary, title: str = "") -> bool:
        if self.card and run.name != self.card:
            return False
        if self.state and run.state != self.state:
            return False
        if self.role and run.role != self.role:
            return False
        if not _result_matches(self.result, run):
            return False
        if self.started_by and (run.started_by or "") != self.started_by:
            return False
        if self.q:
            haystack = f"{run.name} {title} {run.run_id} {run.reason or ''}".lower()
            return all(word in haystack for word in self.q.lower().split())
        return True

    def apply(
        self, runs: Iterable[RunSummary], titles: dict[str, str] | None = None
    ) -> list[RunSummary]:
        titles = titles or {}
        return [r for r in runs if self.matches(r, titles.get(r.name, ""))]


@dataclass(frozen=True, slots=True)
class CardFilter:
    """Cards narrowed by words in their title, file name, category or body (``q``), their
    state, category, and their latest run's role, result (``none``: never run) and who started
    it."""

    q: str = ""
    state: str = ""
    category: str = ""
    role: str = ""
    result: str = ""
    started_by: str = ""

    @classmethod
    def from_query(cls, query: Any) -> CardFilter:
        return cls(
            q=_one(query, "q"),
            state=_one(query, "state"),
            category=_one(query, "category"),
            role=_one(query, "role"),
            result=_one(query, "result"),
            started_by=_one(query, "by"),
        )

    @property
    def active(self) -> bool:
        return any((self.q, self.state, self.category, self.role, self.result, self.started_by))

    def matches(self, card: CardEntry, latest: RunSummary | None) -> bool:
        if self.state and card.state != self.state:
            return False
        if self.category and (card.category or "") != self.category:
            return False
        if self.role and (latest is None or latest.role != self.role):
            return False
        if not _result_matches(self.result, latest):
            return False
        if self.started_by and (latest is None or latest.started_by != self.started_by):
            return False
        if self.q:
            haystack = f"{card.name} {card.title} {card.category or ''} {card.body}".lower()
            return all(word in haystack for word in self.q.lower().split())
        return True
