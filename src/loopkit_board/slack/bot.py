"""The Slack bot: commands in messages start card runs; their threads get the progress, the
result, the report and the GIF, and answer questions about the run.

slack-bolt in socket mode (the bot opens a WebSocket to Slack; nothing listens for Slack). A
message ``<role> <card>`` from an allowed user queues a run (the queue hands it to a worker, one
run at a time per desktop) and answers in its thread with the run's place in the queue; every
``progress_interval`` seconds the thread gets the run's new tool calls and messages; at the end
the result line and the run's HTML reports and GIFs. A later message in the thread is a question
about the run, answered with the thread's persisted session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from loopkit.errors import CardError, LoopkitError
from loopkit_board.slack.chat import ThreadChat, run_context
from loopkit_board.slack.commands import RunCommand, parse_command, roles_help
from loopkit_board.slack.config import SlackBotConfig, SlackTokens
from loopkit_board.slack.progress import LogFollower, format_events, result_line
from loopkit_board.slack.report import run_files
from loopkit_board.slack.runs import RunBackend, RunStatus
from loopkit_board.slack.threads import ThreadRun, ThreadStore

__all__ = ["REFUSAL", "SlackBot"]

#: The answer to a user who is not on the allowlist.
REFUSAL = "Sorry, you are not on this bot's list of allowed users; ask its admin to add you."

# Message subtypes that are people writing (everything else: edits, joins, bots, files).
_PEOPLE_SUBTYPES = {None, "thread_broadcast"}


class SlackBot:
    """One bot: its settings, the runs, the thread store and the chat; :meth:`app` is the
    bolt app, :meth:`follow_unreported` takes up the threads a restart left."""

    def __init__(
        self,
        config: SlackBotConfig,
        tokens: SlackTokens,
        backend: RunBackend,
        threads: ThreadStore,
        chat: ThreadChat,
        logger: logging.Logger | None = None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.threads = threads
        self.chat = chat
        self.logger = logger or logging.getLogger("loopkit_board.slack")
        self.client = AsyncWebClient(token=tokens.bot, base_url=config.slack_api_url)
        self._allowed = frozenset(config.allowed_users)
        self._followers: dict[str, asyncio.Task[None]] = {}

    def app(self) -> AsyncApp:
        """The bolt app answering ``message`` events."""
        app = AsyncApp(client=self.client, logger=self.logger, process_before_response=False)
        app.event("message")(self._on_message)
        return app

    async def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("subtype") not in _PEOPLE_SUBTYPES or event.get("bot_id"):
            return
        user = str(event.get("user", ""))
        channel = str(event.get("channel", ""))
        ts = str(event.get("ts", ""))
        thread_ts = str(event.get("thread_ts") or ts)
        if user not in self._allowed:
            self.logger.warning(
                "refused a message from %s in %s: not on the allowlist", user, channel
            )
            await self._post(channel, thread_ts, REFUSAL)
            return
        text = str(event.get("text") or "")
        if thread_ts != ts:
            thread = await self.threads.get(channel, thread_ts)
            if thread is not None:
                await self._answer(thread, text)
                return
        command = parse_command(text, self.backend.roles)
        if not isinstance(command, RunCommand):
            await self._post(channel, thread_ts, roles_help(self.backend.roles, command.reason))
            return
        await self._start(channel, thread_ts, user, command)

    async def _start(self, channel: str, thread_ts: str, user: str, command: RunCommand) -> None:
        try:
            started = await self.backend.start(command.role, command.card)
        except (CardError, LoopkitError, OSError) as e:
            await self._post(channel, thread_ts, f"I cannot run that card: {e}")
            return
        self.logger.info(
            "run %s of %s (%s) for %s", started.run_id, started.card, command.role, user
        )
        await self.threads.add(channel, thread_ts, started.run_id, str(started.card))
        status = await self.backend.status(started.run_id)
        again = "" if started.created else " (this card already had a run; following it)"
        where = _place(status)
        await self._post(
            channel,
            thread_ts,
            f"Run `{started.run_id}` of *{started.title}* as `{command.role}`{again}: {where}.",
        )
        thread = await self.threads.get(channel, thread_ts)
        if thread is not None:
            self.follow(thread, status.position if status else None)

    def follow(self, thread: ThreadRun, position: int | None = None) -> None:
        """Post the run's progress in its thread until it ends (a task of this process)."""
        task = asyncio.create_task(self._follow(thread, position), name=f"follow {thread.run_id}")
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

    async def _follow(self, thread: ThreadRun, position: int | None) -> None:
        follower: LogFollower | None = None
        try:
            while True:
                await asyncio.sleep(self.config.progress_interval)
                status = await self.backend.status(thread.run_id)
                if status is None:
                    await self._post(thread.channel, thread.thread_ts, "The run is gone.")
                    await self.threads.mark_reported(thread)
                    return
                if status.position is not None and status.position != position:
                    position = status.position
                    await self._post(thread.channel, thread.thread_ts, f"Now {_place(status)}.")
                if status.log_path and follower is None:
                    follower = LogFollower(Path(status.log_path), thread.log_offset)
                if follower is not None:
                    post = format_events(follower.read_new())
                    if post:
                        await self._post(thread.channel, thread.thread_ts, post)
                        await self.threads.save_offset(thread, follower.offset)
                if status.ended:
                    await self._finish(thread, status)
                    return
        except asyncio.CancelledError:
            raise
        except Exception:  # one thread's trouble must not stop the bot; the next start retries
            self.logger.exception("following run %s failed", thread.run_id)

    async def _finish(self, thread: ThreadRun, status: RunStatus) -> None:
        line = result_line(status.state, status.reason, status.rounds, status.tokens, status.commit)
        await self._post(thread.channel, thread.thread_ts, line)
        if status.log_path:
            log = Path(status.log_path)
            for path in await asyncio.to_thread(run_files, log.parent, log, status):
                await self.client.files_upload_v2(
                    channel=thread.channel,
                    thread_ts=thread.thread_ts,
                    file=str(path),
                    filename=path.name,
                    title=f"{path.name} of run {status.run_id}",
                )
        await self.threads.mark_reported(thread)

    async def _answer(self, thread: ThreadRun, question: str) -> None:
        status = await self.backend.status(thread.run_id)
        log = Path(status.log_path) if status and status.log_path else None
        try:
            answer = await self.chat.answer(
                thread.session_id, question, lambda: run_context(Path(thread.card), status, log)
            )
        except Exception as e:  # the model's trouble is said in the thread, not a traceback
            self.logger.warning("question in %s failed: %s", thread.session_id, e)
            answer = f"I could not answer: {e}"
        await self._post(thread.channel, thread.thread_ts, answer or "(no answer)")

    async def _post(self, channel: str, thread_ts: str, text: str) -> None:
        await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)


def _place(status: RunStatus | None) -> str:
    if status is None:
        return "queued"
    if status.position is not None:
        ahead = status.position - 1
        return f"queued, position {status.position} ({ahead} run{'s' * (ahead != 1)} before it)"
    if status.ended:
        return f"already {status.state}"
    return f"{status.state} on a worker"
