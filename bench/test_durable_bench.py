"""Durable runs: what a checkpoint costs a round, loopkit beside pydantic-ai's DBOS agent.

One script for both (bench/test_agent_overhead.py's): an instant model calls one async tool a
round for 60 rounds, then answers with text. Each framework runs it plainly and as a durable
DBOS workflow on the same database: loopkit's ``DurableChatClient`` + ``durable_tools`` inside
``durable_workflow`` (2 checkpoints a round: the model request and the tool call), pydantic-ai's
``DBOSDurability`` capability (pydantic-ai 2.x's successor of ``DBOSAgent``: its model requests
are DBOS steps; the run inside our own ``@DBOS.workflow``) with the tool decorated as a DBOS
step, as pydantic-ai's docs advise for tools with side effects. The checkpoint cost a round
is (durable - plain) / 60. SQLite (a file, WAL) always; PostgreSQL (a private cluster on a Unix
socket, fsync on) when the test machine has it.

Checked in every run: 61 model requests, the 60 tool results in order, the final text, and the
checkpoints DBOS recorded for the run. No timing is asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")
pytest.importorskip("pydantic_ai")

ROUNDS = 60
REPEATS = 7
TOOL = "tool_00"
FINAL = "all rounds done"


async def tool_00(x: int) -> str:
    """Format x."""
    return f"{TOOL}:{x}"


# --- models that answer from the conversation (stateless: a replay asks them nothing) -------


def loopkit_model() -> Any:
    from loopkit import ChatMessage, ChatResponse, ChatRole, FunctionCallContent, FunctionChatClient

    def reply(messages: Sequence[ChatMessage], _options: Any) -> Any:
        done = sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
        if done >= ROUNDS:
            return ChatMessage.from_text(ChatRole.ASSISTANT, FINAL)
        call = FunctionCallContent(call_id=f"c{done}", name=TOOL, arguments={"x": done})
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[call])])

    return FunctionChatClient(reply)


def pydantic_ai_model() -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def reply(messages: list[Any], _info: Any) -> ModelResponse:
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        if done >= ROUNDS:
            return ModelResponse(parts=[TextPart(content=FINAL)])
        return ModelResponse(
            parts=[ToolCallPart(tool_name=TOOL, args={"x": done}, tool_call_id=f"c{done}")]
        )

    return FunctionModel(reply)


# --- the four ways --------------------------------------------------------------------------


class Ways:
    """Both frameworks, plain and durable; the durable ones registered before DBOS starts."""

    def __init__(self) -> None:
        from dbos import DBOS
        from pydantic_ai import Agent as PAIAgent
        from pydantic_ai.durable_exec.dbos import DBOSDurability
        from pydantic_ai.usage import UsageLimits

        from loopkit import Agent
        from loopkit.abstractions.tools import FunctionTool
        from loopkit.durable import DurableChatClient, durable_tools, durable_workflow

        self.limits = UsageLimits(request_limit=ROUNDS + 10, tool_calls_limit=None)
        self.loopkit_plain = Agent(loopkit_model(), tools=[tool_00], max_rounds=ROUNDS + 5)
        durable_agent = Agent(
            DurableChatClient(loopkit_model()),
            tools=durable_tools([FunctionTool.from_function(tool_00)]),
            max_rounds=ROUNDS + 5,
        )

        @durable_workflow("bench.loopkit_loop")
        async def loopkit_loop(prompt: str) -> list[Any]:
            result = await durable_agent.run(prompt)
            return [result.output, _loopkit_results(result.new_messages)]

        self.loopkit_loop = loopkit_loop
        self.pai_plain = PAIAgent(pydantic_ai_model(), tools=[tool_00])
        step_tool = DBOS.step(name="bench.pai_tool")(tool_00)
        pai_agent = PAIAgent(
            pydantic_ai_model(),
            tools=[step_tool],
            name="bench_pai",
            capabilities=[DBOSDurability()],
        )
        limits = self.limits

        @DBOS.workflow(name="bench.pai_loop")
        async def pai_loop(prompt: str) -> list[Any]:
            result = await pai_agent.run(prompt, usage_limits=limits)
            return [str(result.output), _pai_results(result.all_messages())]

        self.pai_loop = pai_loop

    async def loopkit(self) -> tuple[str, list[str]]:
        result = await self.loopkit_plain.run("go")
        return result.output, _loopkit_results(result.new_messages)

    async def loopkit_durable(self) -> tuple[str, list[str]]:
        from dbos import SetWorkflowID

        with SetWorkflowID(uuid.uuid4().hex):
            output, results = await self.loopkit_loop("go")
        return output, results

    async def pydantic_ai(self) -> tuple[str, list[str]]:
        result = await self.pai_plain.run("go", usage_limits=self.limits)
        return str(result.output), _pai_results(result.all_messages())

    async def pydantic_ai_durable(self) -> tuple[str, list[str]]:
        from dbos import SetWorkflowID

        with SetWorkflowID(uuid.uuid4().hex):
            output, results = await self.pai_loop("go")
        return output, results


def _loopkit_results(messages: Sequence[Any]) -> list[str]:
    from loopkit import FunctionResultContent

    return [c.result for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


def _pai_results(messages: Sequence[Any]) -> list[str]:
    from pydantic_ai.messages import ToolReturnPart

    return [str(p.content) for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]


async def clocked(work: Callable[[], Awaitable[tuple[str, list[str]]]]) -> float:
    start = time.perf_counter()
    output, results = await work()
    elapsed = time.perf_counter() - start
    assert output == FINAL
    assert results == [f"{TOOL}:{i}" for i in range(ROUNDS)]
    return elapsed


async def measure(ways: Ways, database: str) -> dict[str, float]:
    from dbos import DBOS

    from loopkit.durable import DurableRuntime

    names = ["loopkit", "loopkit_durable", "pydantic_ai", "pydantic_ai_durable"]
    times: dict[str, list[float]] = {n: [] for n in names}
    counts: dict[str, int] = {}
    async with DurableRuntime(database, log_level="ERROR"):
        for name in names:  # warm up
            await clocked(getattr(ways, name))
        for _ in range(REPEATS):
            for name in names:
                times[name].append(await clocked(getattr(ways, name)))
        # Each durable run recorded its checkpoints: 61 model requests and 60 tool calls.
        for workflow, start in (("bench.loopkit_loop", 1), ("bench.pai_loop", 0)):
            runs = await DBOS.list_workflows_async(name=workflow, limit=1, sort_desc=True)
            steps = await DBOS.list_workflow_steps_async(runs[0].workflow_id)
            assert len(steps) >= start + 61 + 60, (workflow, len(steps))  # requests, calls
            counts[workflow] = len(steps)
    print(f"\ncheckpoints a run: {counts}")
    return {n: statistics.median(t) * 1000 / ROUNDS for n, t in times.items()}


def report(where: str, ms: dict[str, float]) -> None:
    lk = ms["loopkit_durable"] - ms["loopkit"]
    pai = ms["pydantic_ai_durable"] - ms["pydantic_ai"]
    print(f"\n{where}: ms a round, median of {REPEATS} runs of {ROUNDS} rounds")
    print(f"  {'':28}{'plain':>9}{'durable':>10}{'checkpoints':>13}")
    print(f"  {'loopkit':28}{ms['loopkit']:9.3f}{ms['loopkit_durable']:10.3f}{lk:13.3f}")
    print(
        f"  {'pydantic-ai DBOSDurability':28}{ms['pydantic_ai']:9.3f}"
        f"{ms['pydantic_ai_durable']:10.3f}{pai:13.3f}"
    )
    print(f"  checkpoint cost, loopkit / pydantic-ai: {lk / pai:.2f}")


def test_checkpoint_cost_per_round() -> None:
    ways = Ways()
    with tempfile.TemporaryDirectory() as folder:
        report("SQLite", asyncio.run(measure(ways, str(Path(folder) / "bench.sqlite"))))
    try:
        from tests.sessions.postgres import private_cluster
    except ImportError:
        return
    try:
        with private_cluster() as url:
            report("PostgreSQL", asyncio.run(measure(ways, url)))
    except pytest.skip.Exception:
        print("PostgreSQL: not installed here, skipped")
