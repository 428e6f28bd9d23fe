"""A durable card run in its own process whose cancel lands after the model's final answer.

``python cancel_child.py DB WORK_DIR closing|finished|killed`` runs a card (``WORK_DIR/card.md``) with
:class:`~loopkit.cards.durable.DurableCardRunner` as the card-run workflow: a model that calls one
tool, then answers ``RESULT: done``. The cancel (DBOS's, as ``loopkit.runs cancel`` does it) is
made ``closing``: while the tool source closes after the final answer (before the end's
checkpoint), or ``finished``: after the end's checkpoint, before the workflow returns. Then it
tries to cancel again with :func:`~loopkit.cards.queue.cancel_card_run`, and prints one JSON
line: the run's record (state, reason) and what the second cancel said. ``killed`` hangs
after the end's checkpoint (``WORK_DIR/hanging``), for a SIGKILL there.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit import ChatMessage, ChatResponse, ChatRole, FunctionCallContent, FunctionChatClient
from loopkit.abstractions.tools import FunctionTool, Tool
from loopkit.cards import Card, CardState
from loopkit.cards.durable import (
    CARD_RUN_WORKFLOW,
    CardRunRequest,
    DurableCardRunner,
    DurableToolSource,
    get_card_run,
)
from loopkit.cards.queue import cancel_card_run
from loopkit.durable import DurableChatClient, DurableRunLog, DurableRuntime, durable_workflow
from loopkit.durable.errors import DurableError

DB, WORK, WHEN = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
RUN_ID = "cancel-run"


async def cancel_in_database() -> None:
    """As another process would: outside the workflow's context (a call made inside it would
    be one of its steps)."""
    import contextvars

    from dbos import DBOS

    loop = asyncio.get_running_loop()
    await loop.create_task(DBOS.cancel_workflow_async(RUN_ID), context=contextvars.Context())


def reply(messages: Sequence[ChatMessage], _options: Any) -> ChatResponse:
    if not any(m.role == ChatRole.ASSISTANT for m in messages):
        call = FunctionCallContent(call_id="c1", name="work", arguments={})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])
    return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok\nRESULT: done")])


def work() -> str:
    """Do the work."""
    return "worked"


class SlowToClose:
    """A tool source that is being closed when the cancel comes (``closing``)."""

    def __init__(self) -> None:
        self.tools: list[Tool] = [FunctionTool.from_function(work)]

    async def __aenter__(self) -> SlowToClose:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if WHEN == "closing":
            await cancel_in_database()


@durable_workflow(CARD_RUN_WORKFLOW)
async def card_run(request: dict[str, Any]) -> dict[str, Any]:
    card = Card.load(WORK / "card.md").save_state(CardState.IN_WORK)
    with DurableRunLog(WORK / "run.jsonl") as log:
        runner = DurableCardRunner(
            DurableChatClient(FunctionChatClient(reply)),
            instructions="work",
            sources=[DurableToolSource(SlowToClose())],
            log=log,
        )
        outcome = await runner.run(card)
    if WHEN == "finished":
        await cancel_in_database()
    if WHEN == "killed":  # the end is recorded; killed before the workflow's own end
        (WORK / "hanging").write_text("after the end's checkpoint")
        await asyncio.sleep(3600)
    return {
        "status": outcome.result.status,
        "card_state": outcome.card.state.value if outcome.card else "",
    }


async def main() -> None:
    from dbos import SetWorkflowID

    request = CardRunRequest(card=str(WORK / "card.md"), model="scripted", config={})
    async with DurableRuntime(DB, log_level="CRITICAL") as runtime:
        ended = "returned"
        try:
            with SetWorkflowID(RUN_ID):
                await card_run(request.model_dump(mode="json"))
        except BaseException as e:  # DBOS's cancellation is a BaseException
            ended = type(e).__name__
        record = await get_card_run(runtime, RUN_ID)
        assert record is not None
        try:
            await cancel_card_run(runtime, RUN_ID)
            again = "cancelled"
        except DurableError as e:
            again = str(e)
    print(json.dumps({"ended": ended, "state": record.state, "reason": record.reason,
                      "again": again}), flush=True)  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
