"""EarlyToolSource: a source opened in the background is entered, fails and closes as before."""

from __future__ import annotations

import asyncio

import pytest

from loopkit.abstractions.tools import Tool
from loopkit.cards.early_source import EarlyToolSource


class SlowSource:
    """A tool source that takes ``delay`` seconds to open (or fails) and records what happened."""

    def __init__(self, delay: float, fail: bool = False) -> None:
        self.delay = delay
        self.fail = fail
        self.tools: list[Tool] = []
        self.events: list[str] = []

    async def __aenter__(self) -> SlowSource:
        self.events.append("opening")
        await asyncio.sleep(self.delay)
        if self.fail:
            raise OSError("the server did not start")
        self.events.append("open")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.events.append("closed")


async def test_opening_overlaps_other_work_and_enter_waits_for_the_rest() -> None:
    source = SlowSource(0.3)
    early = EarlyToolSource(source)
    began = asyncio.get_running_loop().time()
    early.start()
    await asyncio.sleep(0.2)  # other set-up meanwhile
    assert source.events == ["opening"]
    async with early:
        assert source.events == ["opening", "open"]
        assert early.tools is source.tools
    assert asyncio.get_running_loop().time() - began < 0.45  # 0.3 + 0.2 in series would be 0.5
    assert source.events == ["opening", "open", "closed"]
    await early.aclose()  # entered: closing is the enterer's, nothing happens twice
    assert source.events.count("closed") == 1


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
