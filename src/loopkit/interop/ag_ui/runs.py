"""Runs served over AG-UI that wait for the front-end: for the result of a tool the client runs
(a frontend tool) or for its answer to an approval.

A run lives in a task of its own and puts AG-UI events on a queue; the HTTP request that started
it (or took it up) writes them to the client. When the run must wait, it says so on the queue
(:class:`Paused`): the request ends with ``RUN_FINISHED`` (an interrupt for an approval, the
pending tool-call ids for frontend tools) while the run itself keeps waiting. The client's next
request on the thread brings the answers, and its response carries the rest of the run.

The wait is also written to the thread's session (its metadata): the round's calls and what they
wait for. A server that restarted (the waiting task gone) takes the run up from there when the
answers come: see :mod:`loopkit.interop.ag_ui.resume`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import ChatMessage, FunctionCallContent, UsageDetails
from loopkit.abstractions.tools import ToolError
from loopkit.agents.events import AgentEvent, FinalResult, RoundFinished, ToolResultReceived
from loopkit.interop.ag_ui.translate import EventTranslator, content_text
from loopkit.run_context import current_run

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, Message, ResumeEntry

    from loopkit.agents.result import AgentRunResult
    from loopkit.middleware.function_invocation import Approver
    from loopkit.sessions.protocol import Session

__all__ = [
    "PENDING_KEY",
    "STATE_KEY",
    "Ended",
    "FrontEndApprover",
    "FrontendTool",
    "LiveRun",
    "Paused",
    "approval_interrupt_id",
    "current_state",
]

#: Session metadata: the wait of a paused run (for a server that restarted).
PENDING_KEY = "ag_ui_pending"
#: Session metadata: the thread's shared state.
STATE_KEY = "ag_ui_state"

_CURRENT: ContextVar[LiveRun | None] = ContextVar("loopkit_ag_ui_run", default=None)


def approval_interrupt_id(call_id: str) -> str:
    """The AG-UI interrupt id of the approval of tool call ``call_id``."""
    return f"approve-{call_id}"


@dataclass(slots=True)
class Paused:
    """The run waits for the front-end (put on the queue after the events before the wait)."""


@dataclass(slots=True)
class Ended:
    """The run is over: its result, or the exception that ended it."""

    result: AgentRunResult[Any] | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Answer:
    """A frontend tool's result as the client sent it."""

    text: str
    error: str | None = None


@dataclass
class _Waits:
    """What a run waits for, by tool-call id."""

    approvals: dict[str, asyncio.Future[bool]] = field(default_factory=dict)
    results: dict[str, asyncio.Future[_Answer]] = field(default_factory=dict)
    #: Answers that came before the run asked for them (several frontend calls in one round,
    #: or a run taken up again after a restart).
    early: dict[str, _Answer] = field(default_factory=dict)
    early_approvals: dict[str, bool] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)


def current_state() -> dict[str, Any]:
    """The shared state of the AG-UI thread whose run calls this (from a tool): a dict the tool
    may change; the change reaches the client as a ``STATE_DELTA`` after the tool's round.

    Raises RuntimeError outside a run served over AG-UI."""
    live = _CURRENT.get()
    if live is None:
        raise RuntimeError(
            "current_state() was called outside a run served over AG-UI; call it from a tool "
            "of an agent served by loopkit.interop.ag_ui.AGUIApp"
        )
    return live.state


class FrontEndApprover:
    """An ``approver=`` for :class:`~loopkit.agents.Agent` that asks the AG-UI client: a call to a
    tool in ``approval_required`` ends the response with an interrupt (``RUN_FINISHED`` with
    ``outcome.type == "interrupt"``, the interrupt naming the call), and the run goes on when
    the client answers it (``resume: [{interruptId, status: "resolved", payload: {"approved":
    true}}]``; anything else refuses the call, and the model is told so).

    Outside a run served over AG-UI, ``otherwise`` decides (sync or async, as ``approver=``
    takes it); without one the call is refused.
    """

    def __init__(self, otherwise: Approver | None = None) -> None:
        self.otherwise = otherwise

    async def __call__(self, call: FunctionCallContent) -> bool:
        live = _CURRENT.get()
        if live is not None:
            return await live.approval(call)
        if self.otherwise is None:
            return False
        decision = self.otherwise(call)
        if inspect.isawaitable(decision):
            decision = await decision
        return bool(decision)


