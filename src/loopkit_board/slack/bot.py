"""The Slack bot: commands in messages start card runs; their threads get the progress, the
result, the report and the GIF, and answer questions about the run.

slack-bolt in socket mode (the bot opens a WebSocket to Slack; nothing listens for Slack). All
it knows of cards, runs and chats comes from :class:`~loopkit_board.service.BoardService`, the
web board's service too. A message ``<role> <card>`` from an allowed user queues a run (a worker
takes it: one run at a time per desktop) and answers in its thread with the run's place in the
queue; every ``progress_interval`` seconds the thread gets the run's new tool calls and messages;
at the end the result line, the run's HTML report and its GIF. A later message in the thread is
a question about the run, answered on the thread's persisted chat session.

Messages the bot takes: every message in a direct message with it; in a channel, a message that
starts with a mention of the bot or with a role, and replies in the threads of its runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from loopkit.cards.card import Card
from loopkit.durable.database import is_database_unavailable
from loopkit.errors import LoopkitError
from loopkit_board.feed import RunEvent
from loopkit_board.service import BoardService
from loopkit_board.slack.commands import (
    ApprovalReply,
    RunCommand,
    follow_up_role,
    is_cancel,
    parse_approval,
    parse_command,
    roles_help,
)
from loopkit_board.slack.config import SlackBotConfig, SlackTokens
from loopkit_board.slack.posts import PROBE_KINDS, format_events, place, result_line, run_files
from loopkit_board.slack.threads import ThreadRun, ThreadStore

__all__ = ["REFUSAL", "SlackBot"]

#: The answer to a user who is not on the allowlist.
REFUSAL = "Sorry, you are not on this bot's list of allowed users; ask its admin to add you."

#: How many message ids the bot remembers to drop Slack's redeliveries (the runs' threads are
#: also checked in the thread store, across restarts).
SEEN_MESSAGES = 10_000
#: A post's text is cut here (Slack truncates a message's text at 40,000 characters).
MAX_TEXT = 39_000

# Message subtypes that are people writing (everything else: edits, joins, bots, files).
_PEOPLE_SUBTYPES = {None, "thread_broadcast"}


class SlackBot:
    """One bot: its settings, the board service, the thread store; :meth:`app` is the bolt app,
    :meth:`follow_unreported` takes up the threads a restart left."""

    def __init__(
        self,
        config: SlackBotConfig,
        tokens: SlackTokens,
        service: BoardService,
        threads: ThreadStore,
        logger: logging.Logger | None = None,
    ) -> None:
        self.config = config
        self.service = service
        self.threads = threads
        self.logger = logger or logging.getLogger("loopkit_board.slack")
        self.client = AsyncWebClient(token=tokens.bot, base_url=config.slack_api_url)
        self._allowed = frozenset(config.allowed_users)
        self._followers: dict[str, asyncio.Task[None]] = {}
        # Messages taken in this process (Slack redelivers an event it thinks was not acked).
        self._seen: dict[tuple[str, str], None] = {}
        # One question at a time per thread: each answer is stored before the next is asked.
        self._asking: dict[str, asyncio.Lock] = {}

    def app(self) -> AsyncApp:
        """The bolt app answering ``message`` events."""
        app = AsyncApp(client=self.client, logger=self.logger, process_before_response=False)
        app.event("message")(self._on_message)
        return app

    async def _on_message(self, event: dict[str, Any], context: Any) -> None:
        if event.get("subtype") not in _PEOPLE_SUBTYPES or event.get("bot_id"):
            return
        user = str(event.get("user", ""))
        channel = str(event.get("channel", ""))
        ts = str(event.get("ts", ""))
        thread_ts = str(event.get("thread_ts") or ts)
        text = str(event.get("text") or "")
        thread = await self.threads.get(channel, thread_ts) if thread_ts != ts else None
        if thread is None and not self._addressed(event, text, context):
            return  # channel talk that is not for the bot
        if await self._redelivered(channel, ts, thread_ts):
            self.logger.info("ignored message %s in %s: delivered again", ts, channel)
            return
        if user not in self._allowed:
            self.logger.warning(
                "refused a message from %s in %s: not on the allowlist", user, channel
            )
            await self._post(channel, thread_ts, REFUSAL)
            return
        if thread is not None:
            role = follow_up_role(text, self.service.roles)
            approval = parse_approval(text)
            if is_cancel(text):
                await self._cancel(thread, user)
            elif approval is not None:
                await self._approve(thread, user, approval)
            elif role is not None:
                await self._follow_up(thread, user, role)
            else:
                await self._answer(thread, text)
            return
        command = parse_command(text, self.service.roles)
        if not isinstance(command, RunCommand):
            await self._post(channel, thread_ts, roles_help(self.service.roles, command.reason))
            return
        await self._start(channel, thread_ts, user, command)

    async def _redelivered(self, channel: str, ts: str, thread_ts: str) -> bool:
        """True for a message already taken (here, or by an earlier bot process when it
        started a run)."""
        key = (channel, ts)
        if key in self._seen:
            return True
        self._seen[key] = None
        if len(self._seen) > SEEN_MESSAGES:
            del self._seen[next(iter(self._seen))]
        return ts == thread_ts and await self.threads.get(channel, ts) is not None

    def _addressed(self, event: dict[str, Any], text: str, context: Any) -> bool:
        if event.get("channel_type") == "im":
            return True
        bot_user = getattr(context, "bot_user_id", None)
        if bot_user and text.lstrip().startswith(f"<@{bot_user}"):
            return True
        first = text.split(maxsplit=1)[0].lower() if text.split() else ""
        return first in self.service.roles

    async def _start(self, channel: str, thread_ts: str, user: str, command: RunCommand) -> None:
        created: Path | None = None
        try:
            card, created = await asyncio.to_thread(self._card, command.card)
            queued = await self.service.enqueue(card, command.role, started_by=f"slack:{user}")
        except (LoopkitError, OSError) as e:
            if created is not None:  # a card made from text that cannot run: not left behind
                created.unlink(missing_ok=True)
            await self._post(channel, thread_ts, f"I cannot run that card: {e}")
            return
        title = await asyncio.to_thread(_title, card)  # its file name when it cannot be read
        self.logger.info("run %s of %s (%s) for %s", queued.run_id, card, command.role, user)
        await self.threads.add(channel, thread_ts, queued.run_id, str(card))
        record = await self.service.get_run(queued.run_id)
        again = "" if queued.created else " (this card already had a run; following it)"
        where = place(record.state if record else "queued", queued.position)
        try:
            await self._post(
                channel,
                thread_ts,
                f"Run `{queued.run_id}` of *{title}* as `{command.role}`{again}: {where}.",
            )
        except Exception as e:  # the run is queued all the same: its thread is still followed
            self.logger.warning("posting run %s's place failed: %s", queued.run_id, e)
        thread = await self.threads.get(channel, thread_ts)
        if thread is not None:
            self.follow(thread, queued.position)

    def _card(self, card: str) -> tuple[str, Path | None]:
        """A card file's path or name as it is; a card's text written as a new card in the
        cards folder (its first line the title), returned as the second item too."""
        if "\n" not in card:
            try:
                return str(self.service.card_path(card)), None
            except LoopkitError:
                if card.endswith(".md") and " " not in card:
                    raise
        title, _, body = card.strip().partition("\n")
        path = self.service.create_card(title.strip()[:120], body.strip() or title).path
        return str(path), Path(path)

    def follow(self, thread: ThreadRun, position: int | None = None) -> None:
        """Post the run's progress in its thread until it ends (a task of this process)."""
        task = asyncio.create_task(
            self._keep_following(thread, position), name=f"follow {thread.run_id}"
        )
        self._followers[thread.session_id] = task
        task.add_done_callback(lambda t: self._followers.pop(thread.session_id, None))

    async def follow_unreported(self) -> int:
        """Take up every thread whose run's end was not posted yet (after a restart)."""
        pending = await self.threads.unreported()
        for thread in pending:
            self.follow(thread)
        return len(pending)

    async def stop(self) -> None:
        """Stop following runs (their threads are taken up again at the next start)."""
        tasks = list(self._followers.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_following(self, thread: ThreadRun, position: int | None) -> None:
        """:meth:`_follow`, taken up again after a failure (Slack or the database away for a
        while): from what the thread store says was posted, until the run's end is posted."""
        while not await self._follow(thread, position):
            await asyncio.sleep(self.config.retry_interval)
            again = await self.threads.get(thread.channel, thread.thread_ts)
            if again is None or again.reported or again.run_id != thread.run_id:
                return
            thread, position = again, None

    async def _follow(self, thread: ThreadRun, position: int | None) -> bool:
        """Post the run's progress, then its end; False when that failed half-way."""
        pending: list[RunEvent] = []
        end: list[RunEvent] = []
        moves: list[int] = []
        seen = 0  # log events of this subscription; the first `thread.posted` were posted
        posted = thread.posted

        async def read() -> None:
            nonlocal seen, position
            async for event in self.service.follow(thread.run_id):
                if event.kind == "end":
                    end.append(event)
                    return
                if event.kind == "queued":
                    where = event.data.get("position")
                    if isinstance(where, int) and where != position:
                        position = where
                        moves.append(where)
                elif event.kind not in PROBE_KINDS:
                    seen += 1
                    if seen > posted:
                        pending.append(event)

        reader = asyncio.create_task(read())
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(reader), self.config.progress_interval)
                if moves:
                    await self._post(
                        thread.channel, thread.thread_ts, f"Now {place('queued', moves[-1])}."
                    )
                    moves.clear()
                batch, pending[:] = list(pending), []
                post = format_events(batch)
                if post:
                    await self._post(thread.channel, thread.thread_ts, post)
                if batch:
                    posted += len(batch)
                    await self.threads.save_posted(thread, posted)
                if reader.done():
                    reader.result()  # its failure is this follower's
                    if end:
                        await self._finish(thread, end[0])
                    return True
        except asyncio.CancelledError:
            raise
        except Exception as e:  # one thread's trouble must not stop the bot: tried again later
            if is_database_unavailable(e):  # one line for the whole outage, not one a thread
                self.service.database_lost(e)
                return False
            self.logger.exception("following run %s failed; trying again", thread.run_id)
            return False
        finally:
            reader.cancel()

    async def _finish(self, thread: ThreadRun, end: RunEvent) -> None:
        state = str(end.data.get("state"))
        reason = end.data.get("reason")
        record = await self.service.get_run(thread.run_id)
        line = result_line(record, state, reason if isinstance(reason, str) else None)
        await self._post(thread.channel, thread.thread_ts, line)
        for made in await run_files(self.service, thread.run_id):
            await self.client.files_upload_v2(
                channel=thread.channel,
                thread_ts=thread.thread_ts,
                file=made.data,
                filename=made.name,
                title=f"{made.name} of run {thread.run_id}",
            )
        await self.threads.mark_reported(thread)

    async def _cancel(self, thread: ThreadRun, user: str) -> None:
        """``cancel`` in a run's thread: the run is cancelled (its worker stops it within half a
        second); the thread's follower posts its end as for any run."""
        try:
            before = await self.service.cancel(thread.run_id)
        except LoopkitError as e:  # unknown, or already ended: said in the thread
            await self._post(thread.channel, thread.thread_ts, f"I cannot cancel it: {e}")
            return
        self.logger.info("run %s cancelled by %s (was %s)", thread.run_id, user, before.state)
        await self._post(
            thread.channel,
            thread.thread_ts,
            f"Cancelling run `{thread.run_id}` (it was {before.state}).",
        )

    async def _approve(self, thread: ThreadRun, user: str, reply: ApprovalReply) -> None:
        """``approve`` / ``deny`` in a run's thread: the answer to the run's waiting approval
        (the one waiting, or the numbered one), recorded as ``slack:<user>``."""
        waiting = [a.number for a in await self.service.approvals(thread.run_id) if a.waiting]
        number = reply.number
        if number is None:
            if len(waiting) != 1:
                say = (
                    "no approval is waiting"
                    if not waiting
                    else f"approvals {', '.join(map(str, waiting))} are waiting: say which"
                )
                await self._post(thread.channel, thread.thread_ts, f"I cannot answer: {say}.")
                return
            number = waiting[0]
        try:
            await self.service.answer_approval(
                thread.run_id, number, approved=reply.approved, by=f"slack:{user}", note=reply.note
            )
        except LoopkitError as e:
            await self._post(thread.channel, thread.thread_ts, f"I cannot answer: {e}")
            return
        said = "approved" if reply.approved else "refused"
        self.logger.info("approval %s of run %s %s by %s", number, thread.run_id, said, user)
        await self._post(
            thread.channel, thread.thread_ts, f"Approval {number} {said} by <@{user}>."
        )

    async def _follow_up(self, thread: ThreadRun, user: str, role: str) -> None:
        """``test`` (or another role) in a run's thread: a run of that role in the thread's
        run's repository (the test role: only after a run that ended done); the thread then
        follows the new run."""
        before = await self.service.get_run(thread.run_id)
        if before is not None and before.state in ("queued", "running", "interrupted"):
            # A thread follows one run at a time: the next starts once this one has ended.
            await self._post(
                thread.channel,
                thread.thread_ts,
                f"I cannot start that: run `{thread.run_id}` is {before.state}; ask again once "
                "it has ended (or cancel it)",
            )
            return
        try:
            who = f"slack:{user}"
            if role == "test":
                queued = await self.service.test_change(thread.run_id, started_by=who)
            else:
                queued = await self.service.follow_up(thread.run_id, role, started_by=who)
        except LoopkitError as e:  # not done yet, unknown: said in the thread
            await self._post(thread.channel, thread.thread_ts, f"I cannot start that: {e}")
            return
        self.logger.info("run %s (%s) after %s for %s", queued.run_id, role, thread.run_id, user)
        await self.threads.add(thread.channel, thread.thread_ts, queued.run_id, thread.card)
        record = await self.service.get_run(queued.run_id)
        where = place(record.state if record else "queued", queued.position)
        await self._post(
            thread.channel,
            thread.thread_ts,
            f"Run `{queued.run_id}` as `{role}` in the repository of run `{thread.run_id}`: "
            f"{where}.",
        )
        following = await self.threads.get(thread.channel, thread.thread_ts)
        if following is not None:
            self.follow(following, queued.position)

    async def _answer(self, thread: ThreadRun, question: str) -> None:
        async with self._asking.setdefault(thread.session_id, asyncio.Lock()):
            await self._answer_now(thread, question)

    async def _answer_now(self, thread: ThreadRun, question: str) -> None:
        try:
            pieces = [
                piece
                async for piece in self.service.ask(
                    thread.run_id, question, session_id=thread.session_id
                )
            ]
            answer = "".join(pieces).strip() or "(no answer)"
        except LoopkitError as e:  # not started yet, an empty question: said in the thread
            answer = str(e)
        except Exception as e:  # the model's trouble is said in the thread, not a traceback
            self.logger.warning("question in %s failed: %s", thread.session_id, e)
            answer = f"I could not answer: {e}"
        await self._post(thread.channel, thread.thread_ts, answer)

    async def _post(self, channel: str, thread_ts: str, text: str) -> None:
        text = self.service.shown(text)  # no server folder in Slack: cards and runs relative
        if len(text) > MAX_TEXT:  # Slack cuts a message's text at 40,000 characters
            text = text[:MAX_TEXT] + "\n… (cut here; the rest is on the board)"
        await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)


def _title(card: str) -> str:
    """The card's title (its file name when it cannot be read any more)."""
    try:
        return Card.load(card).title
    except (LoopkitError, OSError):
        return Path(card).name
