"""Import time of loopkit's core names, and import plus first use ("ready to work"), for
several source trees, fresh interpreters interleaved, fastest and median of N: the way to
compare a branch with main on a shared, busy machine, where only runs taken side by side compare.

Run: ``.venv/bin/python bench/import_compare.py 15 branch=src main=../main/src``
(``bench/test_import_time.py`` runs the same cases beside ``LOOPKIT_BENCH_BASELINE_SRC``.)

Bytecode is cached, as for an installed package: the interpreters write and read their ``.pyc``
files under a temporary ``PYTHONPYCACHEPREFIX`` (nothing is written into the trees), whatever
``PYTHONDONTWRITEBYTECODE`` says, and a warm-up round fills it. Without that, every run compiles
loopkit's sources again (a source tree with ``PYTHONDONTWRITEBYTECODE=1``), which no user sees.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

CORE_NAMES = "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog"

# Import plus first use: a tool, a client built with the loop and a run log to a temp file, one
# request with one tool call. Exits non-zero unless the answer and the log show the work done.
FIRST_USE = '''
import asyncio, json, pathlib, tempfile
from loopkit import ChatMessage, ChatOptions, ChatResponse, FunctionCallContent
from loopkit import FunctionChatClient

@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b

def model(messages, options):
    if len(messages) == 1:
        call = FunctionCallContent(call_id="c1", name="add", arguments={"a": 2, "b": 3})
        return ChatResponse(messages=[ChatMessage(role="assistant", contents=[call])])
    return "the sum is " + messages[-1].contents[0].result

with tempfile.TemporaryDirectory() as folder:
    path = pathlib.Path(folder) / "run.jsonl"
    client = (
        ChatClientBuilder(FunctionChatClient(model))
        .use_function_invocation()
        .use_run_log(RunLog(path))
        .build()
    )
    assert isinstance(client, FunctionInvokingChatClient)
    question = [ChatMessage.from_text("user", "add 2 and 3")]
    response = asyncio.run(client.get_response(question, ChatOptions(tools=[add])))
    lines = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    if response.text != "the sum is 5" or lines != ["start", "round", "tool", "round"]:
        raise SystemExit(f"the work was not done: {response.text!r}, {lines}")
'''

CASES = {
    "python -c pass": "pass",
    # The floor under the core names as they were: pydantic's BaseModel, and asyncio.
    "from pydantic import BaseModel": "from pydantic import BaseModel",
    "BaseModel + asyncio": "from pydantic import BaseModel\nimport asyncio",
    "core names without RunLog": (
        "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient"
    ),
    "core names with RunLog": CORE_NAMES,
    "core names + first use": CORE_NAMES + "\n" + FIRST_USE,
}

#: The two figures the issue asks for.
HEADLINES = ("core names with RunLog", "core names + first use")


def measure(
    rounds: int,
    trees: dict[str, str],
    cases: dict[str, str] = CASES,
    cpu: dict[tuple[str, str], list[float]] | None = None,
) -> dict[tuple[str, str], list[float]]:
    """ms of each case in each tree (``name -> src``), fresh interpreters, interleaved, after a
    warm-up round that fills a bytecode cache of their own. ``cpu``, when given, gets each
    run's CPU time in ms (user + system of the interpreter, from ``wait4``): what a busy
    machine disturbs less than the wall time."""
    times: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in cases}
    if cpu is not None:
        cpu.update({key: [] for key in times})
    with tempfile.TemporaryDirectory(prefix="loopkit-pyc-") as pycache:
        envs = {tree: tree_env(src, pycache) for tree, src in trees.items()}
        for round_no in range(rounds + 1):
            for tree, env in envs.items():
                for case, code in cases.items():
                    start = time.perf_counter()
                    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
                    _, status, usage = os.wait4(proc.pid, 0)
                    elapsed = (time.perf_counter() - start) * 1000
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    if proc.returncode:
                        raise subprocess.CalledProcessError(proc.returncode, code)
                    if round_no:  # round 0 warms the cache
                        times[(tree, case)].append(elapsed)
                        if cpu is not None:
                            used = (usage.ru_utime + usage.ru_stime) * 1000
                            cpu[(tree, case)].append(used)
    return times


def tree_env(src: str, pycache: str) -> dict[str, str]:
    """The environment of an interpreter importing loopkit from ``src``, bytecode cached under
    ``pycache`` (which mirrors each source file's absolute path, so trees never share a file)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONPATH=os.path.abspath(src), PYTHONPYCACHEPREFIX=pycache)


def main(argv: list[str]) -> None:
    """``argv``: the number of rounds, then ``name=path/to/src`` for each tree."""
    if len(argv) < 2 or not argv[0].isdigit() or not all("=" in a for a in argv[1:]):
        raise SystemExit("usage: import_compare.py ROUNDS NAME=SRC [NAME=SRC ...]")
    rounds = int(argv[0])
    trees = dict(a.split("=", 1) for a in argv[1:])
    cpu: dict[tuple[str, str], list[float]] = {}
    times = measure(rounds, trees, cpu=cpu)
    for (tree, case), ms in times.items():
        print(
            f"{tree:>10}  {case:<30} fastest {min(ms):7.1f} ms  median {statistics.median(ms):7.1f}"
            f"  CPU median {statistics.median(cpu[(tree, case)]):6.1f}"
        )
    for tree in trees:
        over = statistics.median(cpu[(tree, "core names with RunLog")]) - statistics.median(
            cpu[(tree, "python -c pass")]
        )
        print(f"{tree:>10}  core names with RunLog: {over:.1f} ms of CPU over a bare interpreter")
    for tree in trees:
        run_log = min(times[(tree, "core names with RunLog")]) - min(
            times[(tree, "core names without RunLog")]
        )
        first_use = min(times[(tree, "core names + first use")]) - min(
            times[(tree, "core names with RunLog")]
        )
        print(f"{tree:>10}  RunLog adds {run_log:.1f} ms, first use {first_use:.1f} ms (fastest)")
    names = list(trees)
    for other in names[1:]:
        for case in HEADLINES:
            ratio = min(times[(names[0], case)]) / min(times[(other, case)])
            print(f"{names[0]} / {other}, {case}: {ratio:.2f} (fastest runs)")


if __name__ == "__main__":
    main(sys.argv[1:])
