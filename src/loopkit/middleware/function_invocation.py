"""The function-invocation loop (M.E.AI's ``FunctionInvokingChatClient``).

One request in, many rounds below: while the model answers with function calls, the loop invokes
them, appends the call/result pairs to the conversation and asks again, until the model answers
with text or the round limit is reached (then one last request with tools disabled lets it write
its final answer).

What a run accumulates lives in its :class:`~loopkit.run_context.RunContext`, not on the loop:
the loop counts the run's rounds, tool calls and usage there, and hands each complete step (the
assistant's calls with the tool message answering them, or the final answer) to
:meth:`RunContext.messages_added <loopkit.run_context.RunContext.messages_added>` so a session
stores whole steps as they happen. An agent opens the run; called without one (a bare
``ChatClientBuilder`` pipeline), the loop opens one per request itself.

Importing this module loads neither pydantic nor asyncio: the message types are imported where
a request uses them (once a request, not once a round), so that naming the loop costs a program
nothing until it runs one.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from loopkit.abstractions.tools import ToolError
from loopkit.errors import MaxConsecutiveErrorsError, describe_error
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.run_context import RunContext, closing, current_run, run_scope, stream_in_run

if TYPE_CHECKING:
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
    )
    from loopkit.abstractions.content import (
        ChatMessage,
        Content,
        FunctionCallContent,
        UsageDetails,
    )
    from loopkit.abstractions.tools import Tool

DEFAULT_MAX_RESULT_CHARS = 4000

#: What one tool call gave: the text the model reads, whether it is an error, and the exception
#: the tool raised (None when it returned, or for a refusal the loop wrote itself).
_Outcome = tuple[str, bool, Exception | None]


#: Decides whether one tool call may run: ``approver(call) -> bool`` (or an awaitable of it).
#: A plain (sync) function runs in a worker thread, so one that waits for a person never blocks
#: the event loop. (A string: the call's type is a pydantic model, loaded on first use.)
Approver: TypeAlias = "Callable[[FunctionCallContent], bool | Awaitable[bool]]"


@dataclass(slots=True)
class FunctionInvocationOptions:
    """Settings of the loop; defaults follow Microsoft.Extensions.AI."""

    #: Model requests (rounds) per run before the loop stops invoking tools. A bare pipeline's
    #: run is one ``get_response`` call; an agent's run spans its output retries too.
    max_rounds: int = 40
    #: Rounds in a row in which a tool raised; one more and the run ends with
    #: :class:`~loopkit.errors.MaxConsecutiveErrorsError` (the last exception as its cause).
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

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        """Called after each tool call the loop made (in the run's task)."""
        ...


def tool_result_to_text(value: Any) -> str:
    """Plain text for a tool's return value: strings as they are, data as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return f"(binary result, {len(value)} bytes, not shown)"
    if isinstance(value, dict | list | tuple | int | float | bool):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    from pydantic import BaseModel  # loaded already: a run's messages are pydantic models

    if isinstance(value, BaseModel):
        return value.model_dump_json()
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


def _usage_between(before: UsageDetails, after: UsageDetails) -> UsageDetails:
    """What was added to a run's usage between two readings."""
    from loopkit.abstractions.content import UsageDetails

    return UsageDetails(
        input_tokens=after.input_tokens - before.input_tokens,
        output_tokens=after.output_tokens - before.output_tokens,
        cached_input_tokens=after.cached_input_tokens - before.cached_input_tokens,
        cache_creation_input_tokens=after.cache_creation_input_tokens
        - before.cache_creation_input_tokens,
    )


class FunctionInvokingChatClient(DelegatingChatClient):
    """Invokes the tools the model calls, round after round, until it answers with text.

    Each request runs in the current :class:`~loopkit.run_context.RunContext` (an agent's run),
    or, when there is none or it is served by another loop, in a run the loop opens for that
    request alone (``implicit``, a child of the current run if any): it starts the run's
    :class:`~loopkit.run_context.RunAware` middleware and emits ``run_end`` when done.
    """

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

    def _own_run(self, current: RunContext | None) -> RunContext:
        """A run for one request of a bare pipeline (a child of ``current`` when inside one)."""
        if current is not None:
            current.child_runs += 1
        run = RunContext(parent=current, implicit=True)
        run.claim(self)
        return run

    # -- one response ----------------------------------------------------------------------------
    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Ask, invoke the tools called, ask again, ... until the model answers with text;
        returns every message the rounds added, with their summed usage."""
        run = current_run()
        if run is not None and run.claim(self):
            return await self._respond(run, messages, options)
        run = self._own_run(run)
        with run_scope(run):
            run.start_middleware(self)
            try:
                response = await self._respond(run, messages, options)
            except BaseException as e:
                run.emit("run_end", status="error", error=describe_error(e))
                raise
            run.emit("run_end", status="ok", error=None)
            return response

    async def _respond(
        self, run: RunContext, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> ChatResponse:

        opts = self.options
        inner = self.inner
        conversation = list(messages)
        added: list[ChatMessage] = []
        tools = {t.name: t for t in options.tools} if options else {}
        usage_before = run.usage
        reported = False
        rounds = error_rounds = 0
        response: ChatResponse | None = None
        while True:
            if run.rounds >= opts.max_rounds:
                return await self._final_request(
                    run, conversation, options, response, added, usage_before, reported, rounds
                )
            rounds += 1
            run.rounds += 1
            response = await inner.get_response(conversation, options)
            if response.usage is not None:
                reported = True
                run.usage = run.usage + response.usage
            new = response.messages
            conversation.extend(new)
            added.extend(new)
            calls = response.function_calls
            if not calls or not tools:
                if not calls:  # a final answer is a whole step; unanswered calls are not
                    await run.messages_added(new)
                return self._finish(response, added, run, usage_before, reported, rounds)
            if opts.terminate_on_unknown_calls:
                unknown = [c.name for c in calls if c.name not in tools]
                if unknown:
                    result = self._finish(response, added, run, usage_before, reported, rounds)
                    result.additional_properties["unknown_tools"] = unknown
                    return result
            run.tool_calls += len(calls)
            results = await self._invoke_all(calls, tools, run.rounds)
            error_rounds = self._count_errors(calls, results, error_rounds, run.rounds)
            tool_message = _tool_message(calls, results)
            conversation.append(tool_message)
            added.append(tool_message)
            await run.messages_added([*new, tool_message])

    async def _final_request(
        self,
        run: RunContext,
        conversation: list[ChatMessage],
        options: ChatOptions | None,
        last: ChatResponse | None,
        added: list[ChatMessage],
        usage_before: UsageDetails,
        reported: bool,
        rounds: int,
    ) -> ChatResponse:
        from loopkit.abstractions.chat import ChatResponse, ToolMode
        from loopkit.abstractions.content import FunctionCallContent

        if not self.options.final_request_without_tools or options is None:
            # Rounds ran out (in this request, or before it in the run): answer with what is.
            result = self._finish(
                last or ChatResponse(), added, run, usage_before, reported, rounds
            )
            result.additional_properties["max_rounds_reached"] = True
            return result
        # Tools stay listed with tool_mode "none": removing them would invalidate a provider's
        # prompt cache, and litellm would add a dummy tool for Anthropic histories with calls.
        no_tools = options.copy(tool_mode=ToolMode.none())
        run.rounds += 1
        response = await self.inner.get_response(conversation, no_tools)
        if response.usage is not None:
            reported = True
            run.usage = run.usage + response.usage
        # Calls in this answer cannot be answered any more; keep the history consistent.
        for m in response.messages:
            m.contents = [c for c in m.contents if not isinstance(c, FunctionCallContent)]
        added.extend(response.messages)
        await run.messages_added(response.messages)
        result = self._finish(response, added, run, usage_before, reported, rounds + 1)
        result.additional_properties["max_rounds_reached"] = True
        return result

    @staticmethod
    def _finish(
        response: ChatResponse,
        added: list[ChatMessage],
        run: RunContext,
        usage_before: UsageDetails,
        reported: bool,
        rounds: int,
    ) -> ChatResponse:
        from loopkit.abstractions.chat import ChatResponse

        return ChatResponse(
            messages=added,
            usage=_usage_between(usage_before, run.usage) if reported else None,
            finish_reason=response.finish_reason,
            model_id=response.model_id,
            response_id=response.response_id,
            additional_properties={**response.additional_properties, "rounds": rounds},
        )

    # -- tools -----------------------------------------------------------------------------------
    def _count_errors(
        self,
        calls: list[FunctionCallContent],
        results: list[_Outcome],
        error_rounds: int,
        round_no: int,
    ) -> int:
        """The rounds in a row with a failing tool, this one included; raises
        :class:`MaxConsecutiveErrorsError` beyond the limit."""
        failed = [(c.name, e) for c, (_, _, e) in zip(calls, results, strict=True) if e is not None]
        if not failed:
            return 0
        error_rounds += 1
        limit = self.options.max_consecutive_errors
        if error_rounds > limit:
            names = [n for n, _ in failed]
            errors = [e for _, e in failed if e is not None]
            shown = "; ".join(
                f"{n}: {describe_error(e)}" for n, e in zip(names, errors, strict=True)
            )
            error = MaxConsecutiveErrorsError(
                f"tools failed in {error_rounds} rounds in a row (max_consecutive_errors="
                f"{limit}); round {round_no}: {shown}",
                tools=names,
                round=round_no,
                errors=errors,
            )
            raise error from errors[-1]
        return error_rounds

    async def _invoke_all(
        self, calls: list[FunctionCallContent], tools: dict[str, Tool], round_no: int
    ) -> list[_Outcome]:
        if self.options.allow_concurrent_invocation and len(calls) > 1:
            import asyncio  # loaded already: this runs in an event loop

            return list(await asyncio.gather(*(self._invoke(c, tools, round_no) for c in calls)))
        return [await self._invoke(c, tools, round_no) for c in calls]

    async def _invoke(
        self, call: FunctionCallContent, tools: dict[str, Tool], round_no: int
    ) -> _Outcome:
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
            except Exception as e:  # not CancelledError (a BaseException): it propagates
                if getattr(e, "terminates_run", False):
                    raise  # e.g. a dead MCP server: retrying through the model cannot help
                error, exception = True, e
                if self.options.include_detailed_errors:
                    # describe_error: an exception whose str() raises must not end the run
                    text = f"Error: the function failed. {describe_error(e)}"
                else:
                    text = "Error: the function failed."
        text = cut_result(text, self.options.max_result_chars)
        ms = (time.perf_counter() - started) * 1000.0
        if self.listeners:
            invocation = ToolInvocation(call, text, error, ms, exception, round_no)
            for listener in self.listeners:
                listener.on_tool_invoked(invocation)
        return text, error, exception

    async def _approved(self, call: FunctionCallContent) -> bool:
        approver = self.options.approver
        assert approver is not None  # checked by FunctionInvocationOptions
        if _is_async_callable(approver):
            decision = approver(call)
        else:
            import asyncio  # loaded already: this runs in an event loop

            # A sync approver may block (a prompt on a terminal, a request to a person): keep it
            # off the event loop so other runs and the UI keep going while it waits.
            decision = await asyncio.to_thread(approver, call)
        if inspect.isawaitable(decision):
            decision = await decision
        return bool(decision)

    # -- streaming -------------------------------------------------------------------------------
    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Streams each round's updates, then the round's tool results as one update with role
        ``tool``, then the next round: the calls come before their results and the results
        before the next round's text. Every update carries the ``message_id`` of the message it
        belongs to, so :func:`~loopkit.abstractions.chat.response_from_updates` gives back the
        same messages as :meth:`get_response`."""
        run = current_run()
        if run is not None and run.claim(self):
            stream = self._stream(run, messages, options)
        else:
            run = self._own_run(run)
            stream = stream_in_run(run, self._stream_own_run(run, messages, options))
        async with closing(stream):
            async for update in stream:
                yield update

    async def _stream_own_run(
        self, run: RunContext, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> AsyncIterator[ChatResponseUpdate]:
        run.start_middleware(self)
        try:
            async with closing(self._stream(run, messages, options)) as stream:
                async for update in stream:
                    yield update
        except GeneratorExit:
            run.emit("run_end", status="error", error="the stream was closed before the end")
            raise
        except BaseException as e:
            run.emit("run_end", status="error", error=describe_error(e))
            raise
        run.emit("run_end", status="ok", error=None)

    async def _stream(
        self, run: RunContext, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> AsyncIterator[ChatResponseUpdate]:
        from loopkit.abstractions.chat import ChatResponseUpdate, ToolMode, response_from_updates
        from loopkit.abstractions.content import (
            ChatRole,
            FunctionCallContent,
        )

        opts = self.options
        conversation = list(messages)
        tools = {t.name: t for t in options.tools} if options else {}
        error_rounds = 0
        while True:
            final = run.rounds >= opts.max_rounds
            if final and not opts.final_request_without_tools:
                return
            run.rounds += 1
            round_no = run.rounds
            message_id = f"{run.run_id}-{round_no}"
            round_options = (
                options.copy(tool_mode=ToolMode.none()) if final and options else options
            )
            updates: list[ChatResponseUpdate] = []
            inner = self.inner.get_streaming_response(conversation, round_options)
            async with closing(inner):
                async for update in inner:
                    if final and any(isinstance(c, FunctionCallContent) for c in update.contents):
                        # Calls in the final answer cannot be answered; never hand them over.
                        kept = [
                            c for c in update.contents if not isinstance(c, FunctionCallContent)
                        ]
                        update = update.model_copy(update={"contents": kept})
                    if update.message_id is None:
                        update.message_id = message_id
                    updates.append(update)
                    yield update
            response = response_from_updates(updates)
            if response.usage is not None:
                run.usage = run.usage + response.usage
            new = response.messages
            conversation.extend(new)
            calls = response.function_calls
            if final or not calls or not tools:
                if not calls:
                    await run.messages_added(new)
                return
            if opts.terminate_on_unknown_calls and any(c.name not in tools for c in calls):
                return
            run.tool_calls += len(calls)
            results = await self._invoke_all(calls, tools, round_no)
            error_rounds = self._count_errors(calls, results, error_rounds, round_no)
            tool_message = _tool_message(calls, results)
            conversation.append(tool_message)
            # Stored before it is handed over: a consumer that stops here leaves whole steps.
            await run.messages_added([*new, tool_message])
            yield ChatResponseUpdate(
                role=ChatRole.TOOL,
                contents=list(tool_message.contents),
                message_id=f"{message_id}-tool",
            )


def _tool_message(calls: list[FunctionCallContent], results: list[_Outcome]) -> ChatMessage:
    """The tool message that answers ``calls``: one result per call, in order."""
    from loopkit.abstractions.content import ChatMessage, ChatRole, FunctionResultContent

    answers: list[Content] = [
        FunctionResultContent(call_id=c.call_id, result=text, error=error)
        for c, (text, error, _) in zip(calls, results, strict=True)
    ]
    return ChatMessage(role=ChatRole.TOOL, contents=answers)


def _is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` gives a coroutine (an ``async def`` function or ``__call__``)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )
