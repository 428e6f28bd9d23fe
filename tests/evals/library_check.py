"""Run by tests/evals/test_library_evals.py in .venv-evals (pydantic-evals, its own pin): a
loopkit Agent as the task of a pydantic_evals.Dataset, graded by pydantic-evals' own evaluators
(the output, a span of loopkit's tracing, loopkit's usage and run log). Prints one JSON object.

    .venv-evals/bin/python tests/evals/library_check.py RUN_LOG.jsonl
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected, Evaluator, EvaluatorContext, HasMatchingSpan

from loopkit import Agent, ChatClientBuilder, FunctionChatClient
from loopkit.abstractions.chat import ChatResponse
from loopkit.abstractions.content import (
    ChatMessage,
    FunctionCallContent,
    TextContent,
    UsageDetails,
)
from loopkit.evals import agent_task

# pydantic-evals reads each case's spans from the global SDK tracer provider.
trace.set_tracer_provider(TracerProvider())


class Order(BaseModel):
    item: str
    quantity: int
    unit_price: float


class Quote(BaseModel):
    item: str
    total: float


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def model(messages: list[ChatMessage], options: object) -> ChatResponse:
    """Stands in for a real model (with a provider's usage, cache reads included): asks the tool
    for quantity × price, then answers the quote as JSON (wrong for pens: one case fails)."""
    order = Order.model_validate_json(next(m.text for m in messages if m.role == "user"))
    results = [r for m in messages for r in m.function_results]
    usage = UsageDetails(input_tokens=120, output_tokens=15, cached_input_tokens=100)
    if not results:
        call = FunctionCallContent(
            call_id="c1",
            name="multiply",
            arguments={"a": order.quantity, "b": order.unit_price},
        )
        reply = ChatMessage(role="assistant", contents=[call])
    else:
        total = float(results[-1].result) + (1.0 if order.item == "pens" else 0.0)
        text = Quote(item=order.item, total=total).model_dump_json()
        reply = ChatMessage(role="assistant", contents=[TextContent(text=text)])
    return ChatResponse(messages=[reply], usage=usage, finish_reason="stop")


@dataclass
class UsedLoopkitsRun(Evaluator[Order, Quote]):
    """loopkit's side of the run is on the case: usage metrics and the run's lines in its log."""

    def evaluate(self, ctx: EvaluatorContext[Order, Quote]) -> dict[str, bool]:
        log = Path(ctx.attributes["loopkit.run_log"])
        run_id = ctx.attributes["loopkit.run_id"]
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        mine = [line for line in lines if line.get("run_id") == run_id]
        return {
            "tokens counted": ctx.metrics["loopkit.input_tokens"] == 240
            and ctx.metrics["loopkit.cached_input_tokens"] == 200
            and ctx.metrics["loopkit.output_tokens"] == 30,
            "two rounds": ctx.metrics["loopkit.rounds"] == 2
            and ctx.metrics["loopkit.tool_calls"] == 1,
            "run logged": {"start", "round", "tool", "run_end"} <= {line["type"] for line in mine},
        }


async def main(run_log: Path) -> None:
    agent = Agent(
        ChatClientBuilder(FunctionChatClient(model)).use_opentelemetry().use_run_log(run_log),
        tools=[multiply],
        output_type=Quote,
        name="quoter",
    )
    dataset = Dataset[Order, Quote, None](
        name="quotes",
        cases=[
            Case(
                name="paper",
                inputs=Order(item="paper", quantity=3, unit_price=2.5),
                expected_output=Quote(item="paper", total=7.5),
            ),
            Case(
                name="pens",
                inputs=Order(item="pens", quantity=10, unit_price=1.2),
                expected_output=Quote(item="pens", total=12.0),
            ),
        ],
        evaluators=[
            EqualsExpected(),
            HasMatchingSpan(
                query={"name_equals": "execute_tool multiply"}, evaluation_name="called the tool"
            ),
            HasMatchingSpan(
                query={"name_equals": "invoke_agent quoter"}, evaluation_name="agent span"
            ),
            UsedLoopkitsRun(),
        ],
    )
    report = await dataset.evaluate(agent_task(agent, run_log=run_log), progress=False)
    out = {}
    for case in report.cases:
        out[case.name] = {
            "output": case.output.model_dump(),
            "assertions": {name: result.value for name, result in case.assertions.items()},
            "metrics": case.metrics,
            "attributes": dict(case.attributes),
            "evaluator_failures": [str(f) for f in case.evaluator_failures],
        }
    print(json.dumps({"cases": out, "failures": [f.name for f in report.failures]}))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
