"""A :class:`loopkit.Agent` as the task of a ``pydantic_evals.Dataset`` (the ``evals`` extra).

pydantic-evals runs a task on each case's inputs and grades the output with its evaluators;
:func:`agent_task` makes that task from an agent: the case's inputs become the prompt (text as it
is, a pydantic model or other data as JSON, or your own ``prompt`` function), the run's typed
output is the case's output, and loopkit's side of the run is attached to the case: its run id
and run log (``loopkit.run_id``, ``loopkit.run_log`` attributes) and its usage as metrics
(``loopkit.input_tokens``, ``loopkit.output_tokens``, ``loopkit.cached_input_tokens``,
``loopkit.cache_creation_input_tokens``, ``loopkit.rounds``, ``loopkit.tool_calls``: the run's
own counts). pydantic-evals adds ``input_tokens``, ... of its own, summed over the spans'
``gen_ai.usage`` attributes: that counts the ``invoke_agent`` span's totals on top of its
``chat`` spans'. Build the agent with ``ChatClientBuilder(model).use_opentelemetry()`` and a
global OpenTelemetry SDK ``TracerProvider``: its ``invoke_agent`` / ``chat`` / ``execute_tool``
spans then land in each case's span tree, where pydantic-evals' span-based evaluators
(``HasMatchingSpan``) look. See docs/evals.md.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from loopkit.agents.agent import Agent
    from loopkit.agents.result import AgentRunResult

__all__ = ["agent_task", "prompt_from_inputs"]

InputsT = TypeVar("InputsT")
OutputT = TypeVar("OutputT")


def prompt_from_inputs(inputs: Any) -> str:
    """The prompt for a case's ``inputs``: text as it is, a pydantic model as its JSON, other
    data as JSON."""
    if isinstance(inputs, str):
        return inputs
    dump = getattr(inputs, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return json.dumps(inputs, default=str)


def _evals() -> Any:
    try:
        import pydantic_evals
    except ImportError:
        raise ImportError(
            "loopkit.evals.agent_task needs pydantic-evals: pip install 'loopkit[evals]'"
        ) from None
    return pydantic_evals


def agent_task(
    agent: Agent[OutputT],
    *,
    prompt: Callable[[Any], Any] | None = None,
    run_log: str | Path | None = None,
    metadata: dict[str, Any] | None = None,
) -> Callable[[Any], Awaitable[OutputT]]:
    """The task ``Dataset.evaluate`` runs: one run of ``agent`` per case (see the module
    docstring). ``prompt`` turns a case's inputs into the prompt (default
    :func:`prompt_from_inputs`); ``run_log``: the file the agent's run log writes (its
    ``use_run_log``), named on each case beside the run's id; ``metadata`` goes with each run."""
    make_prompt = prompt or prompt_from_inputs
    log = str(Path(run_log).resolve()) if run_log is not None else None

    async def run_agent(inputs: Any) -> OutputT:
        evals = _evals()
        result: AgentRunResult[OutputT] = await agent.run(
            make_prompt(inputs), metadata=dict(metadata or {})
        )
        evals.set_eval_attribute("loopkit.run_id", result.run_id)
        if log is not None:
            evals.set_eval_attribute("loopkit.run_log", log)
        if result.finish_reason is not None:
            evals.set_eval_attribute("loopkit.finish_reason", str(result.finish_reason))
        usage = result.usage
        for name, value in (
            ("input_tokens", usage.input_tokens),
            ("output_tokens", usage.output_tokens),
            ("cached_input_tokens", usage.cached_input_tokens),
            ("cache_creation_input_tokens", usage.cache_creation_input_tokens),
            ("rounds", result.rounds),
            ("tool_calls", result.tool_calls),
        ):
            evals.increment_eval_metric(f"loopkit.{name}", value)
        return result.output

    run_agent.__name__ = f"agent_task[{agent.name or 'agent'}]"
    return run_agent
