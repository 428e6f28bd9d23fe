"""Verified done: what a card run must show before the runner accepts ``RESULT: done``.

A :class:`Verification` is given to :class:`~loopkit.cards.runner.CardRunner` for a role that
must prove its work (the ``develop`` role: ``verify: true`` in its role file). It brings

- the ``record_evidence`` tool and the :class:`~loopkit.cards.evidence.EvidenceLedger` below the
  loop that checks what the model cites;
- the runner's rule: a ``RESULT: done`` whose criteria are not all verified is answered once with
  what is missing; if the model claims done again without fixing it, the run ends
  ``RESULT: failed: criterion C3 not verified``;
- the replay: a :class:`Replayer` replays the run's live checks as a regression script on a fresh
  app; a replay that fails ends the run failed, one that passes is "verified by replay" (a line
  of the run log and of the summary).

Criteria marked ``(manual)`` need no evidence and are reported as unverified.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from loopkit.abstractions.chat import ChatClient
from loopkit.abstractions.tools import Tool
from loopkit.cards.card import Card
from loopkit.cards.criteria import Criterion
from loopkit.cards.evidence import Assessment, EvidenceLedger, EvidencePolicy, ToolRecord

__all__ = ["ReplayOutcome", "Replayer", "Verification"]


class ReplayOutcome(BaseModel):
    """How the replay of a run's regression script went."""

    passed: bool
    #: The script that was replayed (None: there was nothing to replay).
    script: str | None = None
    #: Steps run, and the criteria whose evidence the script's steps replayed.
    steps: int = 0
    criteria: list[str] = Field(default_factory=list)
    #: The criteria whose evidence has no replayable step (e.g. ``ui_missing_ids``): checked
    #: live only, each with the calls that showed it.
    live_only: dict[str, list[str]] = Field(default_factory=dict)
    #: One line per failed step, naming the criterion it replays when it does.
    failures: list[str] = Field(default_factory=list)
    report: str | None = None
    seconds: float = 0.0

    def line(self) -> str:
        """``verified by replay: 14 steps (C1, C2, C3) on a fresh app ...`` or what failed."""
        if self.passed:
            covered = f" ({', '.join(self.criteria)})" if self.criteria else ""
            live = (
                f"; checked live only (nothing to replay): {', '.join(sorted(self.live_only))}"
                if self.live_only
                else ""
            )
            return (
                f"verified by replay: {self.steps} steps{covered} passed on a fresh app of the "
                f"committed code in {self.seconds:.1f} s ({self.script}){live}"
            )
        first = self.failures[0] if self.failures else "it did not run"
        return f"the regression script failed on replay: {first}"


@runtime_checkable
class Replayer(Protocol):
    """Replays the live session of a run as a regression script on a fresh app."""

    async def replay(
        self, session: Sequence[ToolRecord], evidence: dict[str, list[str]]
    ) -> ReplayOutcome:
        """Replay ``session`` (the calls since the app was started on the final code);
        ``evidence`` maps each criterion id to the ids of its checks among them."""
        ...


class Verification:
    """The evidence and replay of one card run (see the module docstring)."""

    def __init__(
        self,
        criteria: Sequence[Criterion] | None = None,
        *,
        policy: EvidencePolicy | None = None,
        replayer: Replayer | None = None,
    ) -> None:
        #: None: the criteria of the card the runner runs (:meth:`for_card`).
        self._given = criteria is not None
        self.ledger = EvidenceLedger(criteria or (), policy)
        self.replayer = replayer
        #: Whether the runner answered an unverified RESULT: done already (it does so once).
        self.feedback_given = False
        #: The assessment when the run ended, and the replay (None: not replayed).
        self.final: Assessment | None = None
        self.replayed: ReplayOutcome | None = None
        #: Why a RESULT: done is refused (None: it is not, or the run did not claim done).
        self.failure: str | None = None

    @property
    def criteria(self) -> list[Criterion]:
        return self.ledger.criteria

    def for_card(self, card: Card) -> None:
        """Check ``card``'s criteria (unless criteria were given): the runner calls this."""
        if not self._given:
            self.ledger.criteria = list(card.criteria)

    @property
    def tools(self) -> list[Tool]:
        """The tools the model gets: ``record_evidence``."""
        return [self.ledger.tool()]

    def middleware(self, inner: ChatClient) -> ChatClient:
        """The ledger's client, below the loop."""
        return self.ledger.middleware(inner)

    def assess(self) -> Assessment:
        self.final = self.ledger.assess()
        return self.final

    async def replay(self) -> ReplayOutcome | None:
        """Replay the live session (None without a replayer)."""
        if self.replayer is None:
            return None
        evidence = {cid: list(ev.calls) for cid, ev in self.ledger.evidence.items()}
        self.replayed = await self.replayer.replay(self.ledger.session(), evidence)
        return self.replayed

    def report(self) -> dict[str, Any]:
        """What the run log's ``result`` line records: each criterion's verdict and the replay."""
        assessment = self.final or self.ledger.assess()
        data: dict[str, Any] = {"criteria": assessment.as_data()}
        if self.replayed is not None:
            data["replay"] = self.replayed.model_dump(exclude_defaults=True)
            data["verified_by_replay"] = self.replayed.passed
        return data

    def summary(self) -> str:
        """The summary's line: verified criteria, the replay, the unverified (manual) ones."""
        assessment = self.final or self.ledger.assess()
        by = {"verified": [], "missing": [], "unverified": []}  # type: dict[str, list[str]]
        for verdict in assessment.verdicts:
            by[verdict.status].append(verdict.criterion.id)
        parts = []
        if self.replayed is not None:
            parts.append(self.replayed.line())
            # Besides those the replay names as checked live only (its line says so).
            shown = [*self.replayed.criteria, *self.replayed.live_only]
            live = [c for c in by["verified"] if c not in shown]
            if live and self.replayed.passed:
                parts.append(f"checked live only (nothing to replay): {', '.join(live)}")
        elif by["verified"]:
            parts.append(f"evidence checked: {', '.join(by['verified'])} (no replay)")
        if by["missing"]:
            parts.append(f"not verified: {', '.join(by['missing'])}")
        if by["unverified"]:
            parts.append(f"unverified (manual): {', '.join(by['unverified'])}")
        return "; ".join(parts) or "no acceptance criteria"
