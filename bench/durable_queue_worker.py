"""A bench worker: takes tiny durable runs from ``bench.queue``, one at a time, until SIGTERM.

Each run is a loopkit agent loop as a durable workflow (``bench.tiny``): one model request that
calls one tool, the tool call, a final request (3 checkpoints), with an instant scripted model.
It returns when it started (wall clock) and which worker ran it. Used by test_durable_queue.py.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import Any

from loopkit import (
    Agent,
    ChatMessage,
    ChatResponse,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
)
from loopkit.abstractions.tools import FunctionTool
from loopkit.durable import (
    DurableChatClient,
    DurableRuntime,
    durable_tools,
    durable_workflow,
    process_executor_id,
)

QUEUE = "bench.queue"
WORKFLOW = "bench.tiny"


def reply(messages: list[ChatMessage], _options: Any) -> Any:
    if any(m.role == ChatRole.TOOL for m in messages):
        return "done"
    call = FunctionCallContent(call_id="c1", name="echo", arguments={"x": 1})
    return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])


async def echo(x: int) -> str:
    """Echo x."""
    return str(x)


AGENT = Agent(
    DurableChatClient(FunctionChatClient(reply)),
    tools=durable_tools([FunctionTool.from_function(echo)]),
)


@durable_workflow(WORKFLOW)
async def tiny(n: int) -> dict[str, Any]:
    started = time.time()
    result = await AGENT.run(f"run {n}")
    assert result.output == "done"
    return {"n": n, "started": started, "ended": time.time(), "worker": NAME}


NAME = sys.argv[2] if len(sys.argv) > 2 else "w"


async def main(database: str) -> None:
    from dbos import DBOS

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    runtime = DurableRuntime(
        database, executor_id=process_executor_id(NAME), listen=[QUEUE], log_level="ERROR"
    )
    async with runtime:
        await DBOS.register_queue_async(QUEUE, worker_concurrency=1, polling_interval_sec=0.1)
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
