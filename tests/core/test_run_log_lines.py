"""The run log's lines field by field: exact rounds, tools, errors, totals, the streaming path,
what ``close`` does, the file's encoding. A fake clock stands in for ``time`` inside the run log
so durations are exact numbers (a real clock cannot be asserted)."""

from __future__ import annotations

import io
import json
import locale
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from loopkit import ChatClientBuilder, ChatOptions, ChatResponse, FunctionChatClient, RunLog
from loopkit.abstractions.chat import ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    TextContent,
    UsageContent,
    UsageDetails,
)
from loopkit.middleware import run_log as run_log_module
from loopkit.middleware.function_invocation import ToolInvocation
from loopkit.middleware.run_log import RunLogChatClient, redact, secret_values

from .helpers import opts, user


class FakeClock:
    """``time.monotonic`` and ``time.perf_counter`` for the run log, each a list of readings."""

    def __init__(self, monotonic: Sequence[float] = (), perf_counter: Sequence[float] = ()):
        self._monotonic = list(monotonic)
        self._perf = list(perf_counter)

    def monotonic(self) -> float:
        return self._monotonic.pop(0)

    def perf_counter(self) -> float:
        return self._perf.pop(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    monkeypatch.setattr(run_log_module, "time", fake)
    yield fake
    assert fake._monotonic == [] and fake._perf == [], "every planned clock reading was taken"


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def answer(text: str, *calls: str, usage: UsageDetails | None = None) -> ChatResponse:
    contents: list[Any] = [TextContent(text=text)] if text else []
    contents += [FunctionCallContent(call_id=f"c{i}", name=n) for i, n in enumerate(calls)]
    message = ChatMessage(role=ChatRole.ASSISTANT, contents=contents)
    return ChatResponse(messages=[message], usage=usage)


def invocation(name: str, *, error: bool, ms: float, result: str = "ok") -> ToolInvocation:
    call = FunctionCallContent(call_id="c", name=name, arguments={"path": "a.py"})
    return ToolInvocation(call=call, result=result, error=error, ms=ms)


USAGE_1 = UsageDetails(
    input_tokens=120, output_tokens=7, cached_input_tokens=30, cache_creation_input_tokens=11
)
USAGE_2 = UsageDetails(
    input_tokens=300, output_tokens=9, cached_input_tokens=5, cache_creation_input_tokens=2
)


async def test_the_round_line_holds_every_field_exactly(clock: FakeClock) -> None:
    clock._monotonic = [100.0, 100.0]  # the log is made; the first request writes start
    clock._perf = [1000.0, 1002.5]  # the request took 2.5 s
    seen_options: list[ChatOptions | None] = []

    def model(_: object, options: ChatOptions | None) -> ChatResponse:
        seen_options.append(options)
        return answer("reading it", "read_file", "list_files", usage=USAGE_1)

    buf = io.StringIO()
    client = ChatClientBuilder(FunctionChatClient(model)).use_run_log(buf).build()
    options = ChatOptions(model_id="model-x")
    await client.get_response(user(), options)
    assert seen_options == [options]  # the options reach the model below
    start, round_ = lines(buf.getvalue())
    assert list(start) == ["time", "type", "data"]
    assert start["type"] == "start"
    assert start["data"] == {"model": "model-x", "tools": [], "limits": {}}
    assert round_["type"] == "round"
    assert round_["data"] == {
        "round": 1,
        "ms": 2500,
        "input_tokens": 120,
        "output_tokens": 7,
        "cached_input_tokens": 30,
        "cache_creation_input_tokens": 11,
        "calls": ["read_file", "list_files"],
        "text": "reading it",
    }
    # local time with milliseconds: 2025-01-31T12:00:00.123
    when = datetime.fromisoformat(round_["time"])
    assert round_["time"] == when.isoformat(timespec="milliseconds")


async def test_a_request_without_options_starts_the_log_with_the_clients_model_and_no_tools() -> (
    None
):
    buf = io.StringIO()
    client = ChatClientBuilder(FunctionChatClient(lambda *_: "hi")).use_run_log(buf).build()
    await client.get_response(user())
    # no model named in the options: the one the innermost client reports
    assert lines(buf.getvalue())[0]["data"] == {"model": "function", "tools": [], "limits": {}}


async def test_a_failed_request_is_an_error_line_naming_its_round() -> None:
    answers: list[ChatResponse | Exception] = [answer("one"), RuntimeError("provider down")]

    def model(*_: object) -> ChatResponse:
        reply = answers.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    buf = io.StringIO()
    client = ChatClientBuilder(FunctionChatClient(model)).use_run_log(buf).build()
    await client.get_response(user(), opts())
    with pytest.raises(RuntimeError, match="provider down"):
        await client.get_response(user(), opts())
    error = lines(buf.getvalue())[-1]
    assert error["type"] == "error"
    assert error["data"] == {"message": "RuntimeError: provider down", "round": 2}


def test_tool_lines_and_the_totals_count_every_call_and_error(clock: FakeClock) -> None:
    clock._monotonic = [10.0, 20.0, 23.14159]  # made, started, result
    buf = io.StringIO()
    log = RunLog(buf)
    log.start(tools=("read_file",), model="m", limits=None, card="cards/x.md")
    log.round(answer("a", usage=USAGE_1), 1.4)
    log.round(answer("b"), 2.6)  # a round without usage counts no tokens
    log.round(answer("c", usage=USAGE_2), 3.0)
    log.tool(invocation("read_file", error=False, ms=12.3456, result="text"))
    log.tool(invocation("read_file", error=True, ms=0.04, result="Error: no such file"))
    log.tool(invocation("write_file", error=True, ms=7.25))
    log.tool(invocation("list_files", error=False, ms=1.0))
    log.result("done", None, card_state="Done")
    ev = lines(buf.getvalue())
    assert [e["type"] for e in ev] == ["start"] + ["round"] * 3 + ["tool"] * 4 + ["result"]
    assert ev[0]["data"] == {
        "model": "m",
        "tools": ["read_file"],
        "limits": {},
        "card": "cards/x.md",
    }
    assert [e["data"]["ms"] for e in ev[1:4]] == [1, 3, 3]
    assert [e["data"]["round"] for e in ev[1:4]] == [1, 2, 3]
    assert ev[2]["data"]["input_tokens"] == 0
    assert ev[4]["data"] == {
        "name": "read_file",
        "arguments": {"path": "a.py"},
        "ms": 12.3,
        "error": False,
        "result": "text",
    }
    assert [(e["data"]["ms"], e["data"]["error"]) for e in ev[5:8]] == [
        (0.0, True),
        (7.2, True),
        (1.0, False),
    ]
    assert ev[8]["data"] == {
        "status": "done",
        "reason": None,
        "totals": {
            "rounds": 3,
            "tool_calls": 4,
            "tool_errors": 2,
            "input_tokens": 420,
            "output_tokens": 16,
            "cached_input_tokens": 35,
            "cache_creation_input_tokens": 13,
            "seconds": 3.14,
        },
        "card_state": "Done",
    }


def test_totals_without_a_start_count_from_when_the_log_was_made(clock: FakeClock) -> None:
    clock._monotonic = [50.0, 50.5]
    buf = io.StringIO()
    log = RunLog(buf)
    log.result("failed", "no model")
    assert lines(buf.getvalue())[0]["data"]["totals"] == {
        "rounds": 0,
        "tool_calls": 0,
        "tool_errors": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "seconds": 0.5,
    }


def test_started_and_finished_follow_the_first_and_last_line() -> None:
    log = RunLog(io.StringIO())
    assert (log.started, log.finished) == (False, False)
    log.start()
    assert (log.started, log.finished) == (True, False)
    log.result("done")
    assert (log.started, log.finished) == (True, True)


def test_error_lines_carry_their_extra_fields_and_subscribers_get_type_and_data() -> None:
    seen: list[dict[str, Any]] = []
    buf = io.StringIO()
    log = RunLog(buf)
    log.subscribe(seen.append)
    log.error("retrying", round=3, attempt=2, wait_s=1.5)
    expected = {"message": "retrying", "round": 3, "attempt": 2, "wait_s": 1.5}
    assert lines(buf.getvalue())[0]["data"] == expected
    assert seen == [{"type": "error", "data": expected}]


class StreamingModel:
    """A provider that streams the given updates, then fails with ``fail`` if one is given."""

    def __init__(self, updates: list[ChatResponseUpdate], fail: Exception | None = None):
        self.updates = updates
        self.fail = fail
        self.seen: list[tuple[Sequence[ChatMessage], ChatOptions | None]] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        raise AssertionError("the streaming path must not call get_response")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self.seen.append((messages, options))
        for update in self.updates:
            yield update
        if self.fail is not None:
            raise self.fail


def streamed() -> list[ChatResponseUpdate]:
    return [
        ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text="Reading ")]),
        ChatResponseUpdate(contents=[TextContent(text="the file")]),
        ChatResponseUpdate(contents=[FunctionCallContent(call_id="c1", name="read_file")]),
        ChatResponseUpdate(contents=[UsageContent(usage=USAGE_1)], finish_reason="tool_calls"),
    ]


