"""``DurableRunLog``: a run log that a resumed run does not write twice.

A resumed run replays its recorded checkpoints: the agent's loop runs again over them, and a plain
:class:`~loopkit.middleware.run_log.RunLog` would write their ``start``, ``round`` and ``tool``
lines a second time. This one writes nothing while the run replays (it still counts the rounds,
calls and tokens, so the totals and round numbers go on from where they were), and writes the
``interrupted`` and ``resumed`` lines and everything after the resume point as usual. Outside a
durable run it is a plain run log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopkit.durable.run import current_durable_run
from loopkit.middleware.run_log import RunLog
from loopkit.run_context import RunContext

__all__ = ["DurableRunLog"]

#: Lines written even while replaying: they say where the replay is.
_ALWAYS = frozenset({"interrupted", "resumed"})


class DurableRunLog(RunLog):
    """A :class:`~loopkit.middleware.run_log.RunLog` that skips the lines of replayed
    checkpoints (see the module docstring)."""

    def _write(
        self,
        run: RunContext | None,
        event_type: str,
        data: dict[str, Any],
        texts: Sequence[str] | None = None,
    ) -> None:
        durable = current_durable_run()
        if durable is not None and durable.replaying and event_type not in _ALWAYS:
            return
        super()._write(run, event_type, data, texts)
