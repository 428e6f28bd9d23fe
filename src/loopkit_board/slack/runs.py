"""The bot's side of the run queue: start a card run in a role, read its state and queue place.

:class:`RunBackend` is all the bot needs; :class:`QueueRunBackend` implements it on loopkit's
durable queue (``loopkit.cards.queue``): runs go on the queue the workers
(``python -m loopkit.worker``, one run at a time per desktop) take them from, and their records
come back from the same database. The bot never runs a card itself.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import yaml

from loopkit.cards.card import Card
from loopkit.errors import CardError

if TYPE_CHECKING:
    from loopkit.cards.config import RunnerConfig
    from loopkit.durable.runtime import DurableRuntime

__all__ = ["ENDED", "QueueRunBackend", "RunBackend", "RunStatus", "StartedRun", "write_text_card"]

#: The states a run ends in.
ENDED = frozenset({"done", "failed", "cancelled"})


@dataclass(frozen=True)
class StartedRun:
    """A run put on the queue (``created`` False: the card already had one, this is it)."""

    run_id: str
    title: str
    card: Path
    created: bool


@dataclass(frozen=True)
class RunStatus:
    """A run as the database has it now; ``position`` is its place in the queue (1: next),
    None once a worker has it."""

    run_id: str
    state: str
    reason: str | None
    rounds: int
    tokens: int
    commit: str | None
    log_path: str | None
    position: int | None

    @property
    def ended(self) -> bool:
        return self.state in ENDED


class RunBackend(Protocol):
    """What the bot asks of the runs: roles, start one, look at one."""

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles a run can take (the first word of a command)."""
        ...

    async def start(self, role: str, card: str) -> StartedRun:
        """Queue a run of ``card`` (a path, or a card's text) in ``role``; :class:`CardError`
        naming the card when it cannot be run."""
        ...

    async def status(self, run_id: str) -> RunStatus | None:
        """The run's state and queue place (None: no such run)."""
        ...


_SLUG = re.compile(r"[^a-z0-9]+")


def write_text_card(folder: Path, text: str) -> Path:
    """Write a card given as text: its first line the title, the rest the body (state New).
    A new file each time (a short random suffix), so two requests never share one."""
    first, _, body = text.strip().partition("\n")
    title = first.strip()[:120]
    slug = _SLUG.sub("-", title.lower()).strip("-")[:48] or "card"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug}-{secrets.token_hex(3)}.md"
    front = yaml.safe_dump({"title": title, "state": "New"}, allow_unicode=True, sort_keys=False)
    path.write_text(f"---\n{front}---\n{(body.strip() or title)}\n", encoding="utf-8")
    return path


class QueueRunBackend:
    """Runs on loopkit's durable queue. ``config`` is the runs' settings (model, database,
    runs folder); ``cards_dir`` is where cards given as text are written. Use as an async
    context manager (it starts the durable runtime; it does not take runs from the queue)."""

    def __init__(self, config: RunnerConfig, cards_dir: Path) -> None:
        self.config = config
        self.cards_dir = cards_dir
        self._runtime: DurableRuntime | None = None

    @property
    def roles(self) -> tuple[str, ...]:
        from loopkit.cards.durable import ROLES

        return tuple(ROLES)

    async def __aenter__(self) -> QueueRunBackend:
        from loopkit.demo.durable import database_for
        from loopkit.durable.runtime import DurableRuntime, process_executor_id

        self._runtime = DurableRuntime(
            database_for(self.config), executor_id=process_executor_id("slack"), log_level="ERROR"
        )
        await self._runtime.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runtime is not None:
            await self._runtime.__aexit__(None, None, None)
            self._runtime = None

    @property
    def runtime(self) -> DurableRuntime:
        if self._runtime is None:
            raise RuntimeError("QueueRunBackend is used outside `async with`")
        return self._runtime

    def card_path(self, card: str) -> Path | None:
        """``card`` as an existing card file (absolute, from the cards folder, or from the
        current folder), or None when it is a card's text."""
        if "\n" in card or len(card) > 1024:
            return None
        for candidate in (Path(card), self.cards_dir / card):
            try:
                if candidate.is_file():
                    return candidate.resolve()
            except OSError:
                continue
        return None

    async def start(self, role: str, card: str) -> StartedRun:
        from loopkit.cards.config import ConfigError
        from loopkit.cards.durable import CardRunRequest
        from loopkit.cards.queue import enqueue_card_run
        from loopkit.demo.run import check_model

        if role not in self.roles:
            raise CardError(f"unknown role {role!r}; the roles are: {', '.join(self.roles)}")
        path = self.card_path(card)
        if path is None:
            if card.endswith(".md") and "\n" not in card and " " not in card:
                raise CardError(f"there is no card file {card!r} (in {self.cards_dir} or here)")
            path = write_text_card(self.cards_dir, card)
        loaded = Card.load(path, max_bytes=self.config.max_card_bytes)
        try:
            check_model(self.config, path)
        except ConfigError as e:
            raise CardError(f"{path.name}: {e}") from None
        request = CardRunRequest.create(path, role=role, config=self.config)
        queued = await enqueue_card_run(self.runtime, request)
        return StartedRun(queued.run_id, loaded.title, path, queued.created)

    async def status(self, run_id: str) -> RunStatus | None:
        from loopkit.cards.durable import get_card_run, list_card_runs

        record = await get_card_run(self.runtime, run_id)
        if record is None:
            return None
        position: int | None = None
        if record.state == "queued":
            queued = await list_card_runs(self.runtime, state="queued")  # newest first
            oldest_first = [r.run_id for r in reversed(queued)]
            position = oldest_first.index(run_id) + 1 if run_id in oldest_first else None
        return RunStatus(
            run_id=record.run_id,
            state=record.state,
            reason=record.reason,
            rounds=record.rounds,
            tokens=record.tokens,
            commit=record.commit,
            log_path=record.log_path,
            position=position,
        )
