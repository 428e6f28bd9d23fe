"""A loopkit Agent as the task of a pydantic_evals.Dataset, against the real pydantic-evals.

pydantic-evals pins pydantic-ai-slim to its own version, which the dev extra's pin for the
benchmarks does not match, so it lives in an environment of its own, ``.venv-evals`` (made by
``scripts/setup.sh --tests``); tests/evals/library_check.py runs there and prints what
pydantic-evals' report says of each case.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.installed import import_or_unavailable, unavailable

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-evals" / "bin" / "python"


def test_an_agent_is_a_pydantic_evals_task(tmp_path: Path) -> None:
    if not PYTHON.exists():
        unavailable("the library evals' environment .venv-evals (loopkit[evals]) is missing")
    log = tmp_path / "runs.jsonl"
    done = subprocess.run(
        [str(PYTHON), str(ROOT / "tests" / "evals" / "library_check.py"), str(log)],
        capture_output=True, text=True, timeout=240, check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["failures"] == []
    paper, pens = report["cases"]["paper"], report["cases"]["pens"]
    # typed inputs and outputs: the Quote the agent returned, compared by EqualsExpected
    assert paper["output"] == {"item": "paper", "total": 7.5}
    assert paper["assertions"]["EqualsExpected"] is True
    assert pens["assertions"]["EqualsExpected"] is False  # the stand-in model is wrong there
    for case in (paper, pens):
        assert case["evaluator_failures"] == []
        # loopkit's spans feed pydantic-evals' span-based evaluator
        assert case["assertions"]["called the tool"] is True
        assert case["assertions"]["agent span"] is True
        # loopkit's usage and run log are on the case, and right
        assert case["assertions"]["tokens counted"] is True
        assert case["assertions"]["two rounds"] is True
        assert case["assertions"]["run logged"] is True
        assert case["metrics"]["loopkit.input_tokens"] == 240
        assert case["attributes"]["loopkit.run_log"] == str(log)
    assert paper["attributes"]["loopkit.run_id"] != pens["attributes"]["loopkit.run_id"]
    ids = {json.loads(line)["run_id"] for line in log.read_text().splitlines()}
    assert ids == {paper["attributes"]["loopkit.run_id"], pens["attributes"]["loopkit.run_id"]}


@pytest.mark.parametrize("module", ["pydantic_evals"])
def test_the_main_environment_keeps_the_benchmarks_pin(module: str) -> None:
    """The dev environment has pydantic-ai 2.68 (the benchmarks' peer) and no pydantic-evals:
    the adapter says how to install it instead of failing on import."""
    import asyncio

    from loopkit import Agent, ScriptedChatClient
    from loopkit.evals import agent_task

    import_or_unavailable("pydantic_ai", install="the dev extra")
    import pydantic_ai

    assert pydantic_ai.__version__ == "2.68.0"
    try:
        __import__(module)
    except ImportError:
        task = agent_task(Agent(ScriptedChatClient([{"text": "hi"}])))
        with pytest.raises(ImportError, match=r"pip install 'loopkit\[evals\]'"):
            asyncio.run(task("hello"))
    else:
        pytest.fail("pydantic-evals is installed in the dev environment: it pins pydantic-ai 2.62")
