"""A durable agent run whose tool call waits for a person's approval, in its own process.

``start DB RUN_ID WORK_DIR`` runs the workflow ``RUN_ID``: the model calls ``deploy`` (in
``approval_required``, with :class:`~loopkit.durable.approval.DurableApprover`), then answers
with what the call returned. The tool appends a line to ``WORK_DIR/tool.log`` each time it
really runs; the run log is ``WORK_DIR/run.jsonl``. ``resume DB RUN_ID WORK_DIR`` takes the run
over in a new process. ``answer DB RUN_ID NUMBER yes|no BY`` sends a person's answer from
another process. Each prints the workflow's output (or ``sent``) as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit import Agent, ChatMessage, ChatResponse, ChatRole, FunctionCallContent
from loopkit.abstractions.tools import FunctionTool
from loopkit.durable import (
    DurableChatClient,
    DurableRunLog,
    DurableRuntime,
    current_durable_run,
    durable_tools,
    durable_workflow,
    process_executor_id,
)
from loopkit.durable.approval import DurableApprover, send_approval
from loopkit.middleware.run_log import RunLogChatClient

ARGS: argparse.Namespace


def reply(messages: Sequence[ChatMessage], _options: Any) -> ChatResponse:
    results = [r for m in messages for r in m.function_results]
    if not results:
        call = FunctionCallContent(call_id="c1", name="deploy", arguments={"where": "staging"})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])
    text = f"deploy said: {results[-1].result}\nRESULT: done"
    return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)])


def deploy(where: str) -> str:
    """Deploy the app to ``where``."""
    with (Path(ARGS.work_dir) / "tool.log").open("a", encoding="utf-8") as f:
        f.write(where + "\n")
    return f"deployed to {where}"


@durable_workflow("tests.durable.approval")
async def approval_workflow() -> dict[str, Any]:
    from loopkit import FunctionChatClient

    with DurableRunLog(Path(ARGS.work_dir) / "run.jsonl") as log:
        durable = current_durable_run()
        assert durable is not None
        durable.on_event = lambda kind, data: log.write(kind, **data)
        agent = Agent(
            DurableChatClient(FunctionChatClient(reply)),
            tools=durable_tools([FunctionTool.from_function(deploy)]),
            middleware=[lambda inner: RunLogChatClient(inner, log)],
            approval_required=["deploy"],
            approver=DurableApprover(timeout_s=600),
        )
        result = await agent.run("deploy it")
    return {"output": result.output}


async def main() -> None:
    runtime = DurableRuntime(ARGS.db, executor_id=process_executor_id("test"), log_level="ERROR")
    async with runtime:
        if ARGS.mode == "answer":
            number, decision, by = ARGS.rest
            await send_approval(ARGS.run_id, int(number), approved=decision == "yes", by=by)
            print(json.dumps("sent"), flush=True)
            return
        if ARGS.mode == "start":
            from dbos import SetWorkflowID

            with SetWorkflowID(ARGS.run_id):
                output = await approval_workflow()
        else:
            await runtime.resume(ARGS.run_id)
            record = await runtime.wait(ARGS.run_id)
            assert record is not None
            output = record.output
    print(json.dumps(output), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["start", "resume", "answer"])
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("work_dir_or_number")
    parser.add_argument("rest", nargs="*")
    ARGS = parser.parse_args()
    if ARGS.mode == "answer":
        ARGS.rest = [ARGS.work_dir_or_number, *ARGS.rest]
    else:
        ARGS.work_dir = ARGS.work_dir_or_number
    asyncio.run(main())
