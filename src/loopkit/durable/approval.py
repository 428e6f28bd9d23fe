"""A person's approval of a tool call, as a durable wait: it survives a restart of the process.

:class:`DurableApprover` is an ``approver=`` for :class:`~loopkit.agents.Agent` (with
``approval_required``) inside a durable workflow. For each call it is asked about it

1. writes an ``approval_requested`` run event (a line of the run log: ``number``, the call's
   ``name``, ``arguments`` and ``call_id``), once: a checkpoint;
2. waits for the answer, a DBOS message to the run on topic ``loopkit.approval.<number>``
   (``DBOS.recv``: the wait and its deadline are recorded in the database, so a worker stopped
   or killed meanwhile goes on waiting after the restart, and an answer sent while no process
   ran the run is read then);
3. writes an ``approval`` run event (``number``, ``approved``, ``by``, ``note``), once: a
   checkpoint, and returns the decision. No answer within ``timeout_s`` is a refusal.

A front-end answers with :func:`send_approval` (any process on the same database: the board,
the Slack bot); the first answer to a number counts, later ones are dropped. Numbers count the
approvals asked in the run (1, 2, ...), the same on a replay.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopkit.abstractions.content import FunctionCallContent
from loopkit.durable.errors import DurableError
from loopkit.durable.run import current_durable_run, durable_step
from loopkit.run_context import current_run

__all__ = [
    "APPROVAL_ANSWER_STEP",
    "APPROVAL_ASK_STEP",
    "ApprovalAnswer",
    "DurableApprover",
    "approval_topic",
    "send_approval",
]

#: Checkpoints of one approval: asked (its event written), answered (its event written).
APPROVAL_ASK_STEP = "loopkit.approval.ask"
APPROVAL_ANSWER_STEP = "loopkit.approval.answer"
#: A day: a call waits this long for a person by default.
DEFAULT_TIMEOUT_S = 24 * 3600.0


def approval_topic(number: int) -> str:
    """The DBOS message topic of a run's approval ``number``."""
    return f"loopkit.approval.{number}"


class ApprovalAnswer(BaseModel):
    """A person's answer to one approval (the message a front-end sends the run)."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    #: Who answered (a board login, ``slack:<user id>``).
    by: str = Field(min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=2000)


class DurableApprover:
    """Asks a person about each call, durably (see the module docstring). ``timeout_s``: how
    long a call waits for an answer before it is refused."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s: expected a number of seconds above 0, got {timeout_s}")
        self.timeout_s = timeout_s
        self._asked = 0

    async def __call__(self, call: FunctionCallContent) -> bool:
        from dbos import DBOS

        if current_durable_run() is None:
            raise DurableError(
                f"the call to {call.name} needs a person's approval, which a run can wait for "
                "only as a durable run (on the queue with python -m loopkit.worker, or with "
                "--durable); or remove the tool from approval_required"
            )
        self._asked += 1
        number = self._asked

        def ask() -> int:
            _emit(
                "approval_requested",
                number=number,
                name=call.name,
                arguments=call.arguments,
                call_id=call.call_id,
                timeout_s=self.timeout_s,
            )
            return number

        await durable_step(APPROVAL_ASK_STEP, ask)
        message = await DBOS.recv_async(approval_topic(number), timeout_seconds=self.timeout_s)
        answer = _answer(message, self.timeout_s)

        def answered() -> dict[str, Any]:
            _emit("approval", number=number, name=call.name, **answer.model_dump())
            return answer.model_dump()

        recorded = ApprovalAnswer.model_validate(await durable_step(APPROVAL_ANSWER_STEP, answered))
        return recorded.approved


def _answer(message: Any, timeout_s: float) -> ApprovalAnswer:
    if message is None:
        return ApprovalAnswer(
            approved=False, by="nobody", note=f"no answer within {timeout_s:g} s: refused"
        )
    try:
        return ApprovalAnswer.model_validate(message)
    except Exception:
        return ApprovalAnswer(approved=False, by="unknown", note="an unreadable answer: refused")


def _emit(kind: str, **data: Any) -> None:
    run = current_run()
    if run is not None:
        run.emit(kind, **data)


async def send_approval(
    run_id: str, number: int, *, approved: bool, by: str, note: str | None = None
) -> None:
    """Answer approval ``number`` of run ``run_id`` (the durable runtime started in this
    process). The first answer to a number counts; sending again changes nothing."""
    from dbos import DBOS

    answer = ApprovalAnswer(approved=approved, by=by, note=note)
    await DBOS.send_async(
        run_id,
        answer.model_dump(),
        topic=approval_topic(number),
        idempotency_key=f"{run_id}:approval:{number}",
    )
