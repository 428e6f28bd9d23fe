"""``Agent``: instructions, tools, limits and an output type around a model, built once, run many
times (concurrently too), each run with its own state.

The pipeline is built in the constructor: the function-invocation loop, over the given
middleware, over a token budget (when ``max_tokens`` is set), over the model. Everything a run
accumulates (rounds, usage, the budget's count, the run log's totals) lives in the run's
:class:`~loopkit.run_context.RunContext`, so one agent serves any number of runs at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack, overload

from pydantic import ValidationError

from loopkit._checks import check_count, check_tool_names, tool_name_set
from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
)
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
)
from loopkit.abstractions.tools import Tool
from loopkit.agents.arguments import (
    Prompt,
    as_messages,
    as_tools,
    check_middleware,
    check_settings,
    check_tools_argument,
    model_client,
    run_arguments,
    unique_tools,
)
from loopkit.agents.as_tool import AgentTool
from loopkit.agents.events import AgentEvent, EventMaker, FinalResult
from loopkit.agents.model_chain import model_chain
from loopkit.agents.output import OutputSpec
from loopkit.agents.result import AgentRunResult
from loopkit.agents.stream import AgentStream
from loopkit.builder import ChatClientBuilder, Middleware
from loopkit.errors import OutputValidationError, describe_error
from loopkit.middleware.function_invocation import (
    DEFAULT_MAX_RESULT_CHARS,
    Approver,
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    StreamedMessages,
)
from loopkit.run_context import RunContext, closing, current_run, run_scope, stream_in_run

if TYPE_CHECKING:
    from loopkit.sessions.protocol import Session

__all__ = ["Agent", "AgentSettings", "Prompt"]

OutputT = TypeVar("OutputT")


class AgentSettings(TypedDict, total=False):
    """The keyword arguments of :class:`Agent` besides ``model`` and ``output_type`` (typed, so
    a misspelt setting is a type error)."""

    instructions: str | None
    tools: Sequence[Tool | Callable[..., Any]]
    name: str | None
    middleware: Sequence[Middleware]
    max_rounds: int
    max_tokens: int | None
    max_output_tokens: int | None
    output_retries: int
    options: ChatOptions | None
    max_consecutive_errors: int
    include_detailed_errors: bool
    allow_concurrent_invocation: bool
    approval_required: Iterable[str]
    approver: Approver | None
    max_result_chars: int | None
    terminate_on_unknown_calls: bool


#: Every keyword argument of :class:`Agent`.
_SETTINGS = ("output_type", *AgentSettings.__annotations__)
#: The keyword arguments of a run.
_RUN_ARGUMENTS = ("session", "history", "tools", "metadata")


class _NoOtherArguments(TypedDict):
    """No keyword arguments beyond the named ones: a type checker reports any other as it
    always did, and at run time one gets a ``TypeError`` that names the right one."""


class Agent(Generic[OutputT]):
    """A model with instructions, tools, limits and an output type; ``await agent.run(...)``.

    - ``model``: the provider client (e.g. ``LiteLLMChatClient``), or a
      :class:`~loopkit.builder.ChatClientBuilder` around it whose middleware (retries, a run
      log, ...) the agent keeps below its loop. It must not contain a function-invocation loop:
      the agent adds its own.
    - ``instructions``: the system message, sent first in every run and never stored in a
      session.
    - ``tools``: :class:`~loopkit.abstractions.tools.Tool`\\ s or plain functions (wrapped with
      :class:`~loopkit.abstractions.tools.FunctionTool`).
    - ``output_type``: ``None``/``str`` for text, or a pydantic model, dataclass, TypedDict,
      primitive or container: the model is asked for JSON of that shape (natively where the
      provider supports it) and the answer is validated; an invalid one is sent back with the
      errors up to ``output_retries`` times, then :class:`~loopkit.errors.OutputValidationError`.
    - ``middleware``: factories ``client -> client`` or async functions, as
      :meth:`ChatClientBuilder.use <loopkit.builder.ChatClientBuilder.use>` takes; the first is
      the outermost, right below the loop.
    - limits: ``max_rounds`` (model requests per run; 40), ``max_tokens`` (a token budget per
      run, input + output; none by default), ``max_output_tokens`` (per request).
    - ``options``: base :class:`~loopkit.abstractions.chat.ChatOptions` (model id, sampling,
      provider settings); the agent adds its tools, ``max_output_tokens`` and response format.
    - the loop's settings: ``max_consecutive_errors``, ``include_detailed_errors``,
      ``allow_concurrent_invocation``, ``approval_required`` + ``approver`` (a sync approver
      runs in a worker thread), ``max_result_chars``, ``terminate_on_unknown_calls``; see
      :class:`~loopkit.middleware.function_invocation.FunctionInvocationOptions`.
    """

    @overload
    def __init__(
        self: Agent[str],
        model: ChatClient | ChatClientBuilder | str,
        *,
        output_type: None = None,
        **settings: Unpack[AgentSettings],
    ) -> None: ...

    @overload
    def __init__(
        self,
        model: ChatClient | ChatClientBuilder | str,
        *,
        output_type: type[OutputT],
        **settings: Unpack[AgentSettings],
    ) -> None: ...

    def __init__(
        self,
        model: ChatClient | ChatClientBuilder | str,
        *,
        output_type: Any = None,
        instructions: str | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        name: str | None = None,
        middleware: Sequence[Middleware] = (),
        max_rounds: int = 40,
        max_tokens: int | None = None,
        max_output_tokens: int | None = None,
        output_retries: int = 1,
        options: ChatOptions | None = None,
        max_consecutive_errors: int = 3,
        include_detailed_errors: bool = False,
        allow_concurrent_invocation: bool = False,
        approval_required: Iterable[str] = (),
        approver: Approver | None = None,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        terminate_on_unknown_calls: bool = False,
        **unknown: Any,
    ) -> None:
        check_settings("Agent()", unknown, _SETTINGS)
        model = model_client(model)
        check_count("output_retries", output_retries, 0)
        check_count("max_tokens", max_tokens, 1, optional=True, what="a positive number of tokens")
        check_count("max_output_tokens", max_output_tokens, 1, optional=True)
        if instructions is not None and not isinstance(instructions, str):
            joined = " (join them into one)" if isinstance(instructions, list | tuple) else ""
            raise TypeError(
                f"instructions must be a string (the system message), got "
                f"{type(instructions).__name__}{joined}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        if options is not None and not isinstance(options, ChatOptions):
            raise TypeError(
                f"options must be a ChatOptions, e.g. ChatOptions(temperature=0.2); got "
                f"{type(options).__name__}"
            )
        check_tools_argument(tools)
        check_middleware(middleware)
        self.name = name or "agent"
        self.instructions = instructions
        self.output_retries = output_retries
        self._output: OutputSpec[OutputT] = OutputSpec(output_type)
        self.tools: list[Tool] = as_tools(tools)
        invocation = FunctionInvocationOptions(
            max_rounds=max_rounds,
            max_consecutive_errors=max_consecutive_errors,
            include_detailed_errors=include_detailed_errors,
            terminate_on_unknown_calls=terminate_on_unknown_calls,
            allow_concurrent_invocation=allow_concurrent_invocation,
            max_result_chars=max_result_chars,
            approval_required=tool_name_set("approval_required", approval_required),
            approver=approver,
        )
        #: The built pipeline: the loop over the middleware over the budget over the model.
        self.pipeline: FunctionInvokingChatClient = FunctionInvokingChatClient(
            model_chain(model, middleware, max_tokens), invocation
        )
        self.limits: dict[str, Any] = {
            "max_rounds": max_rounds,
            "max_tokens": max_tokens,
            "max_output_tokens": max_output_tokens,
            "output_retries": output_retries,
        }
        base = options.copy() if options is not None else ChatOptions()
        base.tools = unique_tools([*base.tools, *self.tools])
        if max_output_tokens is not None:
            base.max_output_tokens = max_output_tokens
        if self._output.response_format is not None:
            base.response_format = self._output.response_format
        self.options = base
        self._system = (
            ChatMessage.from_text(ChatRole.SYSTEM, instructions) if instructions else None
        )

    @property
    def output_type(self) -> Any:
        """The type of :attr:`AgentRunResult.output` (``str`` for a text agent)."""
        return self._output.output_type

    def __repr__(self) -> str:
        return (
            f"Agent({self.name!r}, output_type={self._output.type_name}, "
            f"tools={[t.name for t in self.tools]})"
        )

    # -- running -------------------------------------------------------------------------------
    async def run(
        self,
        prompt: Prompt,
        *,
        session: Session | None = None,
        history: Sequence[ChatMessage] | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        metadata: dict[str, Any] | None = None,
        **unknown: Unpack[_NoOtherArguments],
    ) -> AgentRunResult[OutputT]:
        """Run the agent on ``prompt`` (a user's text, a message or messages) and return the
        typed result.

        ``session`` continues a stored conversation: its messages come first, and this run's
        input and every complete step are appended to it as they happen (a run that fails
        leaves whole steps). ``history`` gives earlier messages without storing anything (not
        with ``session``). ``tools`` adds tools for this run only (e.g. from a tool source
        opened for it). ``metadata`` is attached to the run (shown in its run-log ``start``
        line). Called inside another run (a tool of another agent), the run is its child.
        """
        check_settings("Agent.run()", unknown, _RUN_ARGUMENTS)
        session, history = run_arguments(session, history, tools, metadata)
        run = self.new_run(metadata)
        with run_scope(run):
            return await self._run_in(run, prompt, session, history, tools)

    def run_sync(
        self,
        prompt: Prompt,
        *,
        session: Session | None = None,
        history: Sequence[ChatMessage] | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        metadata: dict[str, Any] | None = None,
        **unknown: Unpack[_NoOtherArguments],
    ) -> AgentRunResult[OutputT]:
        """:meth:`run` for code without an event loop (a script, a notebook cell without one):
        runs it with :func:`asyncio.run`. Inside a running loop, ``await agent.run(...)``."""
        check_settings("Agent.run_sync()", unknown, _RUN_ARGUMENTS)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.run(prompt, session=session, history=history, tools=tools, metadata=metadata)
            )
        raise RuntimeError(
            "Agent.run_sync() was called inside a running event loop; use "
            "`await agent.run(...)` there"
        )

    def run_stream(
        self,
        prompt: Prompt,
        *,
        session: Session | None = None,
        history: Sequence[ChatMessage] | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        metadata: dict[str, Any] | None = None,
        **unknown: Unpack[_NoOtherArguments],
    ) -> AgentStream[AgentEvent[OutputT]]:
        """Run the agent as :meth:`run` does, yielding typed events as they happen:
        :class:`~loopkit.agents.TextDelta`, :class:`~loopkit.agents.ToolCallStarted`,
        :class:`~loopkit.agents.ToolResultReceived`, :class:`~loopkit.agents.RoundFinished`,
        and last :class:`~loopkit.agents.FinalResult` with the
        :class:`~loopkit.agents.AgentRunResult`. The messages it leaves (in the result and
        the session) are exactly those :meth:`run` would leave. The arguments are checked
        at once; the run starts when the iteration does (``async for``)."""
        check_settings("Agent.run_stream()", unknown, _RUN_ARGUMENTS)
        checked, earlier = run_arguments(session, history, tools, metadata)

        def start() -> AsyncIterator[AgentEvent[OutputT]]:
            run = self.new_run(metadata)
            events = self._stream_in(run, prompt, checked, earlier, tools)
            return stream_in_run(run, events)

        return AgentStream(start)

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        max_depth: int = 3,
        max_child_runs: int = 16,
    ) -> AgentTool:
        """This agent as a :class:`~loopkit.abstractions.tools.Tool` another agent can call:
        each call is a child run (its own budget and limits) on the ``task`` the caller writes,
        and returns the final text (or the output as JSON). See
        :class:`~loopkit.agents.as_tool.AgentTool`."""
        return AgentTool(
            self,
            name=name,
            description=description,
            max_depth=max_depth,
            max_child_runs=max_child_runs,
        )

    # -- one run -------------------------------------------------------------------------------
    def new_run(self, metadata: dict[str, Any] | None = None) -> RunContext:
        """A run of this agent, not started yet (its id is known: a caller can announce it);
        a child of the current run when called inside one. :meth:`answer_in` runs it."""
        values = {"limits": self.limits, **(metadata or {})}
        parent = current_run()
        if parent is None:
            return RunContext(name=self.name, metadata=values)
        return parent.child(self.name, **values)

    async def answer_in(self, run: RunContext, task: str) -> str:
        """Run on ``task`` in ``run`` (from :meth:`new_run`) and return the answer as a calling
        model reads it: the final text, or the output as JSON (what an agent as a tool does)."""
        with run_scope(run):
            result = await self._run_in(run, task, None, None, ())
        return self._output.serialise(result.output)

    def _end(self, run: RunContext, error: BaseException | None) -> None:
        run.emit(
            "run_end",
            status="ok" if error is None else "error",
            error=None if error is None else describe_error(error),
            output_type=self._output.type_name,
        )

    async def _run_in(
        self,
        run: RunContext,
        prompt: Prompt,
        session: Session | None,
        history: Sequence[ChatMessage] | None,
        tools: Sequence[Tool | Callable[..., Any]],
    ) -> AgentRunResult[OutputT]:
        """The run, with ``run`` already current."""
        _name_session(run, session)  # before the middleware starts: the agent span reads it
        run.start_middleware(self.pipeline)
        try:
            result = await self._execute(run, prompt, session, history, tools)
        except BaseException as e:
            self._end(run, e)
            raise
        self._end(run, None)
        return result

    async def _execute(
        self,
        run: RunContext,
        prompt: Prompt,
        session: Session | None,
        history: Sequence[ChatMessage] | None,
        tools: Sequence[Tool | Callable[..., Any]],
    ) -> AgentRunResult[OutputT]:
        turn = await self._prepare(run, prompt, session, history, tools)
        response = await self.pipeline.get_response(turn.request, turn.options)
        while True:
            output = self._check_output(run, turn, response)
            if not isinstance(output, _Retry):
                return self._result(run, turn, response, output)
            response = await self.pipeline.get_response(turn.request, turn.options)

    async def _stream_in(
        self,
        run: RunContext,
        prompt: Prompt,
        session: Session | None,
        history: Sequence[ChatMessage] | None,
        tools: Sequence[Tool | Callable[..., Any]],
    ) -> AsyncIterator[AgentEvent[OutputT]]:
        """The streamed run, advanced with ``run`` current (see :func:`stream_in_run`)."""
        _name_session(run, session)
        run.start_middleware(self.pipeline)
        try:
            turn = await self._prepare(run, prompt, session, history, tools)
            events = EventMaker(run)
            while True:
                collected = StreamedMessages()
                stream = self.pipeline.stream_collecting(turn.request, turn.options, collected)
                async with closing(stream):
                    async for update in stream:
                        for event in events.feed(update):
                            yield event
                for event in events.end_of_stream():
                    yield event
                response = self._folded(run, turn, collected)
                output = self._check_output(run, turn, response)
                if not isinstance(output, _Retry):
                    result = self._result(run, turn, response, output)
                    break
        except GeneratorExit:
            self._end(run, _StreamClosed("the stream was closed before the run ended"))
            raise
        except BaseException as e:
            self._end(run, e)
            raise
        self._end(run, None)
        yield FinalResult(result=result)

    async def _prepare(
        self,
        run: RunContext,
        prompt: Prompt,
        session: Session | None,
        history: Sequence[ChatMessage] | None,
        tools: Sequence[Tool | Callable[..., Any]],
    ) -> _Turn:
        inputs = as_messages(prompt)
        if session is not None and history is not None:
            raise ValueError(
                "pass session= (a stored conversation) or history= (earlier messages), not both"
            )
        earlier = list(history) if history is not None else []
        turn = _Turn(inputs, earlier, self.options)
        if tools:
            turn.options = self.options.copy(
                tools=unique_tools([*self.options.tools, *as_tools(tools)])
            )
        approvals = self.pipeline.options.approval_required
        if approvals:
            check_tool_names("approval_required", approvals, [t.name for t in turn.options.tools])
        if session is not None:
            turn.earlier = await session.get_messages()
            run.on_messages(_Store(session, turn.pending).add)
        head = [self._system] if self._system is not None else []
        turn.request = [*head, *turn.earlier, *inputs]
        return turn

    def _folded(self, run: RunContext, turn: _Turn, collected: StreamedMessages) -> ChatResponse:
        """The streamed call's messages and what the loop would have said about its end."""
        response = ChatResponse(
            messages=collected.messages,
            finish_reason=collected.finish_reason,
            model_id=collected.model_id,
            response_id=collected.response_id,
        )
        extra = response.additional_properties
        invocation = self.pipeline.options
        if run.rounds > invocation.max_rounds:
            extra["max_rounds_reached"] = True
        if not response.messages:
            return response
        last = response.messages[-1]
        if invocation.terminate_on_unknown_calls and last.role == ChatRole.ASSISTANT:
            known = {t.name for t in turn.options.tools}
            unknown = [c.name for c in last.function_calls if c.name not in known]
            if unknown:
                extra["unknown_tools"] = unknown
        return response

    def _check_output(
        self, run: RunContext, turn: _Turn, response: ChatResponse
    ) -> OutputT | _Retry:
        """The output of ``response``, or a :class:`_Retry` after asking the model again (the
        answer and the errors appended to the request); raises after the last retry."""
        turn.added.extend(response.messages)
        text = response.text
        try:
            return self._output.parse(text)
        except ValidationError as e:
            errors = self._output.describe(e)
        if turn.retries >= self.output_retries:
            attempts = turn.retries + 1
            raise OutputValidationError(
                f"the model's answer is not a valid {self._output.type_name} after {attempts} "
                f"attempt{'s' if attempts > 1 else ''}: {errors}",
                output_type=self._output.type_name,
                errors=errors,
                text=text,
                attempts=attempts,
            )
        turn.retries += 1
        run.emit("output_retry", attempt=turn.retries, errors=errors)
        ask = ChatMessage.from_text(ChatRole.USER, self._output.feedback(errors))
        turn.added.append(ask)
        turn.pending.append(ask)  # stored with the next step
        turn.request = [*turn.request, *response.messages, ask]
        return _Retry()

    def _result(
        self, run: RunContext, turn: _Turn, response: ChatResponse, output: OutputT
    ) -> AgentRunResult[OutputT]:
        new_messages = [*turn.inputs, *turn.added]
        extra = response.additional_properties
        # Not AgentRunResult[...](...): pydantic would build a parametrised class on each call.
        return AgentRunResult(
            output=output,
            run_id=run.run_id,
            parent_run_id=run.parent.run_id if run.parent is not None else None,
            agent_name=self.name,
            new_messages=new_messages,
            all_messages=[*turn.earlier, *new_messages],
            usage=run.usage,
            rounds=run.rounds,
            tool_calls=run.tool_calls,
            output_retries=turn.retries,
            finish_reason=response.finish_reason,
            max_rounds_reached=bool(extra.get("max_rounds_reached", False)),
            unknown_tools=list(extra.get("unknown_tools", ())),
            model_id=response.model_id,
        )


class _Retry:
    """Marks an answer that did not validate and was sent back."""


class _StreamClosed(Exception):
    """The consumer of a streamed run stopped reading before its end."""


class _Turn:
    """What one run is working with."""

    __slots__ = ("added", "earlier", "inputs", "options", "pending", "request", "retries")

    def __init__(
        self, inputs: list[ChatMessage], earlier: list[ChatMessage], options: ChatOptions
    ) -> None:
        self.inputs = inputs
        self.earlier = earlier
        self.options = options
        self.request: list[ChatMessage] = []
        #: Messages of this run not yet stored in the session (stored with the next step).
        self.pending: list[ChatMessage] = list(inputs)
        self.added: list[ChatMessage] = []
        self.retries = 0


class _Store:
    """Appends each complete step to a session, with the input that led to it."""

    __slots__ = ("pending", "session")

    def __init__(self, session: Session, pending: list[ChatMessage]) -> None:
        self.session = session
        self.pending = pending

    async def add(self, step: list[ChatMessage]) -> None:
        if self.pending:
            batch = [*self.pending, *step]
            self.pending.clear()
        else:
            batch = step
        await self.session.add_messages(batch)


def _name_session(run: RunContext, session: Session | None) -> None:
    """Record the session's id in the run's metadata (run log ``start``, the agent span)."""
    if session is not None:
        run.metadata.setdefault("session_id", session.session_id)
