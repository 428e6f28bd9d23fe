"""Which errors ending a durable card run are its cancel: DBOS's cancellation, a task the worker
stopped for a cancel, and a workflow lost to a cancel while a checkpoint was being recorded
(DBOS's "no longer owned by this execution"), which the database tells apart from a takeover by
another execution."""

from __future__ import annotations

import asyncio

import pytest

import loopkit.durable.run as durable_run
from loopkit.cards.durable import is_cancel, learn_cancel
from loopkit.durable.run import DurableRun


class DBOSWorkflowConflictIDError(BaseException):
    """Stands in for DBOS's (a BaseException, known by name as loopkit knows it)."""


class DBOSWorkflowCancelledError(Exception):
    """Stands in for DBOS's cancellation."""


@pytest.mark.parametrize("cancelled_there", [True, False])
async def test_a_lost_workflow_is_a_cancel_only_when_the_database_says_so(
    monkeypatch: pytest.MonkeyPatch, cancelled_there: bool
) -> None:
    asked: list[str] = []

    async def cancelled_in_database(workflow_id: str) -> bool:
        asked.append(workflow_id)
        return cancelled_there

    monkeypatch.setattr(durable_run, "cancelled_in_database", cancelled_in_database)
    durable = DurableRun(workflow_id="wf-1")
    error = DBOSWorkflowConflictIDError("Workflow wf-1 is no longer owned by this execution")
    assert not is_cancel(error, durable)  # not known before the database is asked
    await learn_cancel(error, durable)
    assert asked == ["wf-1"]
    assert is_cancel(error, durable) is cancelled_there
    assert durable.cancelled is cancelled_there


async def test_other_errors_do_not_ask_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    async def never(workflow_id: str) -> bool:
        raise AssertionError("asked")

    monkeypatch.setattr(durable_run, "cancelled_in_database", never)
    durable = DurableRun(workflow_id="wf-2")
    for error in (asyncio.CancelledError(), ValueError("x"), DBOSWorkflowCancelledError("c")):
        await learn_cancel(error, durable)
    assert not is_cancel(asyncio.CancelledError(), durable)  # a stop, resumed later
    assert is_cancel(DBOSWorkflowCancelledError("c"), durable)
    assert not is_cancel(ValueError("x"), durable)
    durable.cancelled = True  # the worker saw the cancel and stopped the task
    assert is_cancel(asyncio.CancelledError(), durable)
    assert is_cancel(DBOSWorkflowConflictIDError("lost"), durable)
    assert not is_cancel(ValueError("x"), durable)