async def test_a_streamed_request_writes_its_round_once_the_stream_ends(clock: FakeClock) -> None:
    clock._monotonic = [1.0, 1.0]
    clock._perf = [500.0, 500.75]
    model = StreamingModel(streamed())
    buf = io.StringIO()
    client = RunLogChatClient(model, RunLog(buf))
    messages = user("stream it")
    options = opts(model_id="stream-model")
    got = [u async for u in client.get_streaming_response(messages, options)]
    assert got == streamed()  # every update reaches the caller unchanged
    assert model.seen == [(messages, options)]
    start, round_ = lines(buf.getvalue())
    assert start["data"] == {"model": "stream-model", "tools": [], "limits": {}}
    assert round_["data"] == {
        "round": 1,
        "ms": 750,
        "input_tokens": 120,
        "output_tokens": 7,
        "cached_input_tokens": 30,
        "cache_creation_input_tokens": 11,
        "calls": ["read_file"],
        "text": "Reading the file",
    }


async def test_a_stream_that_breaks_writes_an_error_line_and_no_round() -> None:
    buf = io.StringIO()
    log = RunLog(buf)
    log.round(answer("an earlier round"), 1.0)
    model = StreamingModel(streamed()[:1], fail=ConnectionResetError("reset by peer"))
    client = RunLogChatClient(model, log)
    got: list[ChatResponseUpdate] = []
    with pytest.raises(ConnectionResetError, match="reset by peer"):
        async for update in client.get_streaming_response(user(), None):
            got.append(update)
    assert got == streamed()[:1]  # what came before the break was handed over
    ev = lines(buf.getvalue())
    assert [e["type"] for e in ev] == ["round", "start", "error"]
    assert ev[1]["data"] == {"model": None, "tools": [], "limits": {}}
    assert ev[2]["data"] == {"message": "ConnectionResetError: reset by peer", "round": 2}
    assert log.rounds == 1


