"""The run log's write path: each line's start (type and run ids) is made once per run and type,
the data encoded and checked on its own, the file written unbuffered. These tests hold it to the
contract of the whole-line path it replaced: secrets anywhere in a line never reach the file
(in the data however deep, in the type, in a value exported after the first line), the round's
text and calls are the response's own, every line is in the file as soon as it is written (a
killed process leaves valid lines), and the secret-shape patterns compile on first use."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from loopkit import ChatResponse, RunLog, redaction
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    TextContent,
)
from loopkit.middleware.function_invocation import ToolInvocation
from loopkit.redaction import REDACTED, Redactor
from loopkit.run_context import RunContext, run_scope

KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
# The children import the loopkit this test imported (under mutmut: its mutated copy), whatever
# the environment's path says.
CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(redaction.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    ),
}


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_secret_deep_in_the_data_is_redacted_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    log = RunLog(path, environ={"MY_SERVICE_TOKEN": "from-the-environment-42"})
    call = FunctionCallContent(
        call_id="c",
        name="fetch",
        arguments={"a": [{"b": f"key {KEY}"}, {"c": {"d": "from-the-environment-42"}}]},
    )
    with run_scope():
        log.tool(ToolInvocation(call, f"used {KEY}", False, 1.0))
    log.close()
    written = path.read_text(encoding="utf-8")
    assert KEY not in written and "from-the-environment-42" not in written
    data = lines(written)[0]["data"]
    assert data["arguments"] == {"a": [{"b": f"key {REDACTED}"}, {"c": {"d": REDACTED}}]}
    assert data["result"] == f"used {REDACTED}"


def test_a_line_type_holding_a_secret_shape_is_redacted_in_and_outside_a_run() -> None:
    buf = io.StringIO()
    log = RunLog(buf, environ={})
    log.write(f"event {KEY}", n=1)
    with run_scope():
        log.write(f"event {KEY}", n=2)
        log.write("plain", n=3)
    assert KEY not in buf.getvalue()
    first, second, third = lines(buf.getvalue())
    assert first["type"] == second["type"] == f"event {REDACTED}"
    assert (second["data"], third["type"], third["data"]) == ({"n": 2}, "plain", {"n": 3})


def test_a_value_exported_after_the_first_line_is_redacted_from_the_next_lines_start() -> None:
    """The start of a line is kept between lines; the environment is read again at each."""
    environ: dict[str, str] = {}
    buf = io.StringIO()
    log = RunLog(buf, environ=environ)
    run = RunContext(run_id="run-id-that-leaks-42")
    with run_scope(run):
        log.write("custom-event-name", n=1)
        environ["MY_SERVICE_TOKEN"] = "run-id-that-leaks-42"
        log.write("custom-event-name", n=2)
    before, after = lines(buf.getvalue())
    assert before["run_id"] == "run-id-that-leaks-42"  # written before it was a secret
    assert after["run_id"] == REDACTED and after["data"] == {"n": 2}


def test_a_child_runs_lines_name_both_runs_in_order() -> None:
    buf = io.StringIO()
    log = RunLog(buf, environ={})
    parent = RunContext(run_id="parent-1")
    with run_scope(parent), run_scope(parent.child()) as child:
        log.write("round", n=1)
        log.write("round", n=2)
    for line in buf.getvalue().splitlines():
        assert line.startswith('{"time":"') and json.loads(line)["data"]["n"] in (1, 2)
        assert line.split('","', 1)[1].startswith(
            f'type":"round","run_id":"{child.run_id}","parent_run_id":"parent-1","data":{{"n":'
        )


def test_the_round_text_and_calls_are_the_responses_own() -> None:
    """Text of the last assistant message that has some; every call, in order."""

    def message(role: ChatRole, *contents: Any) -> ChatMessage:
        return ChatMessage(role=role, contents=list(contents))

    def call(name: str) -> FunctionCallContent:
        return FunctionCallContent(call_id=name, name=name)

    responses = [
        ChatResponse(messages=[message(ChatRole.ASSISTANT)]),
        ChatResponse(
            messages=[
                message(ChatRole.ASSISTANT, TextContent(text="first"), call("a")),
                message(ChatRole.TOOL, TextContent(text="a tool's text")),
                message(
                    ChatRole.ASSISTANT, TextContent(text="la"), call("b"), TextContent(text="st")
                ),
                message(ChatRole.ASSISTANT, TextContent(text=""), call("c")),
                message(ChatRole.USER, TextContent(text="not the model's")),
            ]
        ),
    ]
    buf = io.StringIO()
    log = RunLog(buf, environ={})
    for response in responses:
        log.round(response, 1.0)
    got = [(e["data"]["calls"], e["data"]["text"]) for e in lines(buf.getvalue())]
    assert got == [([], ""), (["a", "b", "c"], "last")]
    assert got == [([c.name for c in r.function_calls], r.text) for r in responses]


CHILD = """
import sys, time
from loopkit import RunLog
log = RunLog(sys.argv[1], environ={})
for n, text in enumerate(["é" * 5000, "short", "short"]):  # longer and shorter than a buffer
    log.write("round", n=n, text=text)
