"""``AgentStream``: what :meth:`Agent.run_stream <loopkit.agents.Agent.run_stream>` returns, an
async iterator of events that says how to use it when used as something else."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Generic, NoReturn, TypeVar

__all__ = ["AgentStream"]

T = TypeVar("T")


class AgentStream(AsyncIterator[T], Generic[T]):
    """The events of one streamed run: ``async for event in agent.run_stream(...)``.

    The run starts when the iteration does. ``async for`` iterates the run's own generator (no
    extra step per event); ``aclose()`` ends the run early
    (``contextlib.aclosing(agent.run_stream(...))``). A plain ``for`` or an ``await`` (code
    written for a synchronous or a non-streamed run) raise a ``TypeError`` that says what to
    write instead.
    """

    __slots__ = ("_events", "_start")

    def __init__(self, start: Callable[[], AsyncIterator[T]]) -> None:
        self._start: Callable[[], AsyncIterator[T]] | None = start
        self._events: AsyncIterator[T] | None = None

    def _generator(self) -> AsyncIterator[T]:
        if self._events is None:
            assert self._start is not None
            self._events, self._start = self._start(), None
        return self._events

    def __aiter__(self) -> AsyncIterator[T]:
        return self._generator()

    async def __anext__(self) -> T:
        return await self._generator().__anext__()

    async def aclose(self) -> None:
        """End the run (its model stream is closed, its run log says it ended early); a
        stream never iterated never starts its run."""
        if self._events is not None:
            aclose = getattr(self._events, "aclose", None)
            if aclose is not None:
                await aclose()
        self._start = None

    if not TYPE_CHECKING:  # for a type checker these mistakes stay errors

        def __iter__(self) -> NoReturn:
            raise TypeError(
                "agent.run_stream(...) is an async iterator: use `async for event in "
                "agent.run_stream(...)` inside an async function (or agent.run_sync(...) for "
                "the result without streaming)"
            )

        def __await__(self) -> NoReturn:
            raise TypeError(
                "agent.run_stream(...) is iterated, not awaited: `async for event in "
                "agent.run_stream(...)`; for the result alone, `await agent.run(...)`"
            )

    def __repr__(self) -> str:
        state = "not started" if self._events is None else "started"
        return f"<AgentStream {state}>"