def test_close_closes_the_file_it_opened_and_nothing_is_written_after(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "run.jsonl"  # parents are created
    log = RunLog(path)
    assert log.path == path
    log.start()
    log.close()
    log.close()  # twice is fine
    log.error("after close")  # dropped, not raised
    assert [e["type"] for e in lines(path.read_text(encoding="utf-8"))] == ["start"]
    with RunLog(path) as again:  # appends; leaving the block closes it
        again.result("done")
    again.error("after the with block")
    assert [e["type"] for e in lines(path.read_text(encoding="utf-8"))] == ["start", "result"]


def test_close_leaves_a_stream_it_was_given_open() -> None:
    buf = io.StringIO()
    log = RunLog(buf)
    assert log.path is None
    log.start()
    log.close()
    assert not buf.closed
    log.result("done")  # the stream is the caller's: the log goes on writing to it
    assert [e["type"] for e in lines(buf.getvalue())] == ["start", "result"]


def test_the_log_file_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # a locale whose encoding is ASCII
    try:
        log = RunLog(path)
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    log.write("round", text="naïve café 😀")
    log.close()
    assert "naïve café 😀".encode() in path.read_bytes()


def test_a_stream_that_takes_only_ascii_gets_compact_escaped_lines() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    RunLog(stream).write("round", text="naïve 😀", n=[1, 2])
    stream.flush()
    line = raw.getvalue().decode("ascii")
    assert line.endswith('"type":"round","data":{"text":"na\\u00efve \\ud83d\\ude00","n":[1,2]}}\n')


def test_the_log_redacts_the_values_of_the_environment_it_was_given() -> None:
    buf = io.StringIO()
    log = RunLog(buf, environ={"MY_SERVICE_TOKEN": "only-in-this-mapping-42"})
    log.error("sent only-in-this-mapping-42 to the server")
    assert lines(buf.getvalue())[0]["data"]["message"] == "sent [redacted] to the server"


def test_the_old_helpers_redact_given_values_and_list_secret_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # redact(): the given values (any length) and the shapes, never the environment's values
    monkeypatch.setenv("MY_SERVICE_TOKEN", "environment-value-1")
    assert redact("a given-value b x1x", ["given-value", "1"]) == "a [redacted] b x[redacted]x"
    assert redact("environment-value-1", []) == "environment-value-1"
    assert redact("key sk-ant-abcdefghijklmnop", []) == "key [redacted]"
    environ = {
        "MY_TOKEN": "abcdefgh",
        "PATH": "/usr/local/bin:/usr/bin",
        "A_KEY": "short",
        "LONGER_SECRET": "zz-longer-value",
    }
    assert secret_values(environ) == ["zz-longer-value", "abcdefgh"]
    assert "environment-value-1" in secret_values()  # os.environ by default
