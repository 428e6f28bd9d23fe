"""Model requests and tool calls as checkpoints: :class:`DurableChatClient`, :class:`DurableTool`.

Inside a durable workflow (see :mod:`loopkit.durable.run`) each model request of a
``DurableChatClient`` and each call of a ``DurableTool`` is a DBOS step: it runs once, its result
is recorded, and a resumed run gets the recorded result back instead of asking the model or
running the tool again. Outside a workflow both simply pass through.

Results are recorded as JSON made by pydantic (the :class:`~loopkit.abstractions.chat.ChatResponse`
as it is; the tool's result as the text the loop would make of it, or the failure it raised), and
both a first execution and a replay continue with what was read back, so the conversation a
resumed run rebuilds is the one the model saw. A model checkpoint also records how many messages
were sent: a replay that sends a different number took another path, and is stopped
(:class:`~loopkit.durable.errors.DurableReplayError`).

Put the client right around the model (below the agent's token budget and the run log, above
retries: one checkpoint per request, its retries inside it): ``Agent(DurableChatClient(model),
tools=durable_tools([...]))``. Streaming inside a workflow is buffered per request (the step
consumes the stream).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    response_from_updates,
)
from loopkit.abstractions.content import ChatMessage, ChatRole, UsageContent
from loopkit.abstractions.tools import Tool, ToolError
from loopkit.durable.errors import DurableReplayError
from loopkit.durable.run import DurableRun, checkpoint, current_durable_run
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import tool_result_to_text
from loopkit.run_context import RunContext, current_run

__all__ = [
    "MODEL_STEP",
    "TOOL_STEP_PREFIX",
    "DurableChatClient",
    "DurableTool",
    "ModelCheckpoint",
    "ToolCheckpoint",
    "durable_tools",
]

#: The name of a model request's checkpoint.
MODEL_STEP = "loopkit.model"
#: A tool call's checkpoint is named this plus the tool's name.
TOOL_STEP_PREFIX = "loopkit.tool."


class ModelCheckpoint(BaseModel):
    """What a model request records."""

    model_config = ConfigDict(extra="forbid")

    #: Messages the loop sent (the resume notices it did not write are not counted).
    sent: int
    #: The resume notice inserted after those messages in this request, if any.
    notice: str | None = None
    response: ChatResponse


class RecordedFailure(BaseModel):
    """A tool call that failed, as recorded: enough to fail the same way on replay."""

    model_config = ConfigDict(extra="forbid")

    #: ``tool_error``: a :class:`~loopkit.abstractions.tools.ToolError` (its message is for the
    #: model); ``exception``: anything else.
    kind: Literal["tool_error", "exception"]
    type: str
    message: str
    #: The exception asked to end the run (e.g. a dead MCP server), not to be retried.
    terminates_run: bool = False


class ToolCheckpoint(BaseModel):
    """What a tool call records: the result as text, or the failure."""

    model_config = ConfigDict(extra="forbid")

    result: str | None = None
    failure: RecordedFailure | None = None


class ReplayedToolException(Exception):
    """A tool's exception read back from its checkpoint. Each recorded exception type gets a
    subclass of the same name, so the text the model reads (the type and the message) is the
    one it read before."""

    terminates_run = False


_REPLAYED_TYPES: dict[str, type[ReplayedToolException]] = {}


def _replayed(failure: RecordedFailure) -> Exception:
    if failure.kind == "tool_error":
        return ToolError(failure.message)
    cls = _REPLAYED_TYPES.get(failure.type)
    if cls is None:
        cls = type(failure.type, (ReplayedToolException,), {"__module__": __name__})
        _REPLAYED_TYPES[failure.type] = cls
    error = cls(failure.message)
    error.terminates_run = failure.terminates_run
    return error


def _message_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        # No message: failure_text reads an unreadable one as none, so the stand-in (whose
        # message is "") gives the model the text it read when the tool ran.
        return ""


class _Notices:
    """Resume notices of one agent run: (position in the loop's conversation, message)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: list[tuple[int, ChatMessage]] = []

    def insert(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        if not self.at:
            return list(messages)
        out: list[ChatMessage] = []
        start = 0
        for position, message in self.at:
            out.extend(messages[start:position])
            out.append(message)
            start = position
        out.extend(messages[start:])
        return out


class DurableChatClient(DelegatingChatClient):
    """Makes each model request a checkpoint inside a durable workflow (a pass-through outside
    one). See the module docstring."""

    def __init__(self, inner: ChatClient, *, step_name: str = MODEL_STEP) -> None:
        super().__init__(inner)
        self.step_name = step_name

    def on_run_start(self, run: RunContext) -> None:
        """An agent run inside a durable workflow takes the workflow's id as its run id."""
        durable = current_durable_run()
        if durable is not None:
            durable.adopt(run)

    def _notices(self, durable: DurableRun) -> _Notices:
        run = current_run()
        if run is not None:
            return run.state_for(self, _Notices)
        # A bare request outside any run: the notices live as long as the workflow does.
        notices: _Notices = durable.bare_state.setdefault(id(self), _Notices())
        return notices

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        durable = current_durable_run()
        if durable is None:
            return await self.inner.get_response(messages, options)
        return await self._checkpointed(durable, messages, options, stream=False)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        durable = current_durable_run()
        if durable is None:
            async for update in self.inner.get_streaming_response(messages, options):
                yield update
            return
        response = await self._checkpointed(durable, messages, options, stream=True)
        for message in response.messages:
            yield ChatResponseUpdate(role=message.role, contents=list(message.contents))
        yield ChatResponseUpdate(
            contents=[UsageContent(usage=response.usage)] if response.usage else [],
            finish_reason=response.finish_reason,
            model_id=response.model_id,
            response_id=response.response_id,
        )

    async def _checkpointed(
        self,
        durable: DurableRun,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        *,
        stream: bool,
    ) -> ChatResponse:
        notices = self._notices(durable)
        sent = len(messages)
        inner = self.inner

        async def request() -> str:
            durable.go_live()
            notice = durable.take_notice()
            outgoing = notices.insert(messages)
            if notice is not None:
                outgoing.append(ChatMessage.from_text(ChatRole.USER, notice))
            if stream:
                updates = [u async for u in inner.get_streaming_response(outgoing, options)]
                response = response_from_updates(updates)
            else:
                response = await inner.get_response(outgoing, options)
            return ModelCheckpoint(sent=sent, notice=notice, response=response).model_dump_json()

        text, ran = await checkpoint(self.step_name, request)
        recorded = ModelCheckpoint.model_validate_json(text)
        if not ran:
            durable.note_replayed("model")
            if recorded.sent != sent:
                raise DurableReplayError(
                    f"run {durable.workflow_id}: the model request at this point sent "
                    f"{recorded.sent} messages when it was recorded and {sent} now; the run "
                    "took another path than the one its checkpoints recorded (did the code, "
                    "the card or the settings change?)"
                )
        if recorded.notice is not None:
            notices.at.append((sent, ChatMessage.from_text(ChatRole.USER, recorded.notice)))
        return recorded.response


class DurableTool:
    """A :class:`~loopkit.abstractions.tools.Tool` whose calls are checkpoints inside a durable
    workflow (it passes through outside one). The checkpoint is named after the tool
    (``loopkit.tool.<name>``)."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        self.step_name = TOOL_STEP_PREFIX + tool.name

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    @property
    def parameters(self) -> dict[str, Any]:
        return self.tool.parameters

    def __repr__(self) -> str:
        return f"DurableTool({self.tool!r})"

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        durable = current_durable_run()
        if durable is None:
            return await self.tool.invoke(arguments)
        tool = self.tool
        raised: list[Exception] = []

        async def call() -> str:
            durable.go_live()
            try:
                value = await tool.invoke(arguments)
            except asyncio.CancelledError:
                raise  # interrupted: nothing is recorded, the call runs again on resume
            except ToolError as e:
                raised.append(e)
                failure = RecordedFailure(
                    kind="tool_error", type=type(e).__name__, message=_message_of(e)
                )
                return ToolCheckpoint(failure=failure).model_dump_json()
            except Exception as e:
                raised.append(e)
                failure = RecordedFailure(
                    kind="exception",
                    type=type(e).__name__,
                    message=_message_of(e),
                    terminates_run=bool(getattr(e, "terminates_run", False)),
                )
                return ToolCheckpoint(failure=failure).model_dump_json()
            return ToolCheckpoint(result=tool_result_to_text(value)).model_dump_json()

        text, ran = await checkpoint(self.step_name, call)
        if not ran:
            durable.note_replayed("tool")
        recorded = ToolCheckpoint.model_validate_json(text)
        if recorded.failure is not None:
            # The exception itself when it was raised now (its traceback); its stand-in on replay.
            raise raised[0] if raised else _replayed(recorded.failure)
        return recorded.result


def durable_tools(tools: Iterable[Tool]) -> list[Tool]:
    """Each tool as a :class:`DurableTool` (a tool already durable is kept as it is)."""
    return [t if isinstance(t, DurableTool) else DurableTool(t) for t in tools]
