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
    FunctionCallContent,
    TextContent,
    UsageContent,
    UsageDetails,
)

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
            if isinstance(c, UsageContent):
                usage = c.usage if usage is None else usage + c.usage
                continue
            if not started:
                started = True
                new_role = u.role is not None and u.role != role
                new_id = u.message_id is not None and message_id not in (None, u.message_id)
                if (new_role or new_id) and (contents or messages):
                    messages.append(ChatMessage(role=role, contents=contents))
                    contents = []
                    message_id = None
                if u.role is not None:
                    role = u.role
                if u.message_id is not None:
                    message_id = u.message_id
            if isinstance(c, TextContent) and contents and isinstance(contents[-1], TextContent):
                contents[-1] = TextContent(text=contents[-1].text + c.text)
            else:
                contents.append(c)
    if contents or not messages:
        messages.append(ChatMessage(role=role, contents=contents))
    return ChatResponse(
        messages=messages,
        usage=usage,
        finish_reason=finish,
        model_id=model_id,
        response_id=response_id,
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
