"""``python -m loopkit_board.slack --config bot.toml``: the Slack bot, in socket mode.

The tokens come from ``SLACK_BOT_TOKEN`` and ``SLACK_APP_TOKEN``; they never reach the log (a
redacting filter sits on every handler). Bad input (settings, tokens) is one line on stderr and
exit status 2; SIGINT, SIGTERM or SIGHUP stop the bot (exit 130), at any moment, and the next
start takes up the threads of runs it had not finished reporting. Slack out of reach at start
is tried again after 1, 2, 4, ... 60 s, one log line a try. See docs/slack.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from loopkit.command_line import EXIT_BAD_INPUT, EXIT_INTERRUPTED, OneLineParser

__all__ = ["main"]


class _RedactingFilter(logging.Filter):
    """Redacts secret shapes and the tokens from every log record."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        from loopkit.redaction import Redactor

        self.redactor = Redactor(secrets=secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redactor.redact(record.getMessage())
        record.args = None
        if record.exc_info:  # a traceback is text too: formatted here, redacted
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = self.redactor.redact(text)
            record.exc_info = None
        return True


def _logging(secrets: list[str]) -> logging.Logger:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_RedactingFilter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logger = logging.getLogger("loopkit_board.slack")
    logger.setLevel(logging.INFO)
    return logger


async def _serve(config_path: Path) -> int:
    from loopkit.cards import load_config
    from loopkit.demo.run import check_durable
    from loopkit_board.settings import check_service_settings
    from loopkit_board.slack.config import load_bot_config, read_tokens

    config = load_bot_config(config_path)
    tokens = read_tokens()
    logger = _logging([tokens.bot, tokens.app])
    runner = load_config(config.runner_config)
    check_durable(runner)
    check_service_settings(runner, config.data_dir, data_dir_name="data_dir (the bot's config)")
    data_dir = config.data_dir or runner.runs_dir
    chat_model = config.chat_model or ("offline" if runner.scripted else runner.model)

    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    from loopkit_board.service import BoardService
    from loopkit_board.slack.bot import SlackBot
    from loopkit_board.slack.threads import ThreadStore

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    service = BoardService(
        config.cards_dir, config=runner, data_dir=data_dir, chat_model=chat_model
    )
    async with service:
        bot = SlackBot(config, tokens, service, ThreadStore(data_dir / "slack.sqlite"), logger)
        # The socket client's own reconnection logs a traceback per try: one line instead.
        socket_logger = logging.getLogger("loopkit_board.slack.socket")
        socket_logger.addFilter(_OneLine())
        handler = AsyncSocketModeHandler(bot.app(), tokens.app, logger=socket_logger)
        try:
            if await connect(handler, stop, logger):
                taken = await bot.follow_unreported()
                logger.info("connected in socket mode; following %d earlier run(s)", taken)
                await stop.wait()
            logger.info("stopping")
        finally:
            await bot.stop()
            await handler.close_async()
    return EXIT_INTERRUPTED


#: Seconds between two tries to reach Slack at start: doubled from the first to the last.
FIRST_RETRY_S = 1.0
LAST_RETRY_S = 60.0


async def connect(handler: Any, stop: asyncio.Event, logger: logging.Logger) -> bool:
    """Open the socket-mode connection, trying again with a growing pause (one log line each
    try) while Slack cannot be reached; False when ``stop`` is set first."""
    client = handler.client
    delay = FIRST_RETRY_S
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            opened = await _or_stop(
                client.web_client.apps_connections_open(app_token=client.app_token), stop
            )
            if opened is _STOPPED:
                return False
            client.wss_uri = opened["url"]
            if await _or_stop(handler.connect_async(), stop) is _STOPPED:
                return False
            if attempt > 1:
                logger.info("reached Slack at try %d", attempt)
            return True
        except Exception as e:  # Slack away, refusing, or answering an error: said, tried again
            logger.warning(
                "cannot reach Slack (try %d): %s; trying again in %.0f s",
                attempt,
                _one_line(e),
                delay,
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, LAST_RETRY_S)
    return False


_STOPPED = object()


async def _or_stop(awaitable: Any, stop: asyncio.Event) -> Any:
    """The awaitable's result, or ``_STOPPED`` when ``stop`` is set first (the awaitable is
    then cancelled)."""
    task = asyncio.ensure_future(awaitable)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return _STOPPED


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:300]


class _OneLine(logging.Filter):
    """A record without its traceback: its message says what failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = OneLineParser(
        prog="python -m loopkit_board.slack",
        description="The Slack bot: `<role> <card>` in a message queues a card run.",
    )
    parser.add_argument("--config", type=Path, required=True, help="the bot's TOML settings")
    args = parser.parse_args(argv)
    from loopkit.cards import ConfigError
    from loopkit_board.slack.config import BotConfigError

    try:
        return asyncio.run(_serve(args.config))
    except (BotConfigError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
