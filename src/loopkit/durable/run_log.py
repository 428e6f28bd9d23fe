"""``DurableRunLog``: a run log that a resumed run does not write twice, nor leave without a start.

A resumed run replays its recorded checkpoints: the agent's loop runs again over them, and a plain
:class:`~loopkit.middleware.run_log.RunLog` would write their ``start``, ``round`` and ``tool``
lines a second time. This one writes nothing while the run replays (it still counts the rounds,
calls and tokens, so the totals and round numbers go on from where they were), and writes the
``interrupted`` and ``resumed`` lines and everything after the resume point as usual. Outside a
durable run it is a plain run log.

The stopped execution may have been killed anywhere, so at the resume point the log file says
what it wrote (read once):

- a ``start`` held back during the replay is written unless the file has the run's ``start``
  already (killed after the run's preparation and before its first request wrote it);
- a run whose ``result`` line is in the file already ended (killed after writing it, before its
  end was recorded): nothing more is written for it, so its ``result`` stays its last line.

So the log of every run, resumed or not, has exactly one ``start`` and one ``result``. A log on a
stream (not a file) cannot be read back: there a held ``start`` is written when the replay met no
model request (the first execution writes ``start`` just before its first one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit.durable.run import DurableRun, current_durable_run
from loopkit.middleware.run_log import RunLog
from loopkit.run_context import RunContext

__all__ = ["DurableRunLog", "logged_lines"]

#: Lines written even while replaying: they say where the replay is.
_ALWAYS = frozenset({"interrupted", "resumed"})
#: The lines whose presence in the file a resumed run checks.
_FRAMING = ("start", "result")


def logged_lines(path: Path, types: Sequence[str] = _FRAMING) -> set[tuple[str, str | None]]:
    """``(type, run id)`` of the lines of ``types`` in the log file at ``path`` (a line cut by
    a kill, or not JSON, is skipped; a missing file has none)."""
    found: set[tuple[str, str | None]] = set()
    wanted = [f'"type":"{t}"'.encode() for t in types]
    try:
        with path.open("rb") as f:
            for raw in f:
                if not any(w in raw for w in wanted):
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(line, dict) and line.get("type") in types:
                    run_id = line.get("run_id")
                    found.add((line["type"], run_id if isinstance(run_id, str) else None))
    except OSError:
        pass
    return found


class DurableRunLog(RunLog):
    """A :class:`~loopkit.middleware.run_log.RunLog` that skips the lines of replayed
    checkpoints (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # ``start`` lines met while replaying, by run id: written at the resume point if the
        # file lacks them.
        self._held: dict[str | None, tuple[RunContext | None, dict[str, Any], Sequence[str] | None]]
        self._held = {}
        # What the stopped execution wrote (read at the resume point; None before).
        self._before: set[tuple[str, str | None]] | None = None

    def _write(
        self,
        run: RunContext | None,
        event_type: str,
        data: dict[str, Any],
        texts: Sequence[str] | None = None,
    ) -> None:
        durable = current_durable_run()
        if durable is None or not durable.resumed:
            super()._write(run, event_type, data, texts)
            return
        run_id = None if run is None else run.run_id
        if durable.replaying and event_type not in _ALWAYS:
            if event_type == "start":
                self._held.setdefault(run_id, (run, data, texts))
            return
        before = self._read_before(durable)
        if ("result", run_id) in before:
            return  # the run ended before the resume: its result stays its last line
        if self._held:
            self._write_held_starts(before)
        super()._write(run, event_type, data, texts)

    def _read_before(self, durable: DurableRun) -> set[tuple[str, str | None]]:
        if self._before is None:
            if self.path is not None:
                self._before = logged_lines(self.path)
            elif durable.replayed.get("model", 0):
                # A stream: a replayed request proves the first execution wrote its start.
                self._before = {("start", run_id) for run_id in self._held}
            else:
                self._before = set()
        return self._before

    def _write_held_starts(self, before: set[tuple[str, str | None]]) -> None:
        held, self._held = self._held, {}
        for run_id, (run, data, texts) in held.items():
            if ("start", run_id) not in before:
                super()._write(run, "start", data, texts)
