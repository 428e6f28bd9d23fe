"""The board's service: cards, the run queue, runs, their progress and a chat per run.

One object both front-ends (the web board, the Slack bot) are built on; it holds no web code.
Everything it knows lives on disk (the card files, the durable runs' database, the chat
sessions' SQLite file), so a restarted board or bot finds every run, queue place and chat again.

API (all of it; ``async`` methods need the service started: ``async with BoardService(...)``)::

    service = BoardService(cards_dir, config=RunnerConfig(...), data_dir=None,
                           chat_model="offline")
    async with service:                                   # starts the durable runtime (DBOS)
        service.roles                                     # ("develop", "test", ...): default first
        service.default_role
        service.list_cards() -> list[CardEntry]           # name, path, title, state, category,
                                                          # body, text, error (unparseable: error)
        service.get_card(name) -> CardEntry
        service.create_card(title, body, category=None, name=None) -> CardEntry  # state New
        service.save_card(name, text) -> CardEntry        # whole text, checked before written
        await service.enqueue(card, role=None, repo=None, parent=None, then=None,
                              started_by=None, approval_required=None) -> QueuedRun
                                                          # card: a name in the folder (or a
                                                          # path inside it); .run_id .created
                                                          # .position
        await service.follow_up(run_id, role) -> QueuedRun  # in the run's repository
        await service.test_change(run_id) -> QueuedRun    # the test role on a done run's repo
        await service.queue_position(run_id) -> int | None    # 1 = next; None: not queued
        await service.active_runs() -> dict[str, ActiveRun]  # card path -> queued/running run
        await service.cancel(run_id) -> CardRunRecord     # a queued or running run
        await service.list_runs(limit=None) -> list[CardRunRecord]   # newest first
        await service.run_summaries(RunFilter(...)) -> list[RunSummary]  # every run, cheap
        service.watch.subscribe()                         # live: which cards and runs changed
        await service.approvals(run_id) -> list[Approval] # asked and answered, from the log
        await service.answer_approval(run_id, number, approved=..., by=...)
        await service.get_run(run_id) -> CardRunRecord | None
        await service.run_details(run_id) -> RunDetails | None  # record, prepared (card text,
                                                          # run folder, log), artifacts
        await service.report(run_id) -> Path | None       # the run's self-contained HTML report
        async for event in service.follow(run_id, after=-1): ...  # RunEvent(seq, kind, data,
                                                          # time) until the run ends
        async for piece in service.ask(run_id, question, session_id=None): ...  # answer text
        await service.chat_history(run_id, session_id=None) -> list[ChatMessage]  # questions
                                                          # and answers after the run's own
        await service.findings() -> list[dict]            # fingerprints, count across runs

Errors a user can cause (unknown card, bad card text, unknown role, no transcript for the
scripted model, unknown run) raise :class:`BoardError` with a message naming the input.

``follow`` kinds: ``queued`` {position}, ``state`` {state}, ``start``, ``round`` {round, ms,
input_tokens, output_tokens, cached_input_tokens, calls, text}, ``tool`` {name, arguments, ms,
error, result (short)}, ``error``, ``interrupted``, ``resumed``, ``result`` {status, reason,
totals}, and last ``end`` {state, reason}. See :mod:`loopkit_board.feed`.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import ChatMessage
from loopkit.cards.card import Card
from loopkit.cards.config import ConfigError, RunnerConfig
from loopkit.errors import CardError, LoopkitError
from loopkit_board import chat_room
from loopkit_board.artifacts import RunArtifacts, merge_findings, run_artifacts
from loopkit_board.cards import CardEntry, CardFolder
from loopkit_board.feed import RunEvent, RunFeed
from loopkit_board.filters import RunFilter
from loopkit_board.live import BoardWatch
from loopkit_board.run_index import RunIndex, RunSummary
from loopkit_board.runs_database import RunsDatabase
from loopkit_board.shown_paths import PathShortener
from loopkit_board.trace_link import check_tracing_url, trace_url

if TYPE_CHECKING:
    from loopkit.cards.durable import CardRunRecord, PreparedRun
    from loopkit.durable.runtime import DurableRuntime
    from loopkit_board.approvals import Approval

__all__ = [
    "ActiveRun",
    "BoardError",
    "BoardService",
    "CardEntry",
    "CardNotFoundError",
    "QueuedRun",
    "RunDetails",
    "RunEvent",
]

#: The role "Test this change" runs (and that a follow-up runs only after a run ended done).
TEST_ROLE = "test"
#: Who may be named as having started a run, and a tool name in approval_required.
_WHO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,99}")
_TOOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


class BoardError(LoopkitError):
    """Bad input to the board (a card, a role, a run id): the message says what was expected."""


class CardNotFoundError(BoardError):
    """No such card in the cards folder (the web board answers 404)."""


@dataclass(frozen=True, slots=True)
class QueuedRun:
    """A run put on the queue: its id, whether it is new (False: the card already had a queued
    or running run, returned instead), and its place (1 = next; None once a worker took it)."""

    run_id: str
    created: bool
    position: int | None


@dataclass(frozen=True, slots=True)
class ActiveRun:
    """A card's queued or running run: its id, state and place in the queue (when queued)."""

    run_id: str
    state: str
    position: int | None


