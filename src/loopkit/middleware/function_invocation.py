"""The function-invocation loop (M.E.AI's ``FunctionInvokingChatClient``).

One request in, many rounds below: while the model answers with function calls, the loop invokes
them, appends the call/result pairs to the conversation and asks again, until the model answers
with text or the round limit is reached (then one last request with tools disabled lets it write
its final answer).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ToolMode,
    response_from_updates,
)
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    UsageDetails,
)
from loopkit.abstractions.tools import Tool, ToolError
from loopkit.middleware.delegating import DelegatingChatClient

DEFAULT_MAX_RESULT_CHARS = 4000


#: Decides whether one tool call may run: ``approver(call) -> bool`` (or an awaitable of it).
Approver = Callable[[FunctionCallContent], "bool | Awaitable[bool]"]


@dataclass(slots=True)
class FunctionInvocationOptions:
    """Settings of the loop; defaults follow Microsoft.Extensions.AI."""

    #: Model requests (rounds) per ``get_response`` call before the loop stops invoking tools.
    max_rounds: int = 40
    #: Rounds in a row in which a tool raised; one more and the exception propagates.
    max_consecutive_errors: int = 3
    #: Send an exception's message to the model (else only "Error: the function failed.").
    #: :class:`ToolError` messages are always sent: they are written for the model.
    include_detailed_errors: bool = False
    #: On a call to an unknown tool: False answers the model with an error result; True stops the
    #: loop and returns the response with the unanswered call (the caller decides).
    terminate_on_unknown_calls: bool = False
    #: Invoke the calls of one round concurrently (results keep the calls' order).
    allow_concurrent_invocation: bool = False
    #: Results longer than this are cut, with a note saying so (None: never cut).
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    #: After the last round, make one more request with tools disabled so the model can answer.
    final_request_without_tools: bool = True
    #: Tools whose calls need a yes from ``approver`` first (a human in the loop, a policy).
    approval_required: frozenset[str] = frozenset()
    #: Decides a call to a tool in ``approval_required`` (sync or async); False refuses it and
    #: the model is told so. Required when ``approval_required`` is not empty.
    approver: Approver | None = None

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.max_consecutive_errors < 0:
            raise ValueError(
                f"max_consecutive_errors must be >= 0, got {self.max_consecutive_errors}"
            )
        if self.max_result_chars is not None and self.max_result_chars < 100:
            raise ValueError(f"max_result_chars must be >= 100, got {self.max_result_chars}")
        self.approval_required = frozenset(self.approval_required)
        if self.approval_required and self.approver is None:
            raise ValueError(
                "approval_required names tools but no approver is set: pass approver=, a "
                "function (call) -> bool that asks a person or applies a policy"
            )


@dataclass(slots=True)
class ToolInvocation:
    """What happened when one tool call ran (passed to :class:`ToolInvocationListener`\\ s)."""

    call: FunctionCallContent
    result: str
    error: bool
    ms: float
    exception: BaseException | None = None
    round: int = 0


@runtime_checkable
class ToolInvocationListener(Protocol):
    """Implemented by middleware that wants to see each tool call (the run log does).

    The loop finds listeners among the clients below it, so placing such middleware anywhere
    under the loop is enough.
    """

    def on_tool_invoked(self, invocation: ToolInvocation) -> None: ...


def tool_result_to_text(value: Any) -> str:
    """Plain text for a tool's return value: strings as they are, data as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, bytes | bytearray):
        return f"(binary result, {len(value)} bytes, not shown)"
    if isinstance(value, dict | list | tuple | int | float | bool):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return str(value)


def cut_result(text: str, max_chars: int | None) -> str:
    """``text`` cut to ``max_chars`` with a note that says how much was left out and what to do."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return (
        text[:max_chars]
        + f"\n[cut: the result has {len(text)} characters, only the first {max_chars} are shown."
        " Ask for less, for example one folder, one window or one element.]"
    )


@dataclass(slots=True)
class _RunState:
    round: int = 0
    consecutive_error_rounds: int = 0
    usage: UsageDetails | None = None
    added: list[ChatMessage] = field(default_factory=list)


class FunctionInvokingChatClient(DelegatingChatClient):
    """Invokes the tools the model calls, round after round, until it answers with text."""

    def __init__(self, inner: ChatClient, options: FunctionInvocationOptions | None = None) -> None:
        super().__init__(inner)
        self.options = options or FunctionInvocationOptions()
        self._listeners: list[ToolInvocationListener] | None = None

    @property
    def listeners(self) -> list[ToolInvocationListener]:
        """Middleware below this loop that wants to hear about tool calls."""
        if self._listeners is None:
            found: list[ToolInvocationListener] = []
            client: object = self.inner
            while client is not None:
                if isinstance(client, ToolInvocationListener):
                    found.append(client)
                client = getattr(client, "inner", None)
            self._listeners = found
        return self._listeners

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        opts = self.options
        conversation = list(messages)
        state = _RunState()
        tools = {t.name: t for t in options.tools} if options else {}
        response: ChatResponse | None = None
        while True:
            if state.round >= opts.max_rounds:
                return await self._final_request(conversation, options, state, response)
            state.round += 1
            response = await self.inner.get_response(conversation, options)
            self._add_usage(state, response.usage)
            calls = response.function_calls
            conversation.extend(response.messages)
            state.added.extend(response.messages)
            if not calls or not tools:
                return self._finish(response, state)
            if opts.terminate_on_unknown_calls:
                unknown = [c.name for c in calls if c.name not in tools]
                if unknown:
                    result = self._finish(response, state)
                    result.additional_properties["unknown_tools"] = unknown
                    return result
            results = await self._invoke_all(calls, tools, state)
            tool_message = ChatMessage(role=ChatRole.TOOL, contents=list(results))
            conversation.append(tool_message)
            state.added.append(tool_message)

    async def _final_request(
        self,
        conversation: list[ChatMessage],
        options: ChatOptions | None,
        state: _RunState,
        last: ChatResponse | None,
    ) -> ChatResponse:
        if not self.options.final_request_without_tools or options is None:
            assert last is not None
            result = self._finish(last, state)
            result.additional_properties["max_rounds_reached"] = True
            return result
        # Tools stay listed with tool_mode "none": removing them would invalidate a provider's
        # prompt cache, and litellm would add a dummy tool for Anthropic histories with calls.
        no_tools = options.copy(tool_mode=ToolMode.none())
        response = await self.inner.get_response(conversation, no_tools)
        self._add_usage(state, response.usage)
        # Calls in this answer cannot be answered any more; keep the history consistent.
        for m in response.messages:
            m.contents = [c for c in m.contents if not isinstance(c, FunctionCallContent)]
        state.added.extend(response.messages)
        result = self._finish(response, state)
        result.additional_properties["max_rounds_reached"] = True
        return result

    @staticmethod
    def _add_usage(state: _RunState, usage: UsageDetails | None) -> None:
        if usage is not None:
            state.usage = usage if state.usage is None else state.usage + usage

    @staticmethod
    def _finish(response: ChatResponse, state: _RunState) -> ChatResponse:
        return ChatResponse(
            messages=state.added,
            usage=state.usage,
            finish_reason=response.finish_reason,
            model_id=response.model_id,
            response_id=response.response_id,
            additional_properties={**response.additional_properties, "rounds": state.round},
        )

    async def _invoke_all(
        self, calls: list[FunctionCallContent], tools: dict[str, Tool], state: _RunState
    ) -> list[FunctionResultContent]:
        if self.options.allow_concurrent_invocation and len(calls) > 1:
            outcomes = await asyncio.gather(*(self._invoke(c, tools, state) for c in calls))
        else:
            outcomes = [await self._invoke(c, tools, state) for c in calls]
        errors = [exc for _, exc in outcomes if exc is not None]
        if errors:
            state.consecutive_error_rounds += 1
            if state.consecutive_error_rounds > self.options.max_consecutive_errors:
                if len(errors) == 1:
                    raise errors[0]
                raise ExceptionGroup("tools failed in too many rounds in a row", errors)
        else:
            state.consecutive_error_rounds = 0
        return [r for r, _ in outcomes]

    async def _invoke(
        self, call: FunctionCallContent, tools: dict[str, Tool], state: _RunState
    ) -> tuple[FunctionResultContent, Exception | None]:
        started = time.perf_counter()
        exception: Exception | None = None
        error = False
        target = tools.get(call.name)
        if target is None:
            error = True
            text = (
                f'Error: there is no tool named "{call.name}". '
                f"Available tools: {', '.join(sorted(tools))}."
            )
        elif call.arguments_error is not None:
            error = True
            exception = ToolError(call.arguments_error)
            text = f"Error: {call.arguments_error}"
        elif call.name in self.options.approval_required and not await self._approved(call):
            # A refusal is an answer, not a failure: it does not count as a consecutive error.
            error = True
            text = (
                f"Error: the call to {call.name} was not approved. Do not retry it unchanged; "
                "continue without it or explain in your answer why it is needed."
            )
        else:
            try:
                text = tool_result_to_text(await target.invoke(call.arguments))
            except ToolError as e:
                error, exception = True, e
                text = f"Error: {e}"
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if getattr(e, "terminates_run", False):
                    raise  # e.g. a dead MCP server: retrying through the model cannot help
                error, exception = True, e
                if self.options.include_detailed_errors:
                    text = f"Error: the function failed. {type(e).__name__}: {e}"
                else:
                    text = "Error: the function failed."
        text = cut_result(text, self.options.max_result_chars)
        ms = (time.perf_counter() - started) * 1000.0
        if self.listeners:
            invocation = ToolInvocation(call, text, error, ms, exception, state.round)
            for listener in self.listeners:
                listener.on_tool_invoked(invocation)
        return FunctionResultContent(call_id=call.call_id, result=text, error=error), exception

    async def _approved(self, call: FunctionCallContent) -> bool:
        approver = self.options.approver
        assert approver is not None  # checked by FunctionInvocationOptions
        decision = approver(call)
        if inspect.isawaitable(decision):
            decision = await decision
        return bool(decision)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Streams each round's updates; tool results are yielded as updates with role ``tool``."""
        opts = self.options
        conversation = list(messages)
        state = _RunState()
        tools = {t.name: t for t in options.tools} if options else {}
        while True:
            final = state.round >= opts.max_rounds
            if final and not opts.final_request_without_tools:
                return
            state.round += 1
            round_options = (
                options.copy(tool_mode=ToolMode.none()) if final and options else options
            )
            updates: list[ChatResponseUpdate] = []
            async for update in self.inner.get_streaming_response(conversation, round_options):
                updates.append(update)
                yield update
            response = response_from_updates(updates)
            conversation.extend(response.messages)
            calls = response.function_calls
            if final or not calls or not tools:
                return
            if opts.terminate_on_unknown_calls and any(c.name not in tools for c in calls):
                return
            results = await self._invoke_all(calls, tools, state)
            conversation.append(ChatMessage(role=ChatRole.TOOL, contents=list(results)))
            yield ChatResponseUpdate(role=ChatRole.TOOL, contents=list(results))
