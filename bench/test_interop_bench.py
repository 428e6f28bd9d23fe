"""Interop costs (issue 23), printed, never asserted.

1. AG-UI event overhead per round: the same agent run (N rounds of one tool call, then text;
   an instant function model) consumed as ``agent.run_stream(...)`` directly (without a
   session, and with an ``InMemorySession`` as the app keeps one per thread), and as
   ``AGUIApp.run_events(...)`` with every event encoded to its SSE text (what the HTTP
   response writes), in one process. The difference to the run with its session, divided by
   the rounds, is what AG-UI's events cost a round (goal: at most 0.2 ms); the difference to
   the bare run is printed too (the session's deep copies are most of the rest).
2. A2A task round trip on 127.0.0.1: a2a-sdk's client sends a message and gets the completed
   task (one tool call, then the answer), against loopkit's ``to_a2a`` and pydantic-ai's
   ``fasta2a`` ``agent_to_a2a`` (its timestamps patched to be timezone-aware, inside the bench
   only: ``bench/interop_servers.py``), each served by uvicorn in a process of its own. A send
   that returns before the task ended (fasta2a answers ``submitted``) is followed by
   ``GetTask`` every 2 ms until the task has ended.

Run: ``.venv/bin/python -m pytest bench/test_interop_bench.py -s -q -p no:cacheprovider``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROUNDS = 60
REPEATS = 15
BENCH = Path(__file__).resolve().parent


def _load() -> str:
    return (
        Path("/proc/loadavg").read_text().split(" ")[0] if Path("/proc/loadavg").exists() else "?"
    )


def _agent() -> Any:
    from loopkit import Agent, ChatMessage, FunctionCallContent, FunctionChatClient

    def model(messages: list[ChatMessage], options: Any) -> Any:
        done = sum(1 for m in messages if m.role == "tool")
        if done >= ROUNDS:
            return "All done."
        call = FunctionCallContent(call_id=f"c{done}", name="step", arguments={"n": done})
        return ChatMessage(role="assistant", contents=[call])

    async def step(n: int) -> str:
        """One step."""
        return f"step {n} done"

    return Agent(FunctionChatClient(model), name="bench", tools=[step], max_rounds=ROUNDS + 5)


async def _direct(agent: Any, session: Any = None) -> float:
    started = time.perf_counter()
    count = 0
    async for _ in agent.run_stream("go", session=session):
        count += 1
    elapsed = time.perf_counter() - started
    assert count >= ROUNDS * 3
    return elapsed


async def _ag_ui(app: Any, n: int) -> float:
    from ag_ui.core import RunAgentInput, UserMessage
    from ag_ui.encoder import EventEncoder

    encoder = EventEncoder()
    run = RunAgentInput(
        thread_id=f"t{n}", run_id=f"r{n}", messages=[UserMessage(id="u", content="go")]
    )
    started = time.perf_counter()
    sent = []
    async for event in app.run_events(run):
        sent.append(encoder.encode(event))
    elapsed = time.perf_counter() - started
    assert '"RUN_FINISHED"' in sent[-1] and len(sent) > ROUNDS * 4
    return elapsed


def test_ag_ui_overhead_per_round() -> None:
    from loopkit.interop import AGUIApp

    agent = _agent()
    app = AGUIApp(agent)

    from loopkit import InMemorySession

    async def measure() -> tuple[list[float], list[float], list[float]]:
        await _direct(agent)
        await _direct(agent, InMemorySession("warm"))
        await _ag_ui(app, -1)  # warm up all three
        plain: list[float] = []
        direct: list[float] = []
        served: list[float] = []
        for n in range(REPEATS):
            gc.collect()
            plain.append(await _direct(agent))
            gc.collect()
            direct.append(await _direct(agent, InMemorySession(f"s{n}")))
            gc.collect()
            served.append(await _ag_ui(app, n))
        return plain, direct, served

    plain, direct, served = asyncio.run(measure())
    p = statistics.median(plain)
    d, s = statistics.median(direct), statistics.median(served)
    per_round = (s - d) / ROUNDS * 1000
    print(f"\nAG-UI, {ROUNDS} rounds, median of {REPEATS} (load {_load()}):")
    print(
        f"  agent.run_stream, no session         {p * 1000:8.2f} ms  ({p / ROUNDS * 1000:.3f} ms a round)"
    )
    print(
        f"  agent.run_stream, InMemorySession    {d * 1000:8.2f} ms  ({d / ROUNDS * 1000:.3f} ms a round)"
    )
    print(
        f"  AGUIApp.run_events + SSE text        {s * 1000:8.2f} ms  ({s / ROUNDS * 1000:.3f} ms a round)"
    )
    print(
        f"  AG-UI events a round (vs the same run with its session)  {per_round:6.3f} ms  (goal <= 0.2)"
    )
    print(
        f"  AG-UI a round, thread session included (vs no session)   {(s - p) / ROUNDS * 1000:6.3f} ms"
    )


def _serve(kind: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, str(BENCH / "interop_servers.py"), kind],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://"), f"{kind} server did not start"
    return process, url


async def _round_trips(url: str, count: int) -> list[float]:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.helpers import new_text_message
    from a2a.types.a2a_pb2 import GetTaskRequest, Role, SendMessageRequest, TaskState

    done = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED}
    async with httpx.AsyncClient(timeout=30) as http:
        client = await ClientFactory(
            ClientConfig(streaming=False, httpx_client=http)
        ).create_from_url(url)
        times: list[float] = []
        for _ in range(count):
            message = new_text_message("Weather in Oslo?", role=Role.ROLE_USER)
            started = time.perf_counter()
            task = None
            async for response in client.send_message(SendMessageRequest(message=message)):
                task = response.task
            assert task is not None
            while task.status.state not in done:
                await asyncio.sleep(0.002)
                task = await client.get_task(GetTaskRequest(id=task.id))
            times.append(time.perf_counter() - started)
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            text = [p.text for a in task.artifacts for p in a.parts if p.HasField("text")]
            assert "It is 18 C in Oslo." in text, (url, task)
        return times


def test_a2a_task_round_trip() -> None:
    pytest.importorskip("fasta2a")
    servers = {kind: _serve(kind) for kind in ("loopkit", "fasta2a")}
    try:
        results: dict[str, list[float]] = {k: [] for k in servers}
        for _, url in servers.values():
            asyncio.run(_round_trips(url, 5))  # warm up
        for _ in range(4):  # interleaved
            for kind, (_, url) in servers.items():
                results[kind] += asyncio.run(_round_trips(url, 10))
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=30)
    lk, fa = statistics.median(results["loopkit"]), statistics.median(results["fasta2a"])
    print(
        f"\nA2A task round trip on 127.0.0.1, median of {len(results['loopkit'])} (load {_load()}):"
    )
    print(f"  loopkit to_a2a            {lk * 1000:7.2f} ms")
    print(
        f"  pydantic-ai agent_to_a2a  {fa * 1000:7.2f} ms  (fasta2a, aware timestamps patched in)"
    )
    print(f"  ratio fasta2a / loopkit   {fa / lk:7.2f}x")