@dataclass(frozen=True, slots=True)
class RunDetails:
    """Everything the run page shows about one run."""

    record: CardRunRecord
    prepared: PreparedRun | None
    artifacts: RunArtifacts
    position: int | None


class BoardService:
    """Cards of one folder, runs on the durable queue, their progress and chats (see the module's
    docstring for the whole API)."""

    def __init__(
        self,
        cards_dir: str | Path,
        *,
        config: RunnerConfig | None = None,
        data_dir: str | Path | None = None,
        chat_model: str = "offline",
        log_poll: float = 0.1,
        tracing_url: str | None = None,
    ) -> None:
        self.config = config if config is not None else RunnerConfig()
        self.cards = CardFolder(cards_dir, max_bytes=self.config.max_card_bytes)
        self.data_dir = Path(data_dir) if data_dir is not None else self.config.runs_dir
        self.chat_model = chat_model
        self.log_poll = log_poll
        if tracing_url is not None:
            check_tracing_url(tracing_url)
        #: A trace viewer's page of one trace, ``{trace_id}`` in it: each run links there.
        self.tracing_url = tracing_url
        #: Paths as the board and the bot show them (relative to the cards or runs folder).
        self.shown = PathShortener(
            [
                (self.cards.folder, "", "the cards folder"),
                (self.config.runs_dir, "runs/", "the runs folder"),
                (self.data_dir, "data/", "the data folder"),
            ]
        )
        #: The runs database: opened at start, or later when it is not there yet; watched
        #: when lost (its ``outage`` says so once per change).
        self.database = RunsDatabase(self.config, self.data_dir)
        self._feeds: dict[str, RunFeed] = {}
        self._prepared: dict[str, PreparedRun] = {}
        #: Every card run, cheaply (lists, filters, the runs' history of a card).
        self.index = RunIndex(lambda: self.runtime)
        #: Which cards and runs changed, for every live page (one watcher for all).
        self.watch = BoardWatch(self._card_signatures, self._runs_changed, poll=log_poll * 2.5)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the durable runs' database (created on first use; the service is up without it
        and opens it once it is there)."""
        await self.database.start()

    def database_lost(self, error: BaseException) -> None:
        """A call found the runs database unreachable: say so (once per outage) and watch for
        its return in the background (which says so, once)."""
        self.database.lost(error)

    async def stop(self) -> None:
        """Close the database (runs go on in their workers)."""
        await self.database.stop()

    async def __aenter__(self) -> BoardService:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def runtime(self) -> DurableRuntime:
        runtime = self.database.runtime
        if runtime is None:
            if self.database.starting:
                from loopkit.durable.errors import DatabaseUnavailableError

                raise DatabaseUnavailableError(
                    "the runs database could not be reached yet; the board keeps trying"
                )
            raise BoardError("the board service is not started: use `async with service:`")
        return runtime

    # -- cards -------------------------------------------------------------------------------
    @property
    def roles(self) -> tuple[str, ...]:
        """The roles a run can take (the default first), as the application knows them."""
        from loopkit_board.roles import available_roles

        return available_roles(self.config)

    @property
    def default_role(self) -> str:
        from loopkit_board.roles import default_role

        return default_role(self.config)

    def list_cards(self) -> list[CardEntry]:
        """Every card of the folder (an unparseable one with its ``error``)."""
        return self.cards.list()

    def get_card(self, name: str) -> CardEntry:
        """Card ``name`` of the folder (:class:`CardNotFoundError` when there is none)."""
        try:
            return self.cards.get(name)
        except CardError as e:
            raise CardNotFoundError(str(e)) from None

    def create_card(
        self, title: str, body: str, category: str | None = None, name: str | None = None
    ) -> CardEntry:
        """A new card file (state New): ``name`` (a file name; ``.md`` added when missing),
        else named after its title."""
        try:
            return self.cards.create(title, body, category=category, name=name)
        except CardError as e:
            raise BoardError(str(e)) from None

    def save_card(self, name: str, text: str) -> CardEntry:
        """Replace card ``name`` with ``text`` (front matter and body); nothing is written when
        ``text`` is not a valid card."""
        try:
            return self.cards.write(name, text)
        except CardError as e:
            raise BoardError(str(e)) from None

    def card_path(self, card: str | Path) -> Path:
        """A card of the cards folder, given by its file name or by a path that resolves (links
        followed) to a file directly in the folder; :class:`CardNotFoundError` for anything
        else: a run never rewrites a file outside the folder."""
        try:
            return self.cards.resolve(card)
        except CardError as e:
            raise CardNotFoundError(str(e)) from None

    # -- the queue ---------------------------------------------------------------------------
    async def enqueue(
        self,
        card: str | Path,
        role: str | None = None,
        *,
        repo: str | Path | None = None,
        parent: str | None = None,
        then: str | None = None,
        started_by: str | None = None,
        approval_required: list[str] | None = None,
    ) -> QueuedRun:
        """Queue a run of ``card`` in ``role`` (default: the first role); a card with a queued
        or running run returns that run. ``repo``: in an earlier run's repository (``parent``,
        the run it follows); ``then``: a pipeline, this role after a run that ends done.
        ``started_by``: who asks (a login, ``slack:<user>``), recorded with the run;
        ``approval_required``: tools whose calls wait for a person's yes (else the config's)."""
        from loopkit.cards.durable import CardRunRequest, PipelineSpec
        from loopkit.cards.queue import enqueue_card_run
        from loopkit.demo.workspace import WorkspaceError, check_earlier_repo
        from loopkit_board.roles import RoleProblem, check_run

        path = self.card_path(card)
        role = role or self.default_role
        if then is not None and then == role:
            raise BoardError(f"then {then!r}: expected another role than the run's ({role!r})")
        if started_by is not None and not _WHO.fullmatch(started_by):
            raise BoardError(
                f"started_by {started_by[:40]!r}: expected a login or user id (letters, digits, "
                "'_.@:+-')"
            )
        for tool in approval_required or []:
            if not _TOOL.fullmatch(tool):
                raise BoardError(
                    f"approval_required: {tool[:40]!r} is not a tool name (letters, digits, '_')"
                )
        try:
            Card.load(path, max_bytes=self.config.max_card_bytes)
            config = check_run(self.config, path, role)
            if approval_required is not None:
                config = config.model_copy(update={"approval_required": list(approval_required)})
            if then is not None:
                check_run(self.config, path, then)
            if repo is not None:
                check_earlier_repo(Path(repo), config.app_source.name)
            pipeline = PipelineSpec(develop=role, then=then) if then is not None else None
            request = CardRunRequest.create(
                path, role=role, config=config, repo=repo, parent=parent, pipeline=pipeline,
                started_by=started_by,
            )  # fmt: skip
        except (CardError, ConfigError, RoleProblem, WorkspaceError) as e:
            raise BoardError(str(e)) from None
        done = await enqueue_card_run(self.runtime, request)
        return QueuedRun(done.run_id, done.created, await self.queue_position(done.run_id))

    async def follow_up(
        self, run_id: str, role: str | None = None, *, started_by: str | None = None
    ) -> QueuedRun:
        """A run of ``run_id``'s card in ``role`` that continues in that run's repository (a
        run that never got one, e.g. still queued, starts from a fresh copy of the app). The
        test role goes through :meth:`test_change` (only after a run that ended done)."""
        if role == TEST_ROLE:
            return await self.test_change(run_id, started_by=started_by)
        record = await self.get_run(run_id)
        if record is None:
            raise BoardError(f"there is no run {run_id!r}")
        return await self.enqueue(
            record.card, role, repo=record.repo, parent=run_id, started_by=started_by
        )

    async def test_change(
        self, run_id: str, role: str = TEST_ROLE, *, started_by: str | None = None
    ) -> QueuedRun:
        """Test what a done run changed: a ``role`` run (the tester) in its repository.
        Refused (:class:`BoardError`) for a run that did not end done: a tester that passed
        would make the card Done although its developer failed (or never finished)."""
        record = await self.get_run(run_id)
        if record is None:
            raise BoardError(f"there is no run {run_id!r}")
        if record.state in ("queued", "running", "interrupted"):
            raise BoardError(
                f"run {run_id} is {record.state}: test its change once it has ended done"
            )
        if record.state != "done" or not record.repo:
            why = f" ({record.reason})" if record.reason else ""
            raise BoardError(
                f"run {run_id} ended {record.state}{why}: only a run that ended done has a "
                "change to test; start a follow-up develop run in its repository first (it "
                "continues there), then test that run's change"
            )
        return await self.enqueue(
            record.card, role, repo=record.repo, parent=run_id, started_by=started_by
        )

    async def cancel(self, run_id: str) -> CardRunRecord:
        """Cancel a queued or running run (its worker stops it within half a second; a card
        it had set In Work becomes Failed); returns its record before. :class:`BoardError`
        for an unknown or ended run."""
        from loopkit.cards.queue import cancel_card_run
        from loopkit.durable.errors import DurableError

        try:
            return await cancel_card_run(self.runtime, run_id)
        except DurableError as e:
            raise BoardError(str(e)) from None

    async def active_runs(self) -> dict[str, ActiveRun]:
        """The queued and running card runs by card path (one query, no checkpoints read):
        what the board shows on each card."""
        from loopkit.cards.durable import CARD_RUN_WORKFLOW

        found = await self.runtime.list_runs(
            workflow=CARD_RUN_WORKFLOW, status=["ENQUEUED", "PENDING"], newest_first=False
        )
        positions = await self.queue_positions()
        active: dict[str, ActiveRun] = {}
        for run in found:
            args = run.inputs.get("args") or []
            card = args[0].get("card") if args and isinstance(args[0], dict) else None
            if isinstance(card, str):
                active[card] = ActiveRun(run.run_id, run.state, positions.get(run.run_id))
        return active

    async def queue_positions(self) -> dict[str, int]:
        """Every queued card run's place (1 = next), oldest first."""
        from loopkit.cards.durable import CARD_RUN_WORKFLOW
        from loopkit.cards.queue import CARD_QUEUE

        queued = await self.runtime.list_runs(
            workflow=CARD_RUN_WORKFLOW, status="ENQUEUED", newest_first=False
        )
        ids = [r.run_id for r in queued if r.queue == CARD_QUEUE]
        return {run_id: i + 1 for i, run_id in enumerate(ids)}

    async def queue_position(self, run_id: str) -> int | None:
        return (await self.queue_positions()).get(run_id)

    # -- runs --------------------------------------------------------------------------------
    async def list_runs(self, limit: int | None = None) -> list[CardRunRecord]:
        from loopkit.cards.durable import list_card_runs

        return await list_card_runs(self.runtime, limit=limit)

    async def run_summaries(self, where: RunFilter | None = None) -> list[RunSummary]:
        """Every card run, newest first (``where``: only those it matches), from the index: no
        checkpoint read, so a history of thousands of runs lists at once."""
        runs = await self.index.runs()
        if where is None or not where.active:
            return runs
        titles = {c.name: c.title for c in self.list_cards()} if where.q else {}
        return where.apply(runs, titles)

    def _card_signatures(self) -> dict[str, tuple[object, ...]]:
        return {c.name: (c.title, c.state, c.category, c.error) for c in self.list_cards()}

    async def _runs_changed(self) -> set[str]:
        return await self.index.refresh(force=True)

    async def approvals(self, run_id: str) -> list[Approval]:
        """The run's approvals as its log has them: asked (waiting) and answered."""
        from loopkit_board.approvals import read_approvals

        prepared = await self.prepared(run_id)
        return read_approvals(prepared.log_path if prepared is not None else None)

    async def answer_approval(
        self, run_id: str, number: int, *, approved: bool, by: str, note: str | None = None
    ) -> None:
        """Answer the run's waiting approval ``number`` (yes or no, by ``by``): the run goes on
        at once, or when a worker takes it again. :class:`BoardError` when the run has no such
        approval waiting (answered already, or never asked)."""
        from loopkit.durable.approval import send_approval

        if not _WHO.fullmatch(by):
            raise BoardError(f"by {by[:40]!r}: expected a login or user id")
        waiting = {a.number: a for a in await self.approvals(run_id) if a.waiting}
        if number not in waiting:
            raise BoardError(
                f"run {run_id} has no approval {number} waiting"
                + (f" (waiting: {', '.join(map(str, waiting))})" if waiting else "")
            )
        self.runtime.check_started()
        await send_approval(run_id, number, approved=approved, by=by, note=note)
        logging.getLogger("loopkit_board").info(
            "approval %s of run %s (%s): %s by %s",
            number, run_id, waiting[number].name, "approved" if approved else "refused", by,
        )  # fmt: skip

    async def get_run(self, run_id: str) -> CardRunRecord | None:
        from loopkit.cards.durable import get_card_run

        return await get_card_run(self.runtime, run_id)

    async def prepared(self, run_id: str) -> PreparedRun | None:
        """What the run's preparation recorded (card text, run folder, log), once it ran."""
        found = self._prepared.get(run_id)
        if found is not None:
            return found
        from loopkit.cards.durable import PREPARE_STEP, PreparedRun

        for step in await self.runtime.steps(run_id):
            if step.name == PREPARE_STEP and isinstance(step.output, str):
                found = PreparedRun.model_validate_json(step.output)
                self._prepared[run_id] = found
                return found
        return None

    def trace_url(self, prepared: PreparedRun | None) -> str | None:
        """The run's trace in the viewer of :attr:`tracing_url`, when both are known (the run
        log's ``trace`` line names the trace: docs/observability.md)."""
        if self.tracing_url is None or prepared is None:
            return None
        return trace_url(self.tracing_url, Path(prepared.log_path))

    async def run_details(self, run_id: str) -> RunDetails | None:
        record = await self.get_run(run_id)
        if record is None:
            return None
        prepared = await self.prepared(run_id)
        artifacts = run_artifacts(
            prepared.run_dir if prepared else None, base=prepared.base if prepared else None
        )
        position = await self.queue_position(run_id) if record.state == "queued" else None
        return RunDetails(record, prepared, artifacts, position)

    def follow(self, run_id: str, after: int = -1) -> AsyncIterator[RunEvent]:
        """The run's events from ``after`` + 1 on (all by default), live until it ends. Every
        follower of a run shares one reader."""
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = RunFeed(
                run_id,
                lambda: self._probe(run_id),
                log_poll=self.log_poll,
                on_idle=self._drop_feed,
                files=_files_beside,
            )
            self._feeds[run_id] = feed
        return feed.subscribe(after)

    def _drop_feed(self, feed: RunFeed) -> None:
        if self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]

    async def _probe(self, run_id: str) -> tuple[str, int | None, Path | None, str | None]:
        from loopkit.durable.errors import DatabaseUnavailableError

        try:
            return await self._probe_now(run_id)
        except DatabaseUnavailableError as e:
            self.database_lost(e)
            raise

    async def _probe_now(self, run_id: str) -> tuple[str, int | None, Path | None, str | None]:
        run = await self.runtime.get_run(run_id)
        if run is None:
            return "failed", None, None, f"there is no run {run_id!r}"
        prepared = await self.prepared(run_id)
        log = Path(prepared.log_path) if prepared is not None else None
        state: str = run.state
        reason: str | None = None
        if run.finished:
            record = await self.get_run(run_id)
            if record is not None:
                state, reason = record.state, record.reason
            else:
                state = "failed" if state == "succeeded" else state
        position = await self.queue_position(run_id) if state == "queued" else None
        return state, position, log, reason

    async def report(self, run_id: str) -> Path | None:
        """The run's HTML report (self-contained; written in its run folder, again at each
        call), or None before the run has started."""
        from loopkit_board.report import write_report

        record = await self.get_run(run_id)
        prepared = await self.prepared(run_id)
        if record is None or prepared is None:
            return None
        return write_report(record, prepared, shown=self.shown)

    # -- chat ---------------------------------------------------------------------------------
    async def ask(
        self, run_id: str, question: str, *, session_id: str | None = None
    ) -> AsyncIterator[str]:
        """Ask about a run: the run's conversation (seeded into the chat's session the first
        time) plus every earlier question and answer go to the chat model; the answer streams
        back piece by piece and is stored with the question (:mod:`loopkit_board.chat_room`)."""
        if not question.strip():
            raise BoardError("the question is empty")
        prepared = await self.prepared(run_id)
        if prepared is None:
            if await self.get_run(run_id) is None:
                raise BoardError(f"there is no run {run_id!r}")
            raise BoardError(f"run {run_id} has not started yet; ask once it has")
        answer = chat_room.ask(
            self.data_dir, run_id, prepared, question,
            chat_model=self.chat_model, api_base=self.config.api_base, session_id=session_id,
        )  # fmt: skip
        async for piece in answer:
            yield piece

    async def chat_history(self, run_id: str, session_id: str | None = None) -> list[ChatMessage]:
        """The chat's questions and answers (without the run's own messages)."""
        return await chat_room.chat_history(self.data_dir, run_id, session_id)

    # -- findings ----------------------------------------------------------------------------
    async def findings(self) -> list[dict[str, Any]]:
        """Findings of every run's test scripts (and of ``runs_dir/results.sqlite``), one row
        per fingerprint with its count across runs."""
        dbs: list[Path] = []
        shared = self.config.runs_dir / "results.sqlite"
        if shared.is_file():
            dbs.append(shared)
        for record in await self.list_runs():
            with contextlib.suppress(Exception):
                prepared = await self.prepared(record.run_id)
                if prepared is not None:
                    dbs.extend(run_artifacts(prepared.run_dir).findings_dbs)
        return merge_findings(dbs)


def _files_beside(log: Path) -> tuple[str, ...]:
    """The pictures and reports of the run folder a run log lies in (what the run page shows)."""
    from loopkit_board.artifacts import list_run_files

    images, reports, _ = list_run_files(log.parent)
    return (*images, *reports)
