from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from loopkit import ChatClientBuilder, ChatResponse, FunctionChatClient, RunLog, tool
from loopkit.middleware.run_log import redact
from tests.secret_corpus import LATE, all_secrets, leaks, plant_environment, planted_text

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


def test_every_secret_shape_and_a_late_key_are_redacted_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_environment(monkeypatch)
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    monkeypatch.setenv(*LATE)  # exported after the log was created
    text = planted_text()
    log.start(tools=["read_file"], model="scripted", limits={"note": text})
    log.write("round", round=1, text=text, calls=["read_file"])
    log.write("tool", name="read_file", arguments={"path": text, text: 1}, result=text, error=True)
    log.error(text)
    log.result("failed", text)
    log.close()
    written = path.read_text(encoding="utf-8")
    assert [json.loads(line)["type"] for line in written.splitlines()] == [
        "start",
        "round",
        "tool",
        "error",
        "result",
    ]
    leaked = leaks(written)
    print(f"run log: secrets tried {len(all_secrets())} in 5 lines, leaked {len(leaked)}")
    assert leaked == []


class _Unprintable:
    def __str__(self) -> str:
        raise ValueError("str() of this object fails")

    __repr__ = __str__


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("str() of this error fails")


async def test_odd_text_never_stops_the_log(tmp_path: Path) -> None:
    name = os.fsdecode(b"run-\xff\xfe.jsonl")  # a log file name that is not UTF-8
    path = tmp_path / name
    log = RunLog(path)
    odd_file = os.fsdecode(b"invoice_app/caf\xe9.py")
    log.start(tools=[odd_file], model="scripted")
    log.write(
        "tool",
        name="write_file",
        arguments={"path": odd_file, "content": "lone \ud800 surrogate", b"key": b"\xff\x00"},
        result=_Unprintable(),
        error=False,
    )
    log.write("tool", name="x", arguments={"n": float("nan"), "inf": float("inf")}, result=None)
    log.write("round", round=1, text="emoji 😀 and \udcff", calls=[object()])
    client = ChatClientBuilder(_failing()).use_run_log(log).build()
    with pytest.raises(_UnprintableError):
        await client.get_response(user(), opts())
    log.result("failed", "reason with \udc80 byte")
    log.close()
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: every line is valid UTF-8
    lines = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    assert [e["type"] for e in lines] == ["start", "tool", "tool", "round", "error", "result"]
    assert lines[0]["data"]["tools"] == ["invoice_app/caf\\udce9.py"]
    tool = lines[1]["data"]
    assert tool["arguments"]["content"] == "lone \\ud800 surrogate"
    assert tool["arguments"]["key"] == "\\xff\x00"  # undecodable bytes spelled out
    assert tool["result"] == "<unprintable _Unprintable: ValueError>"
    assert lines[2]["data"]["arguments"] == {"n": "nan", "inf": "inf"}
    assert lines[3]["data"]["text"] == "emoji 😀 and \\udcff"
    assert lines[4]["data"]["message"] == "_UnprintableError: <message could not be read>"
    assert lines[5]["data"]["reason"] == "reason with \\udc80 byte"


def test_a_stream_that_takes_only_ascii_gets_escaped_lines() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    log = RunLog(stream)
    log.write("round", text="naïve café 😀")
    stream.flush()
    line = raw.getvalue().decode("ascii")
    assert json.loads(line)["data"]["text"] == "naïve café 😀"


def _failing() -> FunctionChatClient:
    def fail(*_: object) -> ChatResponse:
        raise _UnprintableError()

    return FunctionChatClient(fail)


# -- issue 10: run ids, per-run totals, run events as lines ---------------------------------------


async def test_lines_of_a_bare_pipeline_carry_its_run_id_and_a_second_request_starts_again() -> (
    None
):
    buf = io.StringIO()
    client = (
        ChatClientBuilder(script({"calls": [call("read_big")]}, {"text": "a"}, {"text": "b"}))
        .use_function_invocation()
        .use_run_log(buf)
        .build()
    )
    await client.get_response(user(), opts(read_big))
    await client.get_response(user(), opts(read_big))
    ev = events(buf.getvalue())
    assert [e["type"] for e in ev] == ["start", "round", "tool", "round", "start", "round"]
    first, second = ev[0]["run_id"], ev[4]["run_id"]
    assert first != second
    assert [e["run_id"] for e in ev] == [first] * 4 + [second] * 2
    assert ev[5]["data"]["round"] == 1  # rounds are numbered per run
    assert all("parent_run_id" not in e for e in ev)


async def test_events_middleware_reports_become_lines_and_an_agent_run_ends_with_totals() -> None:
    from loopkit import DelegatingChatClient
    from loopkit.agents import Agent
    from loopkit.run_context import current_run

    class Shrinker(DelegatingChatClient):
        """Reports a compaction before every request (as compaction middleware does)."""

        async def get_response(self, messages, options=None):  # type: ignore[no-untyped-def]
            run = current_run()
            assert run is not None
            run.emit("compaction", tokens_before=100, tokens_after=40, strategy="elide")
            return await self.inner.get_response(messages, options)

    buf = io.StringIO()
    log = RunLog(buf)
    model = script(
        {"calls": [call("read_big")], "usage": {"input_tokens": 10, "output_tokens": 1}},
        {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 2}},
    )
    agent = Agent(
        ChatClientBuilder(model).use_run_log(log).use(Shrinker),
        tools=[read_big],
        name="reader",
        max_rounds=5,
    )
    result = await agent.run("read", metadata={"card": "Big file"})
    ev = events(buf.getvalue())
    assert [e["type"] for e in ev] == [
        "start", "compaction", "round", "tool", "compaction", "round", "run_end",
    ]  # fmt: skip
    assert {e["run_id"] for e in ev} == {result.run_id}
    assert ev[0]["data"]["agent"] == "reader" and ev[0]["data"]["card"] == "Big file"
    assert ev[0]["data"]["limits"]["max_rounds"] == 5
    assert ev[1]["data"] == {"tokens_before": 100, "tokens_after": 40, "strategy": "elide"}
    end = ev[-1]["data"]
    assert (end["status"], end["error"], end["output_type"]) == ("ok", None, "str")
    totals = end["totals"]
    assert (totals["rounds"], totals["tool_calls"], totals["input_tokens"]) == (2, 1, 30)
    assert log.totals()["rounds"] == 2  # outside the run: the totals of every run


async def test_a_caller_framed_run_keeps_its_lines_exactly(tmp_path: Path) -> None:
    """The card runner's shape: start and result written by the caller outside any run, the
    rounds inside the loop's own run: no second start, no run_end line."""
    log = RunLog(tmp_path / "run.jsonl")
    log.start(tools=["read_big"], model="scripted")
    client = (
        ChatClientBuilder(script({"text": "hi"})).use_function_invocation().use_run_log(log).build()
    )
    await client.get_response(user(), opts(read_big))
    log.result("done")
    log.close()
    ev = events((tmp_path / "run.jsonl").read_text())
    assert [e["type"] for e in ev] == ["start", "round", "result"]
    assert "run_id" not in ev[0] and "run_id" in ev[1] and "run_id" not in ev[2]
    assert ev[2]["data"]["totals"]["rounds"] == 1
