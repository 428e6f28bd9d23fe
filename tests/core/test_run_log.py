from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loopkit import ChatClientBuilder, RunLog, tool
from loopkit.middleware.run_log import redact

from .helpers import call, opts, script, user


@tool
def read_big() -> str:
    """Return a long text."""
    return "line\n" * 1000


def events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


async def test_events_in_order_with_round_and_tool_data(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "run.jsonl"
    log = RunLog(path)
    log.start(tools=["read_big"], model="scripted", limits={"max_rounds": 5})
    client = (
        ChatClientBuilder(
            script(
                {
                    "calls": [call("read_big")],
                    "usage": {"input_tokens": 100, "output_tokens": 5, "cached_input_tokens": 40},
                },
                {"text": "done\nRESULT: done", "usage": {"input_tokens": 300, "output_tokens": 9}},
            )
        )
        .use_function_invocation()
        .use_run_log(log)
        .build()
    )
    await client.get_response(user(), opts(read_big))
    log.result("done", None)
    log.close()
    ev = events(path.read_text())
    assert [e["type"] for e in ev] == ["start", "round", "tool", "round", "result"]
    assert ev[0]["data"] == {
        "model": "scripted",
        "tools": ["read_big"],
        "limits": {"max_rounds": 5},
    }
    r1 = ev[1]["data"]
    assert (r1["round"], r1["input_tokens"], r1["cached_input_tokens"], r1["calls"]) == (
        1,
        100,
        40,
        ["read_big"],
    )
    tool_ev = ev[2]["data"]
    assert tool_ev["name"] == "read_big" and tool_ev["arguments"] == {}
    # plain text, cut above 4,000 characters with a note that says so
    assert tool_ev["result"].startswith("line\nline\n")
    assert (
        "[cut: the result has 5000 characters, only the first 4000 are shown." in tool_ev["result"]
    )
    totals = ev[4]["data"]["totals"]
    assert (
        totals["rounds"],
        totals["tool_calls"],
        totals["input_tokens"],
        totals["output_tokens"],
        totals["cached_input_tokens"],
    ) == (2, 1, 400, 14, 40)
    assert ev[4]["data"]["status"] == "done"


async def test_start_is_written_automatically_with_the_tool_list() -> None:
    buf = io.StringIO()
    client = ChatClientBuilder(script({"text": "hi"})).use_run_log(buf).build()
    await client.get_response(user(), opts(read_big))
    ev = events(buf.getvalue())
    assert ev[0]["type"] == "start" and ev[0]["data"]["tools"] == ["read_big"]


async def test_failed_request_is_logged_and_lines_stay_valid(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    client = ChatClientBuilder(script({"text": "only one turn"})).use_run_log(path).build()
    await client.get_response(user(), opts())
    with pytest.raises(Exception, match="only 1 turns"):
        await client.get_response(user(), opts())
    ev = events(path.read_text())
    assert ev[-1]["type"] == "error"
    assert "ScriptDivergedError" in ev[-1]["data"]["message"]


def test_secrets_never_reach_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnop")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_1234567890")
    buf = io.StringIO()
    log = RunLog(buf)
    log.error(
        "auth failed for key sk-ant-api03-abcdefghijklmnop and tok_1234567890, "
        "header Bearer abcdefghijklmnopqrstuvwxyz, other sk-proj-ABCDEFGHIJKLMNOPQRST"
    )
    line = buf.getvalue()
    assert "abcdefghijklmnop" not in line
    assert "tok_1234567890" not in line
    assert "ABCDEFGHIJKLMNOPQRST" not in line
    assert line.count("[redacted]") == 4
    assert redact("nothing secret here", []) == "nothing secret here"


def test_subscribers_see_every_event() -> None:
    seen: list[str] = []
    log = RunLog(io.StringIO())
    log.subscribe(lambda e: seen.append(e["type"]))
    log.start(tools=[])
    log.result("failed", "round limit")
    assert seen == ["start", "result"]
