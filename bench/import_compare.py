"""Import time of loopkit's core names (with and without ``RunLog``) for several source trees,
fresh interpreters interleaved, fastest and median of N: the way to compare a branch with main
on a shared, busy machine, where only runs taken side by side compare.

Run: ``.venv/bin/python bench/import_compare.py 15 branch=src main=../main/src``
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": "pass",
    # The floor under the core names: pydantic's BaseModel, and asyncio, which the loop needs.
    "from pydantic import BaseModel": "from pydantic import BaseModel",
    "BaseModel + asyncio": "from pydantic import BaseModel\nimport asyncio",
    "core names without RunLog": (
        "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient"
    ),
    "core names with RunLog": (
        "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog"
    ),
}


def main(argv: list[str]) -> None:
    """``argv``: the number of rounds, then ``name=path/to/src`` for each tree."""
    if len(argv) < 2 or not argv[0].isdigit() or not all("=" in a for a in argv[1:]):
        raise SystemExit("usage: import_compare.py ROUNDS NAME=SRC [NAME=SRC ...]")
    rounds = int(argv[0])
    trees = dict(a.split("=", 1) for a in argv[1:])
    times: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in CASES}
    for _ in range(rounds):
        for tree, src in trees.items():
            env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
            for case, code in CASES.items():
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], env=env, check=True)
                times[(tree, case)].append((time.perf_counter() - start) * 1000)
    for (tree, case), ms in times.items():
        print(
            f"{tree:>10}  {case:<28} fastest {min(ms):7.1f} ms  median {statistics.median(ms):7.1f}"
        )
    for tree in trees:
        run_log = min(times[(tree, "core names with RunLog")]) - min(
            times[(tree, "core names without RunLog")]
        )
        print(f"{tree:>10}  RunLog adds {run_log:.1f} ms (fastest runs)")


if __name__ == "__main__":
    main(sys.argv[1:])
