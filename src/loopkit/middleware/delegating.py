"""``DelegatingChatClient``: the base of every middleware (M.E.AI's ``DelegatingChatClient``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # annotations only: subclassing this class loads no pydantic model
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
    )
    from loopkit.abstractions.content import ChatMessage

_T = TypeVar("_T")


class DelegatingChatClient:
    """Forwards every call to ``inner``. Subclasses override what they change.

    Middleware composes by wrapping, never by inheritance between middlewares: each one holds the
    next client in ``inner`` and knows nothing else about the chain.
    """

    def __init__(self, inner: ChatClient) -> None:
        self.inner = inner

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self.inner.get_response(messages, options)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return self.inner.get_streaming_response(messages, options)

    def find(self, kind: type[_T]) -> _T | None:
        """The first client of type ``kind`` in this chain (self included), or None."""
        client: object = self
        while client is not None:
            if isinstance(client, kind):
                return client
            client = getattr(client, "inner", None)
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
