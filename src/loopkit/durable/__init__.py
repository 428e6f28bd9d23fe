"""Durable runs: an agent run as a DBOS workflow whose model requests and tool calls are
checkpoints, so a run killed at any point resumes where it was (the ``durable`` extra).

- :class:`DurableRuntime`: this process's engine on a database (a SQLite file by default,
  PostgreSQL for many machines; ``LOOPKIT_DATABASE_URL``), the runs it holds, resuming one.
- :func:`durable_workflow`: registers an async function as a workflow; inside it,
  :class:`DurableChatClient` (around the model) and :class:`DurableTool` /
  :func:`durable_tools` make each request and call a checkpoint, :func:`durable_step` any other
  piece of work, and :class:`DurableRunLog` writes a resumed run's log without repeating it.
- A lost database: a run in progress waits for it; :class:`DatabaseUnavailableError`,
  :func:`is_database_unavailable` and :class:`Outage` let a long-running process ride it out.

Nothing here imports DBOS until it is used: ``import loopkit.durable`` is cheap and works without
the extra (using it then says how to install it). See ``docs/durable.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_NOTICE",
    "DatabaseUnavailableError",
    "DurableChatClient",
    "DurableError",
    "DurableReplayError",
    "DurableRun",
    "DurableRunLog",
    "DurableRuntime",
    "DurableTool",
    "Outage",
    "RunRecord",
    "StepRecord",
    "active_runs",
    "current_durable_run",
    "database_url",
    "durable_step",
    "durable_tools",
    "durable_workflow",
    "executor_alive",
    "is_database_unavailable",
    "process_executor_id",
]

_EXPORTS: dict[str, str] = {
    "DEFAULT_NOTICE": "loopkit.durable.run",
    "DurableRun": "loopkit.durable.run",
    "active_runs": "loopkit.durable.run",
    "current_durable_run": "loopkit.durable.run",
    "durable_step": "loopkit.durable.run",
    "durable_workflow": "loopkit.durable.run",
    "DurableChatClient": "loopkit.durable.steps",
    "DurableTool": "loopkit.durable.steps",
    "durable_tools": "loopkit.durable.steps",
    "DatabaseUnavailableError": "loopkit.durable.errors",
    "DurableError": "loopkit.durable.errors",
    "is_database_unavailable": "loopkit.durable.database",
    "Outage": "loopkit.durable.outage",
    "DurableReplayError": "loopkit.durable.errors",
    "DurableRunLog": "loopkit.durable.run_log",
    "DurableRuntime": "loopkit.durable.runtime",
    "database_url": "loopkit.durable.runtime",
    "executor_alive": "loopkit.durable.executors",
    "process_executor_id": "loopkit.durable.executors",
    "RunRecord": "loopkit.durable.records",
    "StepRecord": "loopkit.durable.records",
}

if TYPE_CHECKING:
    from loopkit.durable.database import is_database_unavailable
    from loopkit.durable.errors import DatabaseUnavailableError, DurableError, DurableReplayError
    from loopkit.durable.executors import executor_alive, process_executor_id
    from loopkit.durable.outage import Outage
    from loopkit.durable.records import RunRecord, StepRecord
    from loopkit.durable.run import (
        DEFAULT_NOTICE,
        DurableRun,
        active_runs,
        current_durable_run,
        durable_step,
        durable_workflow,
    )
    from loopkit.durable.run_log import DurableRunLog
    from loopkit.durable.runtime import DurableRuntime, database_url
    from loopkit.durable.steps import DurableChatClient, DurableTool, durable_tools
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
