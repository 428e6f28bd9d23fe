"""Loop overhead as the history grows: 10, 60, 300 and 1,000 rounds, loopkit beside its peers.

The script of ``test_loop_overhead.py`` (round ``i`` calls ``1 + i % 3`` of 15 async tools that
return at once, then a text answer), played for N rounds by each framework's instant scripted
model, replies built before the clock starts. Rows:

- loopkit: ``ChatClientBuilder(FunctionChatClient(...)).use_function_invocation(...)``;
- loopkit + demo stack: the same with the card runner's middleware below the loop: the run log
  (to a file), a 400,000-token budget and retries (each reply reports 100 input and 10 output
  tokens, so the budget and the run log count something; the usage is built with the replies,
  before the clock starts);
- pydantic-ai: ``Agent(FunctionModel(...))``;
- agent-framework (+ layers): ``FunctionInvocationLayer`` over a scripted ``BaseChatClient``,
  and the same with its shipped clients' middleware and telemetry layers.

Checked in every run: N + 1 model requests, every tool result equal to the expected string in
order, the final text. Each (framework, N) runs once on 10 rounds to warm up, then up to 7 times
(interleaved with the others) until its timed runs add up to ``BUDGET_S`` seconds, so pydantic-ai
runs once at 1,000 rounds. Speed is printed, never asserted. Run:
``.venv/bin/python -m pytest bench/test_loop_growth.py -s -q``.

With ``LOOPKIT_BENCH_BASELINE_SRC`` naming another source tree (e.g. the one before a change),
two more rows play the stack's script in child processes, one on that tree and one on this
tree, their runs interleaved with the others (the same checks), and the ratio of the two is
printed: a before/after measured side by side under the same load, each in a process that has
loaded nothing but loopkit (this process holds the peers too, whose heap makes Python's garbage
collections dearer as the history grows).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from test_loop_overhead import (  # the peer harness (bench/ is on sys.path under pytest)
    Call,
    PydanticAIScript,
    af_client_class,
    af_replies,
    af_results,
    calls_of_round,
    loopkit_replies,
    prebuilt,
    pydantic_ai_results,
    tool_functions,
)

SIZES = (10, 60, 300, 1000)
REPEATS = 7
BUDGET_S = 15.0  # seconds of timed runs per (framework, size), after which it stops repeating
FINAL_TEXT = "All done."
PROMPT = "Run the script."
STACK_GOAL_MS = 0.06  # ms a round with the demo's stack (issue 15)

Result = tuple[float, list[str], int, str]


def script(rounds: int) -> list[list[Call]]:
    return [calls_of_round(i) for i in range(rounds)]


def expected_results(rounds: Sequence[Sequence[Call]]) -> list[str]:
    return [f"{name}:{args['x']}" for r in rounds for _, name, args in r]


async def run_loopkit(rounds: list[list[Call]], *, stack: bool, log_dir: Path) -> Result:
    from loopkit import (
        ChatClientBuilder,
        ChatMessage,
        ChatOptions,
        ChatRole,
        FunctionChatClient,
        FunctionResultContent,
        FunctionTool,
        RunLog,
        UsageDetails,
    )

    built = loopkit_replies(rounds, FINAL_TEXT)
    if stack:  # usage is part of the reply, built before the clock starts like the rest of it
        for response in built:
            response.usage = UsageDetails(input_tokens=100, output_tokens=10)
    replies = iter(built)
    requests = 0

    def reply(messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        nonlocal requests
        requests += 1
        return next(replies)

    builder = ChatClientBuilder(FunctionChatClient(reply)).use_function_invocation(
        max_rounds=len(rounds) + 10, include_detailed_errors=True
    )
    log = RunLog(log_dir / f"run-{time.monotonic_ns()}.jsonl") if stack else None
    if log is not None:  # the card runner's chain below the loop: run log, budget, retries
        builder = builder.use_run_log(log).use_token_budget(400_000).use_retries()
    client = builder.build()
    options = ChatOptions(tools=prebuilt([FunctionTool(fn) for fn in tool_functions(False)]))
    start = time.perf_counter()
    response = await client.get_response([ChatMessage.from_text(ChatRole.USER, PROMPT)], options)
    elapsed = time.perf_counter() - start
    if log is not None:
        log.close()
    results = [
        c.result
        for m in response.messages
        for c in m.contents
        if isinstance(c, FunctionResultContent) and not c.error
    ]
    return elapsed, results, requests, response.text


async def run_pydantic_ai(rounds: list[list[Call]]) -> Result:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.usage import UsageLimits

    played = PydanticAIScript(rounds, FINAL_TEXT)
    agent = Agent(played.model(), tools=[Tool(fn, takes_ctx=False) for fn in tool_functions(False)])
    limits = UsageLimits(request_limit=len(rounds) + 10, tool_calls_limit=None)
    start = time.perf_counter()
    result = await agent.run(PROMPT, usage_limits=limits)
    elapsed = time.perf_counter() - start
    return elapsed, pydantic_ai_results(result.all_messages()), played.requests, str(result.output)


async def run_agent_framework(rounds: list[list[Call]], *, full_stack: bool) -> Result:
    from agent_framework import Content, Message, tool

    client = af_client_class(full_stack)(
        replies=af_replies(rounds, FINAL_TEXT),
        function_invocation_configuration={"max_iterations": len(rounds) + 10},
    )
    tools = [tool(fn) for fn in tool_functions(False)]
    start = time.perf_counter()
    response = await client.get_response(
        [Message(role="user", contents=[Content.from_text(PROMPT)])], options={"tools": tools}
    )
    elapsed = time.perf_counter() - start
    return elapsed, af_results(response.messages), client.requests, response.text


class BaselineStack:
    """The demo stack row on a source tree in a child process (this file with
    ``--serve-stack``, that tree first on the path), which plays one script each time it is
    asked."""

    def __init__(self, src: str) -> None:
        env = {**os.environ, "PYTHONPATH": src}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-stack"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        self.loopkit = self.process.stdout.readline().strip()  # where its loopkit came from
        assert self.loopkit.startswith(os.path.realpath(src)), self.loopkit

    async def run(self, rounds: list[list[Call]], log_dir: Path) -> Result:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{len(rounds)} {log_dir}\n")
        self.process.stdin.flush()
        elapsed, results, requests, text = json.loads(self.process.stdout.readline())
        return elapsed, results, requests, text

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def serve_stack() -> None:
    """The child of :class:`BaselineStack`: reads ``rounds log_dir`` lines, answers each with
    the JSON of one stack run."""
    import loopkit

    print(os.path.realpath(loopkit.__file__), flush=True)
    for request in sys.stdin:
        size, log_dir = request.split(" ", 1)
        result = asyncio.run(
            run_loopkit(script(int(size)), stack=True, log_dir=Path(log_dir.strip()))
        )
        print(json.dumps(result), flush=True)


Runner = Callable[[list[list[Call]], Path], Awaitable[Result]]
FRAMEWORKS: dict[str, Runner] = {
    "loopkit": lambda r, d: run_loopkit(r, stack=False, log_dir=d),
    "loopkit + demo stack": lambda r, d: run_loopkit(r, stack=True, log_dir=d),
    "pydantic-ai": lambda r, d: run_pydantic_ai(r),
    "agent-framework": lambda r, d: run_agent_framework(r, full_stack=False),
    "agent-framework+layers": lambda r, d: run_agent_framework(r, full_stack=True),
}


async def _measure(
    log_dir: Path, frameworks: dict[str, Runner]
) -> dict[tuple[str, int], list[float]]:
    times: dict[tuple[str, int], list[float]] = {}
    warm = script(10)
    for run in frameworks.values():
        await run(warm, log_dir)
    for size in SIZES:
        rounds = script(size)
        expected = expected_results(rounds)
        for rep in range(REPEATS):
            for name, run in frameworks.items():
                spent = times.setdefault((name, size), [])
                if rep and sum(spent) >= BUDGET_S:
                    continue
                gc.collect()
                elapsed, results, requests, text = await run(rounds, log_dir)
                # A broken benchmark must fail: every framework really played the whole script.
                assert requests == size + 1, f"{name}: {requests} model requests at {size} rounds"
                assert results == expected, f"{name}: wrong tool results at {size} rounds"
                assert text == FINAL_TEXT, f"{name}: final text {text!r}"
                spent.append(elapsed)
    return times


def _report(times: dict[tuple[str, int], list[float]], names: list[str]) -> None:
    per_round = {key: statistics.median(t) / key[1] * 1000 for key, t in times.items()}
    print("\nLoop overhead as the history grows: ms per round, median (runs)")
    print(f"  {'framework':<33}" + "".join(f"{n:>14}" for n in SIZES) + f"{'1000/10':>9}")
    for name in names:
        cells = "".join(f"{per_round[(name, n)]:9.4f} ({len(times[(name, n)])})" for n in SIZES)
        growth = per_round[(name, SIZES[-1])] / per_round[(name, SIZES[0])]
        print(f"  {name:<33}{cells}{growth:9.2f}")
    for mine in ("loopkit", "loopkit + demo stack"):
        for peer in ("pydantic-ai", "agent-framework", "agent-framework+layers"):
            ratios = "".join(f"{per_round[(mine, n)] / per_round[(peer, n)]:14.4f}" for n in SIZES)
            print(f"  {mine} / {peer:<24}{ratios}")
    if BASELINE in names:
        ratios = "".join(
            f"{per_round[(OWN_PROCESS, n)] / per_round[(BASELINE, n)]:14.4f}" for n in SIZES
        )
        fastest = "".join(
            f"{min(times[(OWN_PROCESS, n)]) / min(times[(BASELINE, n)]):14.4f}" for n in SIZES
        )
        print(f"  {'stack: this tree / baseline, median':<33}{ratios}")
        print(f"  {'stack: this tree / baseline, fastest':<33}{fastest}")
    stack = [per_round[("loopkit + demo stack", n)] for n in SIZES]
    print(
        "  demo stack, ms a round: "
        + ", ".join(f"{s:.4f}" for s in stack)
        + f" (goal <= {STACK_GOAL_MS})"
    )


STACK = "loopkit + demo stack"
OWN_PROCESS = "loopkit + demo stack (own process)"
BASELINE = "loopkit + demo stack (baseline)"


def test_loop_growth() -> None:
    frameworks = dict(FRAMEWORKS)
    baseline_src = os.environ.get("LOOPKIT_BENCH_BASELINE_SRC")
    children: list[BaselineStack] = []
    if baseline_src:
        children = [
            BaselineStack(str(Path(__file__).parents[1] / "src")),
            BaselineStack(baseline_src),
        ]
        frameworks[OWN_PROCESS] = children[0].run
        frameworks[BASELINE] = children[1].run
    try:
        with tempfile.TemporaryDirectory(prefix="loopkit-growth-") as folder:
            times = asyncio.run(_measure(Path(folder), frameworks))
    finally:
        for child in children:
            child.close()
    for child in children:
        print(f"\nchild process on {child.loopkit}")
    _report(times, list(frameworks))


if __name__ == "__main__" and sys.argv[1:] == ["--serve-stack"]:
    serve_stack()