print("written", flush=True)
time.sleep(60)
"""


def test_every_line_is_in_the_file_when_written_and_a_killed_process_leaves_valid_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=CHILD_ENV
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "written\n"
        assert [e["data"]["n"] for e in lines(path.read_text(encoding="utf-8"))] == [0, 1, 2]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    written = path.read_bytes()
    assert written.endswith(b"}\n") and written.count(b"\n") == 3
    assert [e["data"]["text"] for e in lines(written.decode())] == ["é" * 5000, "short", "short"]


def test_json_line_redacts_values_in_the_head_and_everything_in_the_value() -> None:
    r = Redactor(environ={"A_TOKEN": "plainsecret1"})
    head = '{"who":"plainsecret1","data":'
    assert r.json_line(head, {"x": [KEY]}) == '{"who":"[redacted]","data":{"x":["[redacted]"]}}'
    assert r.json_line('{"data":', [1, "é"]) == '{"data":[1,"é"]}'


SHAPES_AT_IMPORT = """
import re
compiled = []
original = re.compile
def compile(pattern, flags=0):
    compiled.append(pattern)
    return original(pattern, flags)
re.compile = compile
from loopkit import redaction
at_import = sum("sk-(?:ant-" in str(p) for p in compiled)
assert redaction.Redactor(environ={}).redact("key sk-ant-abcdefghijklmnop") == "key [redacted]"
print(at_import, sum("sk-(?:ant-" in str(p) for p in compiled))
"""


def test_the_secret_shapes_compile_on_first_use_not_at_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SHAPES_AT_IMPORT],
        capture_output=True,
        text=True,
        check=True,
        env=CHILD_ENV,
    ).stdout
    assert out.split() == ["0", "1"]


def test_a_secret_in_a_rounds_text_or_call_name_is_redacted_after_clean_rounds() -> None:
    """The round line searches only its text and call names for shapes (the rest are its own
    keys and numbers), and remembers names found clean: neither may let a secret through."""

    def response(text: str, *names: str) -> ChatResponse:
        contents: list[Any] = [TextContent(text=text)] if text else []
        contents += [FunctionCallContent(call_id=n, name=n) for n in names]
        return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=contents)])

    buf = io.StringIO()
    log = RunLog(buf, environ={"MY_SERVICE_TOKEN": "env-secret-value-42"})
    log.round(response("plain", "read_file"), 1.0)
    log.round(response(f"the key is {KEY}", "read_file"), 1.0)
    log.round(response("", "read_file", KEY), 1.0)
    log.round(response("sent env-secret-value-42", "read_file"), 1.0)
    assert KEY not in buf.getvalue() and "env-secret-value-42" not in buf.getvalue()
    got = [(e["data"]["text"], e["data"]["calls"]) for e in lines(buf.getvalue())]
    assert got == [
        ("plain", ["read_file"]),
        (f"the key is {REDACTED}", ["read_file"]),
        ("", ["read_file", REDACTED]),
        (f"sent {REDACTED}", ["read_file"]),
    ]


def test_lines_of_runs_taking_turns_each_carry_their_own_run_and_subscribers_get_it_too() -> None:
    """A line's start is kept per run and type: two runs writing the same type in turn must
    not share one."""
    buf = io.StringIO()
    log = RunLog(buf, environ={})
    seen: list[dict[str, Any]] = []
    log.subscribe(seen.append)
    first, second = RunContext(run_id="run-one"), RunContext(run_id="run-two")
    log.write("round", n=-1)  # outside any run: no run ids
    for n in range(2):
        for run in (first, second, first.child()):
            with run_scope(run):
                log.write("round", n=n)
    log.write("round", n=2)  # outside any run: no run ids
    got = [(e.get("run_id"), e.get("parent_run_id"), e["data"]["n"]) for e in lines(buf.getvalue())]
    children = [e["run_id"] for e in lines(buf.getvalue())[3:7:3]]
    assert got == [
        (None, None, -1),
        ("run-one", None, 0), ("run-two", None, 0), (children[0], "run-one", 0),
        ("run-one", None, 1), ("run-two", None, 1), (children[1], "run-one", 1),
        (None, None, 2),
    ]  # fmt: skip
    assert len(set(children)) == 2
    assert [(e.get("run_id"), e.get("parent_run_id"), e["data"]["n"]) for e in seen] == got
    assert all(
        list(e) == [k for k in ("type", "run_id", "parent_run_id", "data") if k in e] for e in seen
    )


def test_the_time_stamp_is_the_wall_clocks_to_the_millisecond() -> None:
    buf = io.StringIO()
    log = RunLog(buf, environ={})
    for _ in range(50):  # several in one millisecond and across them
        before = datetime.now()
        log.write("round")
        after = datetime.now()
        stamp = datetime.fromisoformat(lines(buf.getvalue())[-1]["time"])
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= stamp <= after


class ShortWrites(io.RawIOBase):
    """A file whose ``write`` takes at most 7 bytes a call. A fake: a regular file on Linux
    writes short only when the disk is full or a size limit is hit, which a test cannot arrange
    without ending the write in an error."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.calls = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.calls += 1
        taken = bytes(data[:7])
        self.written += taken
        return len(taken)


def test_a_short_write_is_followed_by_the_rest_of_the_line() -> None:
    from loopkit.middleware.run_log import _FileLineWriter

    file = ShortWrites()
    writer = _FileLineWriter(file)  # type: ignore[arg-type]
    writer.write('{"a":"é"}\n')
    writer.write("{}\n")
    assert file.written.decode() == '{"a":"é"}\n{}\n'
    assert file.calls == 3
