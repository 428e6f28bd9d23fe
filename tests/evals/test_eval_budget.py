"""``--max-cost``: an eval of a priced model stops cleanly when its spend reaches the budget.

The model is ``anthropic/claude-sonnet-4-5`` through litellm's real HTTP path to a fake
Anthropic server on 127.0.0.1 (no key exists here: the fake stands in for Anthropic), answering with the card's
bundled transcript and a usage per request (cache reads and writes included). The price comes
from litellm's own table; the spend counts the running run's requests as they are checkpointed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo.helpers import ROOT, carrying
from tests.installed import import_or_unavailable

pytestmark = [pytest.mark.integration, pytest.mark.ui]
import_or_unavailable("dbos", install="loopkit[durable]")

CARD = ROOT / "examples" / "cards" / "total-ignores-the-discount.md"
MODEL = "anthropic/claude-sonnet-4-5"
BUDGET = 0.05


def test_the_budget_stops_the_eval_cleanly(tmp_path: Path) -> None:
    from loopkit import Card, CardState, Script
    from loopkit.demo.run import bundled_transcripts
    from loopkit.evals import price_for
    from loopkit.evals.graders import read_log
    from tests.demo.test_demo_litellm import fake_turns
    from tests.fakes.fake_llm_server import FakeLLMServer

    script = Script.load(bundled_transcripts()["total-ignores-the-discount"])
    with FakeLLMServer("anthropic") as server:
        server.script(fake_turns(script))
        suite = tmp_path / "suite.toml"
        suite.write_text(
            f'cards = ["{CARD}"]\nrepeat = 2\n[[configs]]\nname = "claude"\n'
            f'model = "{MODEL}"\napi_base = "{server.api_base}"\n'
        )
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdefghij",
               "EVAL_TEST_MARK": str(tmp_path)}  # fmt: skip
        env.pop("DISPLAY", None)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "loopkit.evals", str(suite), "--workers", "1",
                 "--max-cost", str(BUDGET), "--out", str(tmp_path / "out")],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400, check=False,
            )  # fmt: skip
        finally:
            for pid in carrying(str(tmp_path)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        requests = [r for r in server.requests if r.method == "POST"]
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    result = json.loads((tmp_path / "out" / "eval.json").read_text())
    assert result["status"].startswith(f"stopped: the budget of ${BUDGET:.2f} is reached"), output
    assert "budget" in done.stdout
    # stopped in the first case's develop run, long before its last request
    assert 3 <= len(requests) < len(script.turns), len(requests)
    first, second = result["cases"]
    assert first["status"] == second["status"] == "stopped"
    assert [r["role"] for r in first["runs"]] == ["develop"]
    run = first["runs"][0]
    lines = read_log(run["log_path"])
    assert lines, run["log_path"]  # valid JSON lines, written as the run went
    assert Card.load(Path(second["card_path"])).state == CardState.NEW  # never started
    # the cost is litellm's price of the run's tokens, cache reads and writes apart
    price = price_for(MODEL)
    assert result["configs"][0]["price"]["note"] == "litellm price table (claude-sonnet-4-5)"
    assert run["cached_input_tokens"] > 0 and run["cache_creation_input_tokens"] > 0
    assert run["cost"] == pytest.approx(price.cost(run))
    assert result["cases"][0]["cost"] == pytest.approx(run["cost"])
    # reached the budget, by less than the few requests between two looks at the spend
    assert BUDGET <= first["cost"] < 3 * BUDGET
    assert (tmp_path / "out" / "report.html").is_file()
    assert (tmp_path / "out" / "junit.xml").read_text().count("<skipped") == 2
    assert "0123456789abcdefghij" not in output + (tmp_path / "out" / "eval.json").read_text()
    # The running run was cancelled cleanly: its card Failed, its log ends cancelled + result.
    # Also when the cancel lands while a checkpoint is recorded (DBOS then takes the workflow
    # from the run, "no longer owned", instead of refusing the next checkpoint).
    assert [line["type"] for line in lines[-2:]] == ["cancelled", "result"], lines[-2:]
    assert lines[-1]["data"]["status"] == "cancelled"
    assert Card.load(Path(first["card_path"])).state == CardState.FAILED
