"""``RunContext``: what belongs to one run, not to the client that serves many.

A built client (a loop over a run log over a token budget over a model) is configured once and
serves many runs, concurrently too. What a run accumulates, its id, its usage and rounds, the tokens
its budget has counted, the events it emitted, lives in a :class:`RunContext`, reached through
:func:`current_run` from any middleware of the chain. An :class:`~loopkit.agents.Agent` opens one
per ``run()``; the function-invocation loop opens one for a top-level request made without an
agent, so a bare ``ChatClientBuilder`` pipeline gets per-request state too.

The context is carried by a :mod:`contextvars` variable, so each asyncio task (each concurrent
run) sees its own, and a child run (an agent called as a tool) sees its parent through
``parent``. Configuration stays on the middleware instances; only run state lives here.

Middleware keeps its own per-run state with :meth:`RunContext.state_for` (keyed by the middleware
instance), and reports what it did with :meth:`RunContext.emit` (``compaction``, ``fallback``,
``retry``, ...); the run log and the agent's event stream subscribe with
:meth:`RunContext.subscribe`. Middleware that wants to subscribe before the first request of a
run implements :class:`RunAware`; the agent (or the loop, for the clients below it) calls
``on_run_start`` once per run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from loopkit.abstractions.content import ChatMessage, UsageDetails

__all__ = [
    "RunAware",
    "RunContext",
    "RunEvent",
    "closing",
    "current_run",
    "new_run_id",
    "run_scope",
    "stream_in_run",
]

_T = TypeVar("_T")

_CURRENT: ContextVar[RunContext | None] = ContextVar("loopkit_current_run", default=None)


def new_run_id() -> str:
    """A fresh run id: 32 hex characters (128 random bits), unique across processes and
    machines. (``os.urandom`` directly: ``uuid.uuid4().hex`` costs twice as much, once per
    request of a bare pipeline.)"""
    return os.urandom(16).hex()


def _no_usage() -> UsageDetails:
    """A run's usage before its first request (the pydantic model loads when a run starts, not
    when this module is imported)."""
    from loopkit.abstractions.content import UsageDetails

    return UsageDetails()


@dataclass(frozen=True, slots=True)
class RunEvent:
    """Something a run did, as middleware reported it: ``type`` and its data."""

    run_id: str
    type: str
    data: dict[str, Any]


@runtime_checkable
class RunAware(Protocol):
    """Middleware that wants to know when a run starts (e.g. to subscribe to its events)."""

    def on_run_start(self, run: RunContext) -> None:
        """Called once when ``run`` starts, before its first request."""
        ...


@dataclass(eq=False)
class RunContext:
    """The state of one run. Create one with :func:`run_scope` (or :meth:`child`)."""

    run_id: str = field(default_factory=new_run_id)
    #: The agent's (or the caller's) name for the run, for logs and traces.
    name: str | None = None
    #: The run that started this one (an agent used as a tool), if any.
    parent: RunContext | None = None
    #: Tokens used by every model request of this run (child runs count in their own context).
    usage: UsageDetails = field(default_factory=_no_usage)
    #: Model requests made in this run.
    rounds: int = 0
    #: Tool calls made in this run.
    tool_calls: int = 0
    #: Child runs started from this run.
    child_runs: int = 0
    #: ``time.monotonic()`` when the run started.
    started: float = field(default_factory=time.monotonic)
    #: Free-form values a caller attaches to the run (a card title, a session id, ...).
    metadata: dict[str, Any] = field(default_factory=dict)
    #: True for a run the function-invocation loop opened itself for one request of a bare
    #: pipeline (no agent around it): its caller frames the run (e.g. writes its own ``result``
    #: line), so the run log writes no ``run_end`` line for it.
    implicit: bool = False
    _loop: object | None = field(default=None, repr=False)
    _state: dict[int, tuple[object, Any]] = field(default_factory=dict, repr=False)
    _listeners: list[Callable[[RunEvent], None]] = field(default_factory=list, repr=False)
    _message_hooks: list[Callable[[list[ChatMessage]], Awaitable[None]]] = field(
        default_factory=list, repr=False
    )
    # clients already started (id -> client, kept alive so an id is not reused): separate from
    # _state, so a RunAware client's own state_for(self, ...) is its own
    _started: dict[int, object] = field(default_factory=dict, repr=False)

    @property
    def depth(self) -> int:
        """0 for a top-level run, 1 for its children, and so on."""
        depth, run = 0, self.parent
        while run is not None:
            depth, run = depth + 1, run.parent
        return depth

    @property
    def seconds(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def state_for(self, owner: object, factory: Callable[[], _T]) -> _T:
        """``owner``'s state in this run, made by ``factory()`` on first use.

        Keyed by the owner's identity (the owner is kept alive with the state, so an id is
        never reused for another object while the run lasts).
        """
        entry = self._state.get(id(owner))
        if entry is None or entry[0] is not owner:
            entry = (owner, factory())
            self._state[id(owner)] = entry
        value: _T = entry[1]
        return value

    def has_state(self, owner: object) -> bool:
        """Whether ``owner`` has made its state in this run already."""
        entry = self._state.get(id(owner))
        return entry is not None and entry[0] is owner

    def subscribe(self, listener: Callable[[RunEvent], None]) -> Callable[[], None]:
        """Call ``listener(event)`` for every event of this run; returns an unsubscribe."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, type: str, **data: Any) -> RunEvent:
        """Report an event of this run to its subscribers (in order); returns the event."""
        event = RunEvent(self.run_id, type, data)
        for listener in list(self._listeners):
            listener(event)
        return event

    def on_messages(self, hook: Callable[[list[ChatMessage]], Awaitable[None]]) -> None:
        """Await ``hook(messages)`` each time the run's conversation grows by a complete step:
        an assistant message with its calls *and* their results, or the final answer (a session
        stores them as they come, never a call without its result)."""
        self._message_hooks.append(hook)

    async def messages_added(self, messages: Sequence[ChatMessage]) -> None:
        """Called by the loop after each complete step; awaits the hooks in order."""
        if not self._message_hooks:
            return
        batch = list(messages)
        for hook in list(self._message_hooks):
            await hook(batch)

    def claim(self, loop: object) -> bool:
        """Whether ``loop`` (a function-invocation loop) serves this run: True for the first loop
        that asks and for it again (an agent's output retries), False for any other loop, e.g.
        a bare pipeline called from inside a tool, which then opens a child run of its own so
        its rounds, usage and messages never mix with this run's."""
        if self._loop is None:
            self._loop = loop
            return True
        return self._loop is loop

    def start_middleware(self, clients: object) -> None:
        """Call ``on_run_start(self)`` once per run on each :class:`RunAware` client in the
        chain that starts at ``clients`` (following ``inner``)."""
        client: object | None = clients
        while client is not None:
            # getattr, not isinstance(client, RunAware): a runtime protocol check costs ~10 us
            # a client, and this runs once per request of a bare pipeline.
            start = getattr(client, "on_run_start", None)
            if start is not None and self._started.get(id(client)) is not client:
                self._started[id(client)] = client
                start(self)
            client = getattr(client, "inner", None)

    def child(self, name: str | None = None, **metadata: Any) -> RunContext:
        """A new run whose parent is this one (counted in :attr:`child_runs`)."""
        self.child_runs += 1
        return RunContext(name=name, parent=self, metadata=dict(metadata))

    @property
    def root(self) -> RunContext:
        """The top-level run this one descends from (itself when it has no parent)."""
        run = self
        while run.parent is not None:
            run = run.parent
        return run


