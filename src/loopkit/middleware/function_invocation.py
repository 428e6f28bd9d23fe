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
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias, cast, runtime_checkable

from loopkit._checks import check_count, check_tool_names, tool_name_set
from loopkit.abstractions.tools import ToolError
from loopkit.errors import MaxConsecutiveErrorsError, describe_error
from loopkit.middleware.delegating import DelegatingChatClient

# (cut_result and tool_result_to_text were defined here first: still importable from here)
from loopkit.middleware.tool_results import cut_result as cut_result
from loopkit.middleware.tool_results import failure_text, not_approved_text, unknown_tool_text
from loopkit.middleware.tool_results import tool_result_to_text as tool_result_to_text
from loopkit.run_context import RunContext, closing, current_run, run_scope, stream_in_run

if TYPE_CHECKING:
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
        FinishReason,
        UpdateFold,
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
    #: Send an exception's message to the model (else only which tool failed and the
    #: exception's type: ``Error: read_file failed with OSError.``). :class:`ToolError`
    #: messages are always sent: they are written for the model.
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
        check_count("max_rounds", self.max_rounds, 1)
        check_count("max_consecutive_errors", self.max_consecutive_errors, 0)
        check_count("max_result_chars", self.max_result_chars, 100, optional=True)
        self.approval_required = tool_name_set("approval_required", self.approval_required)
        if self.approver is not None and not callable(self.approver):
            raise TypeError(
                "approver must be a function (call) -> bool (or an async one); got "
                f"{type(self.approver).__name__}"
            )
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
        if opts.approval_required and tools:
            _check_approvals(opts, tools)
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
            text = unknown_tool_text(call.name, tools)
        elif call.arguments_error is not None:
            error = True
            exception = ToolError(call.arguments_error)
            text = f"Error: {call.arguments_error}"
        elif call.name in self.options.approval_required and not await self._approved(call):
            # A refusal is an answer, not a failure: it does not count as a consecutive error.
            error = True
            text = not_approved_text(call.name)
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
                text = failure_text(call.name, e, self.options.include_detailed_errors)
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
    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Streams each round's updates, then the round's tool results as one update with role
        ``tool``, then the next round: the calls come before their results and the results
        before the next round's text. Every update carries the ``message_id`` of the message it
        belongs to, so :func:`~loopkit.abstractions.chat.response_from_updates` gives back the
        same messages as :meth:`get_response`."""
        # Without a collector the stream holds updates only (see _stream).
        return cast("AsyncIterator[ChatResponseUpdate]", self._open_stream(messages, options, None))

    def stream_collecting(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        collected: StreamedMessages,
    ) -> AsyncIterator[ChatResponseUpdate | ChatMessage]:
        """:meth:`get_streaming_response` for a caller that needs the messages too (an agent's
        streamed run): the loop appends each round's messages to ``collected`` as it makes
        them, so the caller does not fold the updates a second time, and hands over each
        round's tool message itself in place of the tool update (one object less a round)."""
        return self._open_stream(messages, options, collected)

    def _open_stream(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        collected: StreamedMessages | None,
    ) -> AsyncIterator[ChatResponseUpdate | ChatMessage]:
        run = current_run()
        if run is not None and run.claim(self):
            # The caller's run: its stream is this loop's own generator (no layer between).
            return self._stream(run, messages, options, collected)
        run = self._own_run(run)
        return stream_in_run(run, self._stream_own_run(run, messages, options, collected))

    async def _stream_own_run(
        self,
        run: RunContext,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        collected: StreamedMessages | None,
    ) -> AsyncIterator[ChatResponseUpdate | ChatMessage]:
        run.start_middleware(self)
        try:
            async with closing(self._stream(run, messages, options, collected)) as stream:
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
        self,
        run: RunContext,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        collected: StreamedMessages | None,
    ) -> AsyncIterator[ChatResponseUpdate | ChatMessage]:
        from loopkit.abstractions.chat import ChatResponseUpdate, ToolMode, UpdateFold
        from loopkit.abstractions.content import ChatRole, FunctionCallContent
        from loopkit.abstractions.trusted import trusted

        opts = self.options
        conversation = list(messages)
        tools = {t.name: t for t in options.tools} if options else {}
        if opts.approval_required and tools:
            _check_approvals(opts, tools)
        error_rounds = 0
        while True:
            final = run.rounds >= opts.max_rounds
            if final and not opts.final_request_without_tools:
                return
            run.rounds += 1
            round_no = run.rounds
            round_options = (
                options.copy(tool_mode=ToolMode.none()) if final and options else options
            )
            updates: list[ChatResponseUpdate] = []
            inner = self.inner.get_streaming_response(conversation, round_options)
            try:
                async for update in inner:
                    if final and any(isinstance(c, FunctionCallContent) for c in update.contents):
                        # Calls in the final answer cannot be answered; never hand them over.
                        kept = [
                            c for c in update.contents if not isinstance(c, FunctionCallContent)
                        ]
                        update = update.model_copy(update={"contents": kept})
                    if collected is None and update.message_id is None:
                        update.message_id = f"{run.run_id}-{round_no}"  # for the caller's fold
                    updates.append(update)
                    yield update
            except BaseException:
                # Left early (an error, the consumer closed us): close the model's stream too;
                # ``async for`` alone would leave it suspended. A finished one needs nothing.
                aclose = getattr(inner, "aclose", None)
                if aclose is not None:
                    await aclose()
                raise
            fold = UpdateFold(updates)
            if fold.usage is not None:
                run.usage = run.usage + fold.usage
            new = fold.messages
            conversation.extend(new)
            if collected is not None:
                collected.add(new, fold)
            calls = [c for m in new for c in m.contents if type(c) is FunctionCallContent]
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
            if collected is not None:
                collected.messages.append(tool_message)
                yield tool_message
                continue
            yield trusted(  # made here of validated results: no need to validate again
                ChatResponseUpdate,
                {
                    "role": ChatRole.TOOL,
                    "contents": list(tool_message.contents),
                    "finish_reason": None,
                    "model_id": None,
                    "response_id": None,
                    "message_id": f"{run.run_id}-{round_no}-tool",
                },
            )


class StreamedMessages:
    """What a streamed request of the loop added (see
    :meth:`FunctionInvokingChatClient.stream_collecting`): its messages, as
    :meth:`~FunctionInvokingChatClient.get_response` returns them, and how its last round
    ended."""

    __slots__ = ("finish_reason", "messages", "model_id", "response_id")

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.finish_reason: FinishReason | None = None
        self.model_id: str | None = None
        self.response_id: str | None = None

    def add(self, messages: list[ChatMessage], fold: UpdateFold) -> None:
        """A round's messages and how it ended."""
        self.messages.extend(messages)
        self.finish_reason = fold.finish_reason
        self.model_id = fold.model_id
        self.response_id = fold.response_id


def _tool_message(calls: list[FunctionCallContent], results: list[_Outcome]) -> ChatMessage:
    """The tool message that answers ``calls``: one result per call, in order."""
    from loopkit.abstractions.content import ChatMessage, ChatRole, FunctionResultContent

    answers: list[Content] = [
        FunctionResultContent(call_id=c.call_id, result=text, error=error)
        for c, (text, error, _) in zip(calls, results, strict=True)
    ]
    return ChatMessage(role=ChatRole.TOOL, contents=answers)


def _check_approvals(options: FunctionInvocationOptions, tools: dict[str, Tool]) -> None:
    if not all(name in tools for name in options.approval_required):
        check_tool_names("approval_required", options.approval_required, tools)


def _is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` gives a coroutine (an ``async def`` function or ``__call__``)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )
