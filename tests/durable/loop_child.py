"""A durable agent loop in its own process, for the kill tests.

``start DB RUN_ID WORK_DIR ROUNDS [--hang model:K|tool:K]`` runs the loop as the durable workflow
``RUN_ID``: each round is one model request and one call of the ``work`` tool, the last request
answers ``RESULT: done``. The model and the tool append one line to ``WORK_DIR/model.log`` and
``WORK_DIR/tool.log`` per real execution (a replayed checkpoint writes nothing), so the test
counts what really ran. ``--hang`` makes the K-th request or call write ``WORK_DIR/hanging`` and
sleep, so the test can SIGKILL the process exactly there. ``resume DB RUN_ID WORK_DIR`` takes the
run over in a new process. Both print the workflow's output as one JSON line.

As a card run does, the workflow prepares (a checkpoint) before the loop and ends with a
``finish`` checkpoint that writes the log's ``result`` line; ``--hang prepared:1`` hangs after the
preparation's checkpoint (before the loop writes ``start``), ``--hang finish:1`` after the
``result`` line was written and before its checkpoint is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit import Agent, ChatMessage, ChatResponse, ChatRole, FunctionCallContent
from loopkit.abstractions.content import UsageDetails
from loopkit.abstractions.tools import FunctionTool
from loopkit.durable import (
    DurableChatClient,
    DurableRunLog,
    DurableRuntime,
    current_durable_run,
    durable_step,
    durable_tools,
    durable_workflow,
    process_executor_id,
)
from loopkit.middleware.run_log import RunLogChatClient

ARGS: argparse.Namespace
#: The workflow's own argument (a resumed process reads it from the database, not its command).
ROUNDS = 0


def _append(name: str, line: str) -> None:
    with (Path(ARGS.work_dir) / name).open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def _maybe_hang(kind: str, number: int) -> None:
    if ARGS.hang == f"{kind}:{number}":
        (Path(ARGS.work_dir) / "hanging").write_text(f"{kind}:{number}")
        time.sleep(3600)  # killed here


def reply(messages: Sequence[ChatMessage], _options: Any) -> ChatResponse:
    number = 1 + sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
    notices = sum(1 for m in messages if m.role == ChatRole.USER and "interrupted" in m.text)
    _append("model.log", json.dumps({"request": number, "notices": notices}))
    _maybe_hang("model", number)
    usage = UsageDetails(input_tokens=100, output_tokens=10)
    if number > ROUNDS:
        message = ChatMessage.from_text(ChatRole.ASSISTANT, "all rounds worked\nRESULT: done")
    else:
        call = FunctionCallContent(call_id=f"c{number}", name="work", arguments={"n": number})
        message = ChatMessage(role=ChatRole.ASSISTANT, contents=[call])
    return ChatResponse(messages=[message], usage=usage, model_id="counting")


def work(n: int) -> str:
    """Do the n-th piece of work."""
    _append("tool.log", str(n))
    _maybe_hang("tool", n)
    return f"piece {n} done"


@durable_workflow("tests.durable.loop")
async def loop_workflow(rounds: int) -> dict[str, Any]:
    from loopkit import FunctionChatClient

    global ROUNDS
    ROUNDS = rounds
    await durable_step("tests.prepare", lambda: {"prepared": True})
    _maybe_hang("prepared", 1)
    log = DurableRunLog(Path(ARGS.work_dir) / "run.jsonl")
    with log:
        durable = current_durable_run()
        assert durable is not None
        durable.on_event = lambda kind, data: log.write(kind, **data)
        agent = Agent(
            DurableChatClient(FunctionChatClient(reply)),
            tools=durable_tools([FunctionTool.from_function(work)]),
            middleware=[lambda inner: RunLogChatClient(inner, log)],
            max_rounds=rounds + 5,
        )
        result = await agent.run("do the work")

        def finish() -> str:
            log.result("done")
            _maybe_hang("finish", 1)
            return "finished"

        await durable_step("tests.finish", finish)
    return {"output": result.output, "rounds": result.rounds}


async def main() -> None:
    runtime = DurableRuntime(ARGS.db, executor_id=process_executor_id("test"), log_level="ERROR")
    async with runtime:
        if ARGS.mode == "start":
            from dbos import SetWorkflowID

            with SetWorkflowID(ARGS.run_id):
                output = await loop_workflow(ARGS.rounds)
        else:
            await runtime.resume(ARGS.run_id)
            record = await runtime.wait(ARGS.run_id)
            assert record is not None
            output = record.output
    print(json.dumps(output), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["start", "resume"])
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("work_dir")
    parser.add_argument("rounds", type=int, nargs="?", default=0)
    parser.add_argument("--hang")
    ARGS = parser.parse_args()
    asyncio.run(main())
