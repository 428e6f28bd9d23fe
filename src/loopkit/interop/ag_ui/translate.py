"""loopkit's run events as AG-UI events, and AG-UI messages as loopkit messages.

Every AG-UI shape comes from the official ``ag-ui-protocol`` package (``ag_ui.core``); nothing
here writes the protocol's JSON by hand.

One assistant message a round: its id is ``{run_id}-{round}``, carried by the round's
``TEXT_MESSAGE_*`` events and, as ``parentMessageId``, by its ``TOOL_CALL_*`` events, so a client
folds the text and the calls of a round into one message, as the model wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UsageDetails,
)
from loopkit.agents.events import (
    AgentEvent,
    FinalResult,
    RoundFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
)

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, Message, TokenUsage

__all__ = ["EventTranslator", "content_text", "from_ag_ui_messages", "token_usage"]


class EventTranslator:
    """Turns one run's :data:`~loopkit.agents.AgentEvent`\\ s into AG-UI events.

    ``frontend`` names the tools the client runs itself: their results come from the client,
    so no ``TOOL_CALL_RESULT`` is sent for them. The translator also keeps the round in
    progress as a loopkit message (:attr:`round_message`): what the model said, so a run that
    pauses in that round can be taken up again from it.
    """

    def __init__(self, run_id: str, frontend: frozenset[str] = frozenset()) -> None:
        from ag_ui import core

        self._core = core
        self.run_id = run_id
        self.frontend = frontend
        self._text_open: str | None = None
        self._round = 0
        self._round_text: list[str] = []
        self._round_calls: list[FunctionCallContent] = []
        #: Calls of the current round the client must answer (frontend tools), by id.
        self.open_frontend_calls: list[str] = []

    def message_id(self, round_no: int) -> str:
        """The id of the assistant message of round ``round_no``."""
        return f"{self.run_id}-{round_no}"

    @property
    def round_message(self) -> ChatMessage:
        """The assistant message of the round in progress (its text and calls so far)."""
        contents: list[Content] = []
        if self._round_text:
            contents.append(TextContent(text="".join(self._round_text)))
        contents.extend(self._round_calls)
        return ChatMessage(role=ChatRole.ASSISTANT, contents=contents)

    def restore(self, step: ChatMessage) -> None:
        """Take up a round that paused in an earlier process: ``step`` is what the model said
        (no events are sent for it: the client has them)."""
        self._round = -1
        self._round_text = [step.text] if step.text else []
        self._round_calls = list(step.function_calls)
        self.open_frontend_calls = [c.call_id for c in self._round_calls if c.name in self.frontend]

    def _new_round(self, round_no: int) -> None:
        if round_no != self._round:
            self._round = round_no
            self._round_text = []
            self._round_calls = []
            self.open_frontend_calls = []

    def close_text(self) -> list[BaseEvent]:
        """``TEXT_MESSAGE_END`` for the text message in progress, if any."""
        if self._text_open is None:
            return []
        event = self._core.TextMessageEndEvent(message_id=self._text_open)
        self._text_open = None
        return [event]

    def feed(self, event: AgentEvent[Any]) -> list[BaseEvent]:
        """The AG-UI events ``event`` stands for (none, one or a few)."""
        core = self._core
        if isinstance(event, TextDelta):
            self._new_round(event.round)
            self._round_text.append(event.text)
            out: list[BaseEvent] = []
            if self._text_open is None:
                self._text_open = self.message_id(event.round)
                out.append(core.TextMessageStartEvent(message_id=self._text_open, role="assistant"))
            out.append(core.TextMessageContentEvent(message_id=self._text_open, delta=event.text))
            return out
        if isinstance(event, ToolCallStarted):
            self._new_round(event.round)
            call = event.call
            self._round_calls.append(call)
            if call.name in self.frontend:
                self.open_frontend_calls.append(call.call_id)
            return [
                *self.close_text(),
                core.ToolCallStartEvent(
                    tool_call_id=call.call_id,
                    tool_call_name=call.name,
                    parent_message_id=self.message_id(event.round),
                ),
                core.ToolCallArgsEvent(
                    tool_call_id=call.call_id,
                    delta=json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":")),
                ),
                core.ToolCallEndEvent(tool_call_id=call.call_id),
            ]
        if isinstance(event, ToolResultReceived):
            if event.name in self.frontend:
                return []  # the client ran it and holds its result
            return [
                *self.close_text(),
                core.ToolCallResultEvent(
                    message_id=f"{event.result.call_id}-result",
                    tool_call_id=event.result.call_id,
                    content=event.result.result,
                    role="tool",
                ),
            ]
        if isinstance(event, RoundFinished | FinalResult):
            return self.close_text()
        return []


def token_usage(usage: UsageDetails, model: str | None) -> list[TokenUsage]:
    """A run's usage as AG-UI's ``usage`` entries (one: loopkit counts a run's usage as one)."""
    from ag_ui.core import TokenUsage

    if not (usage.input_tokens or usage.output_tokens):
        return []
    return [
        TokenUsage(
            model=model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens or None,
        )
    ]


def content_text(content: Any, where: str) -> str:
    """The text of an AG-UI message's content: a string, or a list of parts of which only the
    text parts are read."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    texts: list[str] = []
    for part in content:
        kind = getattr(part, "type", None)
        if kind != "text":
            raise ValueError(
                f"{where}: a {kind!r} part; this server reads text parts only (send the "
                "content as text)"
            )
        texts.append(part.text)
    return "\n".join(texts)


def from_ag_ui_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """AG-UI messages as loopkit messages: user, assistant (text and tool calls) and tool
    messages; system and developer messages become system messages; activity and reasoning
    messages (the client's display) are left out. Raises ValueError naming a message loopkit
    cannot read (a media part, tool-call arguments that are not a JSON object)."""
    from ag_ui.core import (
        AssistantMessage,
        DeveloperMessage,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )

    out: list[ChatMessage] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}] ({message.role} {message.id!r})"
        if isinstance(message, UserMessage | SystemMessage | DeveloperMessage):
            text = content_text(message.content, where)
            role = ChatRole.USER if isinstance(message, UserMessage) else ChatRole.SYSTEM
            out.append(ChatMessage.from_text(role, text))
        elif isinstance(message, AssistantMessage):
            contents: list[Content] = []
            if message.content:
                contents.append(TextContent(text=message.content))
            for call in message.tool_calls or []:
                contents.append(
                    FunctionCallContent(
                        call_id=call.id,
                        name=call.function.name,
                        arguments=_arguments(call.function.arguments, where),
                    )
                )
            out.append(ChatMessage(role=ChatRole.ASSISTANT, contents=contents))
        elif isinstance(message, ToolMessage):
            result = FunctionResultContent(
                call_id=message.tool_call_id,
                result=content_text(message.content, where),
                error=message.error is not None,
            )
            if out and out[-1].role == ChatRole.TOOL:
                out[-1].contents.append(result)  # one tool message answers a round's calls
            else:
                out.append(ChatMessage(role=ChatRole.TOOL, contents=[result]))
    return out


def _arguments(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: tool-call arguments are not JSON ({e.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: tool-call arguments must be a JSON object")
    return value
