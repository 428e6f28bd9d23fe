"""``AGUIApp``: an :class:`~loopkit.agents.Agent` served over AG-UI, as an ASGI application.

One POST endpoint takes a ``RunAgentInput`` and answers with the run's events as server-sent
events (``text/event-stream``), encoded by the official ``ag-ui-protocol`` package:

- ``RUN_STARTED``, then ``STATE_SNAPSHOT`` (when the thread has a state), the model's text as
  ``TEXT_MESSAGE_START/CONTENT/END`` as it streams, each tool call as
  ``TOOL_CALL_START/ARGS/END`` and its result as ``TOOL_CALL_RESULT``, ``STATE_DELTA`` after a
  round whose tools changed the state, and ``RUN_FINISHED`` (the output as ``result``, the
  tokens as ``usage``) or ``RUN_ERROR``.
- Frontend tools (``RunAgentInput.tools``, run by the client): a call ends the response with
  ``RUN_FINISHED`` whose outcome names the pending call ids; the client's next request on the
  thread carries the results as tool messages and its response the rest of the run.
- Approvals: with ``approver=FrontEndApprover()`` on the agent, a call to a tool in
  ``approval_required`` ends the response with an interrupt; the next request answers it
  (``resume``).
- Threads: ``thread_id`` names a loopkit :class:`~loopkit.sessions.Session` (from the
  ``sessions`` factory), so a conversation continues across requests, and across restarts
  with a stored session; the thread's state and a run's wait are kept in its metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.errors import describe_error
from loopkit.interop.ag_ui.resume import answer_paused_round, stored_wait
from loopkit.interop.ag_ui.runs import (
    PENDING_KEY,
    STATE_KEY,
    Ended,
    FrontendTool,
    LiveRun,
    Paused,
    approval_interrupt_id,
)
from loopkit.interop.ag_ui.translate import EventTranslator, from_ag_ui_messages, token_usage
from loopkit.interop.sessions import SessionFactory, memory_sessions, open_session

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, RunAgentInput
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

    from loopkit.agents.agent import Agent
    from loopkit.sessions.protocol import Session

__all__ = ["AGUIApp", "SessionFactory"]

_APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


class AGUIApp:
    """Serves ``agent`` over AG-UI (see the module docs); an ASGI application for uvicorn or to
    mount in a Starlette/FastAPI app.

    - ``sessions``: ``thread_id -> Session`` (e.g. ``lambda t: SQLiteSession("chats.db", t)``);
      by default an :class:`~loopkit.sessions.InMemorySession` per thread, gone with the
      process.
    - ``path``: where the endpoint listens (``/`` by default).
    - ``max_open_sessions``: sessions kept open between requests (the least recently used
      beyond it are closed; a thread with a waiting run stays open).
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        sessions: SessionFactory | None = None,
        path: str = "/",
        max_open_sessions: int = 256,
    ) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r}")
        if max_open_sessions < 1:
            raise ValueError(f"max_open_sessions must be >= 1, got {max_open_sessions}")
        self.agent = agent
        self._factory: SessionFactory = sessions or memory_sessions()
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._max_sessions = max_open_sessions
        self._live: dict[str, LiveRun] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._output_adapter: Any = None
        self.app = Starlette(
            routes=[Route(path, self.endpoint, methods=["POST"])], lifespan=self._lifespan
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: object) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop the runs still waiting (their waits stay stored in their sessions) and close
        the open sessions."""
        for live in list(self._live.values()):
            if live.task is not None:
                live.task.cancel()
                with contextlib.suppress(BaseException):
                    await live.task
        self._live.clear()
        for session in list(self._sessions.values()):
            await _close(session)
        self._sessions.clear()

    # -- HTTP ------------------------------------------------------------------------------------
    async def endpoint(self, request: Request) -> Response:
        """POST: a ``RunAgentInput`` in, the run's events out (SSE)."""
        from ag_ui.core import RunAgentInput
        from ag_ui.encoder import EventEncoder
        from pydantic import ValidationError
        from starlette.responses import JSONResponse, StreamingResponse

        from loopkit.errors import describe_validation_error

        try:
            run_input = RunAgentInput.model_validate_json(await request.body())
        except ValidationError as e:
            problem = describe_validation_error(e)
            return JSONResponse(
                {"error": f"the body is not an AG-UI RunAgentInput: {problem}"}, status_code=422
            )
        encoder = EventEncoder(accept=request.headers.get("accept", "text/event-stream"))

        async def body() -> AsyncIterator[str]:
            async for event in self.run_events(run_input):
                yield encoder.encode(event)

        return StreamingResponse(
            body(),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # -- one request -----------------------------------------------------------------------------
    async def run_events(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The AG-UI events that answer ``run_input`` (what :meth:`endpoint` sends)."""
        from ag_ui.core import RunErrorEvent, RunStartedEvent

        thread = run_input.thread_id
        yield RunStartedEvent(thread_id=thread, run_id=run_input.run_id)
        lock = self._locks.setdefault(thread, asyncio.Lock())
        if lock.locked():
            yield RunErrorEvent(
                message=f"thread {thread!r} has a run in progress; wait for its RUN_FINISHED "
                "before sending the next input",
                code="thread_busy",
            )
            return
        async with lock:
            try:
                live, first = await self._take_up(run_input)
            except _Busy as e:
                yield RunErrorEvent(message=str(e), code="thread_busy")
                return
            except ValueError as e:
                yield RunErrorEvent(message=str(e), code="bad_input")
                return
            for event in first:
                yield event
            async for event in self._drain(live, run_input):
                yield event

    async def _take_up(self, run_input: RunAgentInput) -> tuple[LiveRun, list[BaseEvent]]:
        """The run this input continues or starts, and the events that open its response."""
        from ag_ui.core import StateSnapshotEvent

        thread = run_input.thread_id
        live = self._live.get(thread)
        if live is not None and not live.waiting:
            if live.task is None or not live.task.done():
                # A client that went away mid-response: its run goes on without it.
                raise _Busy(
                    f"thread {thread!r} has a run in progress (its client stopped reading); "
                    "wait for it to end and send the input again"
                )
            del self._live[thread]  # it ended unread: nothing waits on it
            live = None
        if live is not None:
            still = live.answer(run_input.resume or [], run_input.messages)
            if still:
                raise ValueError(
                    f"the run on thread {thread!r} waits for {'; '.join(still)}; answer in this "
                    "input (resume entries for interrupts, tool messages for frontend tools)"
                )
            snapshot: list[BaseEvent] = []
            if live.state is not None:
                snapshot.append(StateSnapshotEvent(snapshot=live.state))
            return live, snapshot
        session = await self._session(thread)
        metadata = await session.get_metadata()
        frontend = self._frontend_tools(run_input)
        state = run_input.state if run_input.state is not None else metadata.get(STATE_KEY)
        if metadata.get(PENDING_KEY):
            live = await self._restore(run_input, session, metadata[PENDING_KEY], state, frontend)
        else:
            live = await self._start(run_input, session, state, frontend)
        self._live[thread] = live
        first: list[BaseEvent] = []
        if state is not None:
            first.append(StateSnapshotEvent(snapshot=state))
        return live, first

    def _frontend_tools(self, run_input: RunAgentInput) -> list[FrontendTool]:
        own = {t.name for t in self.agent.options.tools}
        tools: list[FrontendTool] = []
        for tool in run_input.tools or []:
            if tool.name in own:
                raise ValueError(
                    f"tools: {tool.name!r} is a tool of the agent already; give the frontend "
                    "tool another name"
                )
            tools.append(FrontendTool(tool.name, tool.description, tool.parameters))
        return tools

    async def _start(
        self,
        run_input: RunAgentInput,
        session: Session,
        state: Any,
        frontend: list[FrontendTool],
    ) -> LiveRun:
        messages = from_ag_ui_messages(run_input.messages)
        split = len(messages)
        while split > 0 and messages[split - 1].role == ChatRole.USER:
            split -= 1
        inputs = messages[split:]
        if not inputs:
            last = run_input.messages[-1].role if run_input.messages else "nothing"
            raise ValueError(
                f"nothing to run on thread {run_input.thread_id!r}: the input ends with "
                f"{last}, and no run of the thread waits for an answer; end the messages with "
                "the user's message"
            )
        if split and not await session.get_messages():
            # A client that kept the conversation itself: the session starts from it.
            await session.add_messages(messages[:split])
        if run_input.context:
            lines = "\n".join(f"- {c.description}: {c.value}" for c in run_input.context)
            inputs.insert(
                0, ChatMessage.from_text(ChatRole.USER, f"Context from the application:\n{lines}")
            )
        translator = EventTranslator(run_input.run_id, frozenset(t.name for t in frontend))
        live = LiveRun(run_input.thread_id, session, translator, state, inputs)
        live.start(
            self.agent.run_stream(
                inputs,
                session=session,
                tools=frontend,
                metadata={"ag_ui_thread_id": run_input.thread_id, "ag_ui_run_id": run_input.run_id},
            )
        )
        return live

    async def _restore(
        self,
        run_input: RunAgentInput,
        session: Session,
        pending: Any,
        state: Any,
        frontend: list[FrontendTool],
    ) -> LiveRun:
        inputs, step, names = stored_wait(pending)
        known = {t.name for t in frontend}
        frontend = frontend + [FrontendTool(n, "", None) for n in names if n not in known]
        translator = EventTranslator(run_input.run_id, frozenset(t.name for t in frontend))
        translator.restore(step)
        live = LiveRun(run_input.thread_id, session, translator, state, inputs)
        live.answer(run_input.resume or [], run_input.messages)
        live.start(answer_paused_round(self.agent, live, step, frontend))
        return live

    async def _drain(self, live: LiveRun, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The run's events up to its end or its next wait."""
        from ag_ui.core import (
            Interrupt,
            RunErrorEvent,
            RunFinishedEvent,
            RunFinishedInterruptOutcome,
            RunFinishedSuccessOutcome,
        )

        thread, run_id = run_input.thread_id, run_input.run_id
        while True:
            item = await live.queue.get()
            if isinstance(item, Paused):
                if not live.waiting:
                    continue  # a pause an earlier response did not read, answered since
                approvals, results = live.waiting_for()
                if approvals:
                    calls = {c.call_id: c for c in live.translator.round_message.function_calls}
                    interrupts = [
                        Interrupt(
                            id=approval_interrupt_id(call_id),
                            reason="approval_required",
                            message=_approval_message(calls.get(call_id), call_id),
                            tool_call_id=call_id,
                            response_schema=_APPROVAL_SCHEMA,
                        )
                        for call_id in approvals
                    ]
                    outcome: Any = RunFinishedInterruptOutcome(interrupts=interrupts)
                else:
                    outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=results or None)
                usage = token_usage(live.take_usage(), self._model(None)) or None
                yield RunFinishedEvent(
                    thread_id=thread, run_id=run_id, outcome=outcome, usage=usage
                )
                return
            if isinstance(item, Ended):
                self._live.pop(thread, None)
                usage = token_usage(live.take_usage(), self._model(item.result)) or None
                if item.error is not None or item.result is None:
                    error = item.error or RuntimeError("the run ended without a result")
                    yield RunErrorEvent(
                        message=describe_error(error), code=type(error).__name__, usage=usage
                    )
                    return
                yield RunFinishedEvent(
                    thread_id=thread,
                    run_id=run_id,
                    result=self._output_json(item.result.output),
                    usage=usage,
                )
                return
            for event in item:
                yield event

    def _model(self, result: Any) -> str | None:
        """The model that answered: as its last response named it (a streamed one may not),
        else as the agent's innermost client names it."""
        from loopkit.middleware.otel import innermost_model

        named = getattr(result, "model_id", None)
        return named or innermost_model(self.agent.pipeline)

    def _output_json(self, output: Any) -> Any:
        """The run's output as JSON data (``RUN_FINISHED.result``)."""
        if isinstance(output, str):
            return output
        if self._output_adapter is None:
            from pydantic import TypeAdapter

            self._output_adapter = TypeAdapter(self.agent.output_type)
        return self._output_adapter.dump_python(output, mode="json")

    async def _session(self, thread: str) -> Session:
        session = self._sessions.get(thread)
        if session is not None:
            self._sessions.move_to_end(thread)
            return session
        session = await open_session(self._factory, thread)
        self._sessions[thread] = session
        while len(self._sessions) > self._max_sessions:
            oldest = next((t for t in self._sessions if t not in self._live and t != thread), None)
            if oldest is None:
                break
            await _close(self._sessions.pop(oldest))
        return session


class _Busy(Exception):
    """The thread's run is still going (its earlier client stopped reading)."""


def _approval_message(call: Any, call_id: str) -> str:
    if call is None:
        return f"Approve tool call {call_id}?"
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    return f"Approve the call of {call.name} with {arguments}?"


async def _close(session: object) -> None:
    close = getattr(session, "close", None)
    if close is None:
        return
    with contextlib.suppress(Exception):
        done = close()
        if isinstance(done, Awaitable):
            await done