class FrontendTool:
    """A tool the AG-UI client declared (``RunAgentInput.tools``) and runs itself: calling it
    makes the run wait for the client's tool message with the result."""

    def __init__(self, name: str, description: str, parameters: Any) -> None:
        self.name = name
        self.description = description
        self._parameters: dict[str, Any] = (
            parameters if isinstance(parameters, dict) and parameters else {"type": "object"}
        )

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema the client declared."""
        return self._parameters

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """The client's result for this call (waits for it)."""
        live = _CURRENT.get()
        if live is None:
            raise ToolError(f"{self.name} runs in the AG-UI client; no client is connected")
        answer = await live.frontend_result(self.name, arguments)
        if answer.error is not None:
            raise ToolError(answer.error or answer.text or f"{self.name} failed in the client")
        return answer.text

    def __repr__(self) -> str:
        return f"FrontendTool({self.name!r})"


class LiveRun:
    """One run of a thread, in its own task; requests read its events from :attr:`queue`."""

    def __init__(
        self,
        thread_id: str,
        session: Session,
        translator: EventTranslator,
        state: Any,
        pending_inputs: Sequence[ChatMessage],
    ) -> None:
        self.thread_id = thread_id
        self.session = session
        self.translator = translator
        self.state: Any = state
        self._sent_state = copy.deepcopy(state)
        #: The events, a list per event of the run (one hop between the tasks, not one per
        #: AG-UI event), then Paused / Ended.
        self.queue: asyncio.Queue[list[BaseEvent] | Paused | Ended] = asyncio.Queue()
        self.waits = _Waits()
        #: Input messages of the run not yet stored in the session (stored with its first step).
        self.pending_inputs = list(pending_inputs)
        self._stored_before: int | None = None
        self.task: asyncio.Task[None] | None = None
        #: Tokens of the run's model requests since the last response ended (AG-UI counts
        #: each response's own), and the run's total when they were counted.
        self.usage = UsageDetails()
        self._counted = UsageDetails()

    # -- the run's task --------------------------------------------------------------------------
    def start(self, events: AsyncIterator[AgentEvent[Any]]) -> None:
        """Advance ``events`` in a task of its own."""
        self.task = asyncio.get_running_loop().create_task(self._drive(events))

    async def _drive(self, events: AsyncIterator[AgentEvent[Any]]) -> None:
        _CURRENT.set(self)  # this task's context: the tools and the approver see the run
        put = self.queue.put_nowait
        result: AgentRunResult[Any] | None = None
        try:
            self._stored_before = len(await self.session.get_messages())
            async for event in events:
                out = self.translator.feed(event)
                if out:
                    put(out)
                if isinstance(event, ToolResultReceived | RoundFinished):
                    self._state_delta()
                elif isinstance(event, FinalResult):
                    result = event.result
            await self.session.set_metadata({PENDING_KEY: None, STATE_KEY: self.state})
            if result is not None:
                self._usage_until(result.usage)
        except asyncio.CancelledError:
            put(Ended(error=RuntimeError("the server stopped the run")))
            raise
        except Exception as e:
            with contextlib.suppress(Exception):  # the run's own error is the one to report
                await self.session.set_metadata({PENDING_KEY: None, STATE_KEY: self.state})
            put(Ended(error=e))
            return
        put(Ended(result=result))

    def _state_delta(self) -> None:
        if self.state == self._sent_state:
            return
        import jsonpatch
        from ag_ui.core import StateDeltaEvent, StateSnapshotEvent

        if isinstance(self.state, dict) and isinstance(self._sent_state, dict):
            patch = jsonpatch.make_patch(self._sent_state, self.state).patch
            self.queue.put_nowait([StateDeltaEvent.model_validate({"delta": patch})])
        else:
            self.queue.put_nowait([StateSnapshotEvent(snapshot=copy.deepcopy(self.state))])
        self._sent_state = copy.deepcopy(self.state)

    # -- waiting ---------------------------------------------------------------------------------
    async def approval(self, call: FunctionCallContent) -> bool:
        """Wait for the client's answer to ``call``'s approval."""
        early = self.waits.early_approvals.pop(call.call_id, None)
        if early is not None:
            return early
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.waits.approvals[call.call_id] = future
        await self._pause()
        try:
            return await future
        finally:
            self.waits.approvals.pop(call.call_id, None)

    async def frontend_result(self, name: str, arguments: dict[str, Any]) -> _Answer:
        """Wait for the client's result of the next unanswered call of ``name`` this round."""
        call_id = self._claim(name, arguments)
        early = self.waits.early.pop(call_id, None)
        if early is not None:
            return early
        future: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        self.waits.results[call_id] = future
        await self._pause()
        try:
            return await future
        finally:
            self.waits.results.pop(call_id, None)

    def _claim(self, name: str, arguments: dict[str, Any]) -> str:
        """The id of the call being invoked: the loop invokes a round's calls in order, so it
        is the first unclaimed call of ``name`` (with these arguments) of the round."""
        for call in self.translator.round_message.function_calls:
            if call.call_id in self.waits.claimed or call.name != name:
                continue
            if call.arguments == arguments:
                self.waits.claimed.add(call.call_id)
                return call.call_id
        raise ToolError(f"{name}: no call of this frontend tool is waiting in this round")

    def _usage_until(self, total: UsageDetails) -> None:
        """Count the run's tokens up to ``total`` (its usage so far) for this response."""
        fields = (
            "input_tokens",
            "output_tokens",
            "cached_input_tokens",
            "cache_creation_input_tokens",
        )
        grown = {f: getattr(total, f) - getattr(self._counted, f) for f in fields}
        self.usage = self.usage + UsageDetails(**grown)
        self._counted = total

    async def _pause(self) -> None:
        run = current_run()
        if run is not None:
            self._usage_until(run.usage)
        await self.save_pending()
        self.queue.put_nowait(Paused())

    async def save_pending(self) -> None:
        """Write the wait to the session, for a server that restarts before the answer."""
        stored = len(await self.session.get_messages())
        inputs = self.pending_inputs if stored == self._stored_before else []
        await self.session.set_metadata(
            {
                STATE_KEY: self.state,
                PENDING_KEY: {
                    "inputs": [m.model_dump(mode="json") for m in inputs],
                    "step": self.translator.round_message.model_dump(mode="json"),
                    "frontend": sorted(self.translator.frontend),
                },
            }
        )

    @property
    def waiting(self) -> bool:
        """The run waits for the client (an approval, a frontend tool's result)."""
        return bool(self.waits.approvals or self.waits.results)

    def take_usage(self) -> UsageDetails:
        """The tokens since the last call (what the response now ending used)."""
        usage, self.usage = self.usage, UsageDetails()
        return usage

    def waiting_for(self) -> tuple[list[str], list[str]]:
        """(call ids awaiting approval, frontend call ids awaiting a result)."""
        open_results = [c for c in self.translator.open_frontend_calls if c not in self.waits.early]
        pending = [
            c for c in open_results if c in self.waits.results or c not in self.waits.claimed
        ]
        return list(self.waits.approvals), pending

    def answer(self, resume: Sequence[ResumeEntry], messages: Sequence[Message]) -> list[str]:
        """Give the run the client's answers: resume entries for approvals, tool messages for
        frontend calls. Returns what the run still waits for after them (empty: it goes on)."""
        round_calls = {
            approval_interrupt_id(c.call_id): c.call_id
            for c in self.translator.round_message.function_calls
        }
        for entry in resume:
            call_id = round_calls.get(entry.interrupt_id)
            if call_id is None:
                continue
            yes = entry.status == "resolved" and _approved(entry.payload)
            future = self.waits.approvals.get(call_id)
            if future is None:
                self.waits.early_approvals[call_id] = yes
            elif not future.done():
                future.set_result(yes)
        frontend = set(self.translator.open_frontend_calls)
        for message in messages:
            if message.role != "tool" or message.tool_call_id not in frontend:
                continue
            where = f"the tool message {message.id!r}"
            answer = _Answer(text=content_text(message.content, where), error=message.error)
            waiting = self.waits.results.get(message.tool_call_id)
            if waiting is not None:
                if not waiting.done():
                    waiting.set_result(answer)
            elif message.tool_call_id not in self.waits.claimed:
                self.waits.early[message.tool_call_id] = answer
            frontend.discard(message.tool_call_id)
        still: list[str] = []
        for call_id, future in self.waits.approvals.items():
            if not future.done():
                still.append(
                    f"the approval of call {call_id} (interrupt {approval_interrupt_id(call_id)})"
                )
        for call_id, waiting in self.waits.results.items():
            if not waiting.done():
                still.append(f"the result of frontend tool call {call_id} (a tool message)")
        return still


def _approved(payload: Any) -> bool:
    """Whether a resume payload says yes: ``true`` or ``{"approved": true}``."""
    if payload is True:
        return True
    return isinstance(payload, dict) and payload.get("approved") is True
