"""The chat-client protocol and the request/response types around it (M.E.AI's ``IChatClient``)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    ContentList,
    FunctionCallContent,
    TextContent,
    UsageContent,
    UsageDetails,
)
from loopkit.abstractions.trusted import trusted

if TYPE_CHECKING:
    from loopkit.abstractions.response_format import ResponseFormat
    from loopkit.abstractions.tools import Tool

ToolModeKind = Literal["auto", "none", "required"]


@dataclass(frozen=True, slots=True)
class ToolMode:
    """How the model may use the tools: ``auto``, ``none``, ``required``, or one named function."""

    kind: ToolModeKind = "auto"
    #: With ``kind="required"``, the one function the model must call (None: any of them).
    function_name: str | None = None

    @classmethod
    def auto(cls) -> ToolMode:
        """The model decides whether to call tools."""
        return cls("auto")

    @classmethod
    def none(cls) -> ToolMode:
        """No tool calls (the tools stay listed)."""
        return cls("none")

    @classmethod
    def required(cls, function_name: str | None = None) -> ToolMode:
        """The model must call a tool (``function_name``: that one)."""
        return cls("required", function_name)


@dataclass(slots=True)
class ChatOptions:
    """Options for one request. Sampling parameters left ``None`` are not sent at all.

    Some models refuse parameters such as ``temperature``; sending only what was set keeps a request
    valid for every model.
    """

    tools: list[Tool] = field(default_factory=list)
    tool_mode: ToolMode | None = None
    model_id: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    allow_multiple_tool_calls: bool | None = None
    #: The shape the answer must have (text, any JSON, a JSON schema); None leaves it to the
    #: model. Providers with structured output send it natively; test doubles ignore it.
    response_format: ResponseFormat | None = None
    #: Provider-specific settings passed through unchanged (the escape hatch).
    additional_properties: dict[str, Any] = field(default_factory=dict)

    def copy(self, **changes: Any) -> ChatOptions:
        """A shallow copy with some fields replaced."""
        return dataclasses.replace(self, **changes)

    def find_tool(self, name: str) -> Tool | None:
        """The tool named ``name`` among :attr:`tools`, or None."""
        for t in self.tools:
            if t.name == name:
                return t
        return None


FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


class ChatResponse(BaseModel):
    """A model's answer: one or more messages (more after a function-invocation loop)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    messages: list[ChatMessage] = Field(default_factory=list)
    usage: UsageDetails | None = None
    finish_reason: FinishReason | None = None
    model_id: str | None = None
    response_id: str | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The text of the last assistant message (what a user reads as "the answer")."""
        for m in reversed(self.messages):
            if m.role == ChatRole.ASSISTANT and m.text:
                return m.text
        return ""

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        """Every function call in the messages, in order."""
        return [c for m in self.messages for c in m.function_calls]


class ChatResponseUpdate(BaseModel):
    """One piece of a streamed response.

    ``message_id`` says which message of the response the piece belongs to: a streamed run of
    the function-invocation loop is several messages (assistant calls, tool results, the next
    assistant turn, ...), and :func:`response_from_updates` starts a new message where the id
    (or the role) changes, so the fold gives back exactly the messages of a non-streamed run.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    role: ChatRole | None = None
    contents: list[Content] = Field(default_factory=list)
    finish_reason: FinishReason | None = None
    model_id: str | None = None
    response_id: str | None = None
    message_id: str | None = None

    @property
    def text(self) -> str:
        """The update's text pieces, joined."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


def response_from_updates(updates: Iterable[ChatResponseUpdate]) -> ChatResponse:
    """Fold streamed updates into one :class:`ChatResponse`.

    A new message starts where an update's ``message_id`` or ``role`` differs from the current
    message's (an update that sets neither continues it); adjacent text pieces of a message are
    joined; usage pieces are summed into ``usage``. A stream with no content gives one empty
    assistant message.
    """
    fold = UpdateFold(updates)
    return ChatResponse(
        messages=fold.messages,
        usage=fold.usage,
        finish_reason=fold.finish_reason,
        model_id=fold.model_id,
        response_id=fold.response_id,
    )


class UpdateFold:
    """What :func:`response_from_updates` reads from updates, without the response object
    around it (the function-invocation loop folds every streamed round this way)."""

    __slots__ = ("finish_reason", "messages", "model_id", "response_id", "usage")

    def __init__(self, updates: Iterable[ChatResponseUpdate]) -> None:
        if type(updates) is list and len(updates) == 1 and self._one(updates[0]):
            return
        messages: list[ChatMessage] = []
        contents: list[Content] = []
        role = ChatRole.ASSISTANT
        message_id: str | None = None
        usage: UsageDetails | None = None
        finish: FinishReason | None = None
        model_id = response_id = None
        for u in updates:
            finish = u.finish_reason or finish
            model_id = u.model_id or model_id
            response_id = u.response_id or response_id
            started = False
            for c in u.contents:
                # Exact type tests: isinstance on a pydantic class goes through ABCMeta.
                if type(c) is UsageContent:
                    usage = c.usage if usage is None else usage + c.usage
                    continue
                if not started:
                    started = True
                    new_role = u.role is not None and u.role != role
                    new_id = u.message_id is not None and message_id not in (None, u.message_id)
                    if (new_role or new_id) and (contents or messages):
                        messages.append(_message(role, contents))
                        contents = []
                        message_id = None
                    if u.role is not None:
                        role = u.role
                    if u.message_id is not None:
                        message_id = u.message_id
                last = contents[-1] if contents else None
                if type(c) is TextContent and type(last) is TextContent:
                    joined = last.text + c.text
                    contents[-1] = trusted(TextContent, {"type": "text", "text": joined})
                else:
                    contents.append(c)
        if contents or not messages:
            messages.append(_message(role, contents))
        self.messages = messages
        self.usage = usage
        self.finish_reason = finish
        self.model_id = model_id
        self.response_id = response_id

    def _one(self, update: ChatResponseUpdate) -> bool:
        """The fold of a stream of one update that holds one whole message (a provider that
        streams whole messages): its contents as they are. False when the general fold is
        needed (usage pieces, texts to join, no contents)."""
        contents = update.contents
        if not contents:
            return False
        text = False
        for c in contents:
            kind = type(c)
            if kind is UsageContent or (text and kind is TextContent):
                return False
            text = kind is TextContent
        self.messages = [_message(update.role or ChatRole.ASSISTANT, contents)]
        self.usage = None
        self.finish_reason = update.finish_reason
        self.model_id = update.model_id
        self.response_id = update.response_id
        return True


def _message(role: ChatRole, contents: list[Content]) -> ChatMessage:
    """A message of contents that were validated as parts of their updates."""
    return trusted(
        ChatMessage, {"role": role, "contents": ContentList(contents), "author_name": None}
    )


@runtime_checkable
class ChatClient(Protocol):
    """What every model provider and every middleware implements.

    ``messages`` is the whole conversation so far; implementations must not modify it.
    """

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Send the conversation and return the model's complete answer."""
        ...

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Send the conversation and yield the answer as it arrives."""
        ...
