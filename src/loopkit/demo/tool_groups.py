"""What a role's tool groups are built from and as: :class:`GroupContext` (the run a group's
source is built for) and the small tool sources the demo assembles (:class:`StaticTools`,
:class:`SelectedTools`).

The builders of further groups (the ``id_fixer`` group's: :mod:`loopkit.demo.id_fixer_tools`)
take a :class:`GroupContext`; :data:`loopkit.demo.card_runner.GROUP_SOURCES` names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loopkit.abstractions.tools import Tool
from loopkit.cards.config import RunnerConfig
from loopkit.cards.roles import Role
from loopkit.cards.runner import ToolSource

if TYPE_CHECKING:
    from loopkit.middleware.run_log import RunLog

__all__ = ["GroupContext", "GroupSource", "SelectedTools", "StaticTools"]


class StaticTools:
    """Tools that need no opening, as a :class:`~loopkit.cards.ToolSource`; ``close`` is called
    when the run leaves it."""

    def __init__(self, tools: Sequence[Tool], close: Callable[[], None] | None = None) -> None:
        self.tools = list(tools)
        self._close = close

    async def __aenter__(self) -> StaticTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._close is not None:
            self._close()


class SelectedTools:
    """The tools of ``source`` that ``keep`` accepts (by name), as a ToolSource."""

    def __init__(self, source: ToolSource, keep: Callable[[str], bool]) -> None:
        self.source = source
        self.keep = keep
        self.tools: list[Tool] = []

    async def __aenter__(self) -> SelectedTools:
        await self.source.__aenter__()
        self.tools = [t for t in self.source.tools if self.keep(t.name)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.source.__aexit__(*exc)


@dataclass(frozen=True, slots=True)
class GroupContext:
    """What a tool group's source is built from in a run."""

    config: RunnerConfig
    role: Role
    #: The run's repository and its run folder (logs, reports, the memory's index).
    repo: Path
    run_dir: Path
    app_folder: str
    #: The run log (a subagent's child run writes its lines there too) and the transcript the
    #: scripted model plays (None for a real model; a subagent's own lies beside it).
    log: RunLog | None = None
    transcript: Path | None = None


#: A builder of one tool group's source for a run.
GroupSource = Callable[[GroupContext], ToolSource]
