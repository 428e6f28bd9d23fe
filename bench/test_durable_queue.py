"""Queue throughput: 50 tiny durable runs through 2 worker processes on PostgreSQL.

Two ``durable_queue_worker.py`` processes (each takes one run at a time from ``bench.queue``, as
``python -m loopkit.worker`` does with card runs, polling the queue every 0.1 s) share one
private PostgreSQL cluster; this process enqueues 50 tiny runs (3 checkpoints each: a model
request, a tool call, the final request) at once and waits for all. Printed: runs per second
(from the first enqueue to the last end), and the latency from enqueue to start (min: a run
that found a worker idle; median, p90, max: the rest waited behind earlier runs). Checked: 50 runs, each ended once, both workers took work. No timing is asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("dbos")

HERE = Path(__file__).parent
RUNS = 50


async def enqueue_and_wait(database: str) -> tuple[float, list[float], dict[str, int]]:
    from dbos import DBOS

    from loopkit.durable import DurableRuntime

    async with DurableRuntime(database, log_level="ERROR"):  # listens to no shared queue
        enqueued: dict[str, float] = {}
        start = time.time()
        handles = []
        for n in range(RUNS):
            run_id = uuid.uuid4().hex
            enqueued[run_id] = time.time()
            handles.append(
                await DBOS.enqueue_workflow_with_options_async(
                    {
                        "workflow_name": "bench.tiny",
                        "queue_name": "bench.queue",
                        "workflow_id": run_id,
                        "app_version": "loopkit-durable-1",
                    },
                    n,
                )
            )
        outputs = [await h.get_result() for h in handles]
    assert sorted(o["n"] for o in outputs) == list(range(RUNS))
    last_end = max(o["ended"] for o in outputs)
    latencies = [
        (o["started"] - enqueued[h.get_workflow_id()]) * 1000
        for o, h in zip(outputs, handles, strict=True)
    ]
    by_worker: dict[str, int] = {}
    for o in outputs:
        by_worker[o["worker"]] = by_worker.get(o["worker"], 0) + 1
    return RUNS / (last_end - start), latencies, by_worker


def test_queue_throughput_two_workers_postgresql() -> None:
    try:
        from tests.sessions.postgres import private_cluster
    except ImportError:
        pytest.skip("tests/sessions/postgres.py is not importable (run from the project root)")
    with private_cluster() as url:
        # Create DBOS's tables once before the workers race to (each would migrate).
        asyncio.run(_migrate(url))
        workers = [
            subprocess.Popen(
                [sys.executable, str(HERE / "durable_queue_worker.py"), url, name],
                stdout=subprocess.PIPE,
                text=True,
            )
            for name in ("w1", "w2")
        ]
        try:
            for w in workers:
                assert w.stdout is not None and w.stdout.readline().strip() == "ready"
            rate, latencies, by_worker = asyncio.run(enqueue_and_wait(url))
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=60)
    latencies.sort()
    print(f"\n{RUNS} tiny durable runs through 2 workers on PostgreSQL: {rate:.1f} runs/s")
    print(
        f"enqueue to start: min {latencies[0]:.0f} ms (an idle worker), "
        f"median {statistics.median(latencies):.0f} ms, "
        f"p90 {latencies[int(0.9 * len(latencies))]:.0f} ms, max {latencies[-1]:.0f} ms"
    )
    print(f"runs per worker: {by_worker}")
    assert sum(by_worker.values()) == RUNS and set(by_worker) == {"w1", "w2"}


async def _migrate(url: str) -> None:
    from loopkit.durable import DurableRuntime

    async with DurableRuntime(url, log_level="ERROR"):
        pass
