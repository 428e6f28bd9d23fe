"""Token estimates for requests, without a tokenizer: about four characters a token.

Exact counts need the provider's tokenizer, which differs per model and may need the network.
:func:`estimate_tokens` is cheap and additive (a conversation costs the sum of its messages), and
middleware that needs real figures calibrates it with the input tokens the provider reported for
the previous request (:class:`~loopkit.middleware.compaction.CompactionChatClient` does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol

from loopkit.abstractions.chat import ChatOptions
from loopkit.abstractions.content import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)

__all__ = ["CHARS_PER_TOKEN", "MESSAGE_OVERHEAD", "TokenEstimator", "estimate_tokens"]

CHARS_PER_TOKEN = 4
#: Tokens a message costs beyond its text (role, separators), as chat formats add them.
MESSAGE_OVERHEAD = 4
#: An image or file costs tokens by its pixels or pages, not its bytes; a flat guess.
_DATA_TOKENS = 1000


class TokenEstimator(Protocol):
    """Estimates the input tokens of ``messages`` (plus the tool schemas in ``options``).

    Called with one message at a time and with ``([], options)`` for the tools, so it must be
    roughly additive. The default is :func:`estimate_tokens`; pass e.g. a wrapper around a real
    tokenizer for exact figures.
    """

    def __call__(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None, /
    ) -> int: ...


def estimate_tokens(messages: Sequence[ChatMessage], options: ChatOptions | None = None, /) -> int:
    """About four characters a token over texts, call arguments, results and tool schemas, plus
    a few tokens per message and a flat 1,000 per image or file."""
    chars = 0
    tokens = 0
    for message in messages:
        tokens += MESSAGE_OVERHEAD
        for c in message.contents:
            if isinstance(c, TextContent):
                chars += len(c.text)
            elif isinstance(c, FunctionResultContent):
                chars += len(c.result) + len(c.call_id)
            elif isinstance(c, FunctionCallContent):
                chars += len(c.name) + len(c.call_id) + len(_json(c.arguments))
            elif isinstance(c, DataContent):
                tokens += _DATA_TOKENS
    if options is not None:
        for t in options.tools:
            chars += len(t.name) + len(t.description) + len(_json(t.parameters))
    return tokens + math.ceil(chars / CHARS_PER_TOKEN)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
