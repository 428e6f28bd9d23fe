"""EarlyToolSource: a source opened in the background is entered, fails and closes as before."""

from __future__ import annotations

import asyncio

import pytest

from loopkit.abstractions.tools import Tool
from loopkit.cards.early_source import EarlyToolSource


class SlowSource:
    """A tool source that takes ``delay`` seconds to open (or fails) and records what happened;
    with a ``gate`` it opens only once the gate is set."""

    def __init__(self, delay: float, fail: bool = False, gate: asyncio.Event | None = None) -> None:
        self.delay = delay
        self.fail = fail
        self.gate = gate
        self.tools: list[Tool] = []
        self.events: list[str] = []
        self.opening = asyncio.Event()
        self.opened = asyncio.Event()

    async def __aenter__(self) -> SlowSource:
        self.events.append("opening")
        self.opening.set()
        await asyncio.sleep(self.delay)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise OSError("the server did not start")
        self.events.append("open")
        self.opened.set()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.events.append("closed")


async def test_opening_overlaps_other_work_and_enter_waits_for_the_rest() -> None:
    # Shown by order, not by time: the opening finishes while the caller does other work and
    # nobody has entered yet; an entry before it has finished waits for it.
    gate = asyncio.Event()
    source = SlowSource(0, gate=gate)
    early = EarlyToolSource(source)
    early.start()
    await asyncio.wait_for(source.opening.wait(), 30)
    entering = asyncio.create_task(early.__aenter__())
    await asyncio.sleep(0.05)  # other set-up meanwhile; the entry is still waiting
    assert not entering.done() and source.events == ["opening"]
    gate.set()  # the rest of the opening
    assert await asyncio.wait_for(entering, 30) is early
    assert source.events == ["opening", "open"]
    assert early.tools is source.tools
    await early.__aexit__(None, None, None)
    assert source.events == ["opening", "open", "closed"]
    await early.aclose()  # entered: closing is the enterer's, nothing happens twice
    assert source.events.count("closed") == 1


async def test_an_opening_goes_on_in_the_background_before_anyone_enters() -> None:
    gate = asyncio.Event()
    source = SlowSource(0, gate=gate)
    early = EarlyToolSource(source)
    early.start()
    gate.set()  # the caller goes on with other work and never waits for the opening
    await asyncio.wait_for(source.opened.wait(), 30)
    assert source.events == ["opening", "open"]  # opened, and nobody has entered
    async with early:
        assert source.events == ["opening", "open"]
    assert source.events == ["opening", "open", "closed"]


async def test_an_opening_error_is_raised_where_the_source_is_entered() -> None:
    early = EarlyToolSource(SlowSource(0.01, fail=True))
    early.start()
    await asyncio.sleep(0.05)  # it failed meanwhile: nothing raised here
    with pytest.raises(OSError, match="the server did not start"):
        async with early:
            pass


@pytest.mark.parametrize("delay", [0.0, 0.5])
async def test_started_but_never_entered_is_closed(delay: float) -> None:
    source = SlowSource(delay)
    early = EarlyToolSource(source)
    early.start()
    await asyncio.sleep(0.05)
    await early.aclose()
    # opened by then: closed; still opening: the opening is stopped, nothing to close
    assert source.events == (["opening", "open", "closed"] if delay == 0 else ["opening"])
