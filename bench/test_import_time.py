"""Import time: ``import loopkit`` beside the heavy libraries it must not drag in.

Each figure is the median wall time of fresh ``python -c ...`` subprocesses (interpreter start
included, so the bare interpreter is measured too and subtracted for the "import" column).
``import loopkit`` alone loads almost nothing (names load on first use); the second loopkit row
touches ``loopkit.ChatClientBuilder``, which loads the core (abstractions, pydantic, the
builder). litellm, mcp and pydantic are measured for scale. Target: ``import loopkit`` <= 150 ms.

Also asserted (a correctness check, not a timing one): importing loopkit and its core names
loads neither litellm nor mcp. Run: ``.venv/bin/python -m pytest bench/test_import_time.py -s -q``
(or ``.venv/bin/nox -s bench``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import pytest

RUNS = 10
HEAVY_RUNS = 3  # litellm takes seconds to import; three runs give a fair median
TARGET_MS = 150.0

CASES: list[tuple[str, str, int]] = [
    ("python (bare interpreter)", "pass", RUNS),
    ("import loopkit", "import loopkit", RUNS),
    (
        "import loopkit; loopkit.ChatClientBuilder",
        "import loopkit; loopkit.ChatClientBuilder",
        RUNS,
    ),
    (
        "loopkit core names (builder, tool, loop, run log)",
        "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog",
        RUNS,
    ),
    ("import pydantic", "import pydantic", RUNS),
    ("import mcp", "import mcp", HEAVY_RUNS),
    ("import litellm", "import litellm", HEAVY_RUNS),
]


def _run_ms(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def _median_ms(code: str, runs: int) -> float:
    _run_ms(code)  # warm the file-system cache and .pyc files
    return statistics.median(_run_ms(code) for _ in range(runs))


def test_loopkit_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys\n"
        "import loopkit\n"
        "from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog\n"
        "heavy = sorted(m for m in ('litellm', 'mcp', 'openai', 'loopkit_tools', 'loopkit_ui')"
        " if m in sys.modules)\n"
        "print(','.join(heavy))\n"
        "print(len(sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out[0] == "", f"importing loopkit's core loaded: {out[0]}"
    print(f"\n  modules loaded by loopkit's core names: {out[1]} (no litellm, mcp, openai)")


@pytest.mark.integration
def test_import_time() -> None:
    figures = {label: _median_ms(code, runs) for label, code, runs in CASES}
    bare = figures["python (bare interpreter)"]
    loopkit = figures["import loopkit"]
    print(f"\nImport time: median wall time of fresh subprocesses ({sys.executable})")
    print(f"  {'what':<52} {'runs':>4} {'total ms':>9} {'import ms':>10}")
    for label, _, runs in CASES:
        total = figures[label]
        print(f"  {label:<52} {runs:>4} {total:9.1f} {total - bare:10.1f}")
    print(f"  target: import loopkit <= {TARGET_MS:.0f} ms total (incl. interpreter)")
    print(f"  import loopkit:          {loopkit:.1f} ms ({loopkit / TARGET_MS:.2f} of the target)")
    print(f"  import litellm / import loopkit: {figures['import litellm'] / loopkit:.0f}x")
    print(f"  import mcp / import loopkit:     {figures['import mcp'] / loopkit:.0f}x")
    # Sanity, not speed: every subprocess really ran and importing something costs more than
    # starting the interpreter.
    assert all(v > 0 for v in figures.values())
    assert figures["import litellm"] > bare
