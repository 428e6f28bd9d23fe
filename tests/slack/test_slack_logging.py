"""The bot's log never shows a token: messages, arguments and tracebacks go through the
redacting filter the command line puts on its handler."""

from __future__ import annotations

import io
import logging

from loopkit_board.slack.__main__ import _RedactingFilter
from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN


def test_tokens_are_redacted_in_messages_arguments_and_tracebacks() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(_RedactingFilter([BOT_TOKEN, APP_TOKEN]))
    logger = logging.getLogger("tests.slack.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("token %s in an argument", BOT_TOKEN)
        logger.warning(f"and {APP_TOKEN} in the message")
        try:
            raise RuntimeError(f"failed with {BOT_TOKEN}")
        except RuntimeError:
            logger.exception("a traceback")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert BOT_TOKEN not in text and APP_TOKEN not in text
    assert text.count("[redacted]") >= 3 and "RuntimeError: failed with" in text