def _started() -> bool:
    return True


def current_run() -> RunContext | None:
    """The run the calling task is in, or None outside any run."""
    return _CURRENT.get()


@contextlib.contextmanager
def run_scope(run: RunContext | None = None, **fields: Any) -> Iterator[RunContext]:
    """Make ``run`` (or a new :class:`RunContext` built from ``fields``) the current run for the
    ``with`` block, then restore the previous one."""
    if run is None:
        run = RunContext(**fields)
    elif fields:
        raise TypeError("run_scope() takes a RunContext or the fields of a new one, not both")
    token = _CURRENT.set(run)
    try:
        yield run
    finally:
        _CURRENT.reset(token)


async def stream_in_run(run: RunContext, stream: AsyncIterator[_T]) -> AsyncIterator[_T]:
    """Yield the items of ``stream``, advancing it with ``run`` as the current run.

    The run is current only while ``stream`` computes its next item (so the middleware and
    tools it drives see it), never while the consumer handles an item: a consumer that starts
    another run between two items starts a run of its own, not a child of this one. An async
    generator that set the run for its whole life would leak it into the consumer's code.
    """
    try:
        while True:
            token = _CURRENT.set(run)
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                return
            finally:
                _CURRENT.reset(token)
            yield item
    finally:
        token = _CURRENT.set(run)
        try:
            await _aclose(stream)
        finally:
            _CURRENT.reset(token)


async def _aclose(stream: object) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


@contextlib.asynccontextmanager
async def closing(stream: AsyncIterator[_T]) -> AsyncIterator[AsyncIterator[_T]]:
    """``async with closing(stream) as s: async for x in s: ...`` closes ``stream`` (if it can
    be closed) however the block ends. ``async for`` alone leaves an async generator suspended
    when the loop is left early (a ``break``, an exception, the consumer's own generator being
    closed), so its ``finally`` blocks would run only when it is garbage-collected."""
    try:
        yield stream
    finally:
        await _aclose(stream)
