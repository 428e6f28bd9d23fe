"""One card run is one trace in a real trace backend: Arize Phoenix (its own environment,
.venv-phoenix, installed by scripts/setup.sh --tests) receives loopkit's spans over OTLP/HTTP,
sent the way the demo and the workers send them (``OTEL_EXPORTER_OTLP_ENDPOINT`` set:
``loopkit.tracing.traced_from_environment``), and its REST API gives them back: the agent's
``invoke_agent`` span at the root, a ``chat`` span per model request under it, an
``execute_tool`` span under the request that asked for it (a function tool and a tool of a real
MCP server), token usage and model names; the run log names the same trace (its ``trace``
line, what the board links with)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopkit import Card, CardState, RunLog, Script, ScriptedChatClient
from loopkit.cards import CardRunner, MCPToolSource, RunLimits
from loopkit.mcp import MCPServerConfig
from tests.installed import unavailable
from tests.mcp_client.helpers import SERVER_SCRIPT
from tests.runner.test_card_runner import CARD, FunctionTools

from .conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL = "openai/gpt-test-model"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    program = Path(os.environ.get("LOOPKIT_PHOENIX", ROOT / ".venv-phoenix" / "bin" / "phoenix"))
    if not program.exists():
        unavailable(f"Arize Phoenix is not installed at {program} (scripts/setup.sh --tests)")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port())}  # fmt: skip
    with (work / "phoenix.log").open("w") as log:
        process = subprocess.Popen([str(program), "serve"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a cold start under load takes a minute here
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, (work / "phoenix.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "Phoenix did not start in 300 s"
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _spans(url: str, trace_id: str, expected: int) -> list[dict[str, Any]]:
    """The trace's spans, once Phoenix has stored ``expected`` of them (it ingests in the
    background)."""
    deadline = time.monotonic() + 60
    while True:
        found = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}, timeout=10)
        found.raise_for_status()
        spans = [s for s in found.json()["data"] if s["context"]["trace_id"] == trace_id]
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


async def test_a_card_run_is_one_trace_in_phoenix(
    phoenix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "loopkit-traces-test")
    from loopkit.tracing import flush_traces, traced_from_environment

    card_path = tmp_path / "card.md"
    card_path.write_text(CARD, encoding="utf-8")
    notes: dict[str, str] = {}
    turns = [
        {"calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "expect": {"equals": "5"}}],
         "usage": {"input_tokens": 120, "output_tokens": 7}},
        {"calls": [{"name": "write_note", "arguments": {"text": "5"}}],
         "usage": {"input_tokens": 150, "output_tokens": 9}},
        {"text": "Wrote 5.\nRESULT: done", "usage": {"input_tokens": 170, "output_tokens": 11}},
    ]  # fmt: skip
    log_path = tmp_path / "run.jsonl"
    with RunLog(log_path) as log:
        runner = CardRunner(
            traced_from_environment(ScriptedChatClient(Script.model_validate({"turns": turns}))),
            instructions="Do the card.",
            sources=[FunctionTools(notes), MCPToolSource(MCPServerConfig(
                name="calc", command=[sys.executable, str(SERVER_SCRIPT), "stdio"]))],
            log=log,
            limits=RunLimits(),
            model_name=MODEL,
            name="developer",
        )  # fmt: skip
        outcome = await runner.run(Card.load(card_path))
    assert outcome.result.done and Card.load(card_path).state == CardState.DONE
    assert flush_traces()

    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    [trace_line] = [line for line in lines if line["type"] == "trace"]
    assert [line["type"] for line in lines].index("start") < lines.index(trace_line)
    trace_id = trace_line["data"]["trace_id"]

    spans = _spans(phoenix, trace_id, expected=6)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == [f"chat {MODEL}", "execute_tool add", "execute_tool write_note",
                               "invoke_agent developer"]  # fmt: skip
    [agent] = by_name["invoke_agent developer"]
    chats = sorted(by_name[f"chat {MODEL}"], key=lambda s: s["start_time"])
    assert len(chats) == 3 and len(spans) == 6
    # One trace: the agent's span is its root, the requests under it, each tool call under the
    # request that asked for it.
    assert agent["parent_id"] is None
    assert agent["context"]["span_id"] == trace_line["data"]["span_id"]
    assert all(c["parent_id"] == agent["context"]["span_id"] for c in chats)
    [add] = by_name["execute_tool add"]
    [note] = by_name["execute_tool write_note"]
    assert add["parent_id"] == chats[0]["context"]["span_id"]
    assert note["parent_id"] == chats[1]["context"]["span_id"]
    # Tokens and model names, per request and for the run.
    assert [c["attributes"]["gen_ai.usage.input_tokens"] for c in chats] == [120, 150, 170]
    assert [c["attributes"]["gen_ai.usage.output_tokens"] for c in chats] == [7, 9, 11]
    assert {c["attributes"]["gen_ai.request.model"] for c in chats} == {MODEL}
    assert agent["attributes"]["gen_ai.request.model"] == MODEL
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == 440
    assert agent["attributes"]["gen_ai.usage.output_tokens"] == 27
    assert agent["attributes"]["loopkit.run.id"] == outcome.run_id
    assert agent["attributes"]["loopkit.run.status"] == "ok"
    assert add["attributes"]["gen_ai.tool.name"] == "add"
