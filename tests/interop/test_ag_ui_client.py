"""AG-UI through the official TypeScript client (``@ag-ui/client``'s ``HttpAgent``, driven by
``clients/ag_ui_drive.mjs``) against ``AGUIApp`` in a server process: a conversation with a
backend tool that changes the shared state, a frontend tool the client runs, and an approval the
client answers; every event validates against the protocol's zod schemas (``@ag-ui/core``), and
the client's own order checks pass. The approval's wait survives a SIGKILL of the server, and
the thread (a stored session) continues across requests and restarts."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import CLIENTS, Server

pytestmark = pytest.mark.integration

FACTORY = "tests.interop.agents:ag_ui_app"
TOOLS = [
    {
        "name": "show_chart",
        "description": "Show a chart of numbers to the user.",
        "parameters": {
            "type": "object",
            "properties": {"values": {"type": "array", "items": {"type": "number"}}},
            "required": ["values"],
        },
    }
]


class Conversation:
    """The client's side: its messages and state, carried from one step to the next."""

    def __init__(self, node: str, url: str, tmp: Path) -> None:
        self.node, self.url, self.tmp = node, url, tmp
        self.thread = f"thread-{secrets.token_hex(4)}"
        self.messages: list[dict[str, Any]] = []
        self.state: Any = {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        plan = self.tmp / f"plan-{secrets.token_hex(4)}.json"
        plan.write_text(json.dumps({"url": self.url, "threadId": self.thread, "messages": self.messages,
                                    "state": self.state, "tools": TOOLS, "action": action}))  # fmt: skip
        done = subprocess.run([self.node, str(CLIENTS / "ag_ui_drive.mjs"), str(plan)], cwd=CLIENTS,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0 and done.stdout, f"the client failed:\n{done.stderr[-3000:]}"
        report: dict[str, Any] = json.loads(done.stdout)
        assert "clientError" not in report, report["clientError"]
        assert report["invalid"] == [], (
            f"events that break the protocol's schemas: {report['invalid']}"
        )
        self.messages, self.state = report["messages"], report["state"]
        return report


def types(report: dict[str, Any]) -> list[str]:
    return [e["type"] for e in report["events"]]


def deploys(tmp: Path) -> list[str]:
    log = tmp / "deploys.log"
    return log.read_text().split() if log.exists() else []


def test_backend_tool_frontend_tool_and_approval(
    node: str, server_factory: type[Server], tmp_path: Path
) -> None:
    server = server_factory(FACTORY)
    chat = Conversation(node, server.start(), tmp_path)

    first = chat.step({"say": "Release version 2 to prod"})
    assert types(first) == [
        "RUN_STARTED", "STATE_SNAPSHOT",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_DELTA",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED",
    ]  # fmt: skip
    # The backend tool changed the shared state; the client applied the delta.
    assert chat.state == {"build": {"version": "2", "status": "green"}}
    # The run stopped on the frontend tool: the client has to answer it.
    chart = next(
        e
        for e in first["events"]
        if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == "show_chart"
    )
    assert first["finished"]["outcome"] == "success"
    assert first["finished"]["pendingToolCallIds"] == [chart["toolCallId"]]
    # Text and calls of one round fold into one assistant message on the client.
    assistant = [m for m in chat.messages if m["role"] == "assistant"]
    assert assistant[-1]["content"] == "The build is green; here is the chart."
    assert [c["function"]["name"] for c in assistant[-1]["toolCalls"]] == ["show_chart"]

    second = chat.step({"answerFrontend": True, "pending": [chart["toolCallId"]]})
    assert second["executed"][0]["content"] == "chart shown with 3 values"
    assert types(second) == ["RUN_STARTED", "STATE_SNAPSHOT", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                             "TOOL_CALL_END", "RUN_FINISHED"]  # fmt: skip
    assert second["finished"]["outcome"] == "interrupt"
    [interrupt] = second["finished"]["interrupts"]
    assert interrupt["reason"] == "approval_required" and "deploy" in interrupt["message"]
    assert second["pendingInterrupts"] == [interrupt]
    assert deploys(tmp_path) == [], "deploy ran before it was approved"

    third = chat.step({"resume": [{"interruptId": interrupt["id"], "approved": True}]})
    assert deploys(tmp_path) == ["prod"]
    assert third["finished"]["outcome"] == "success"
    assert third["result"] == "Released version 2 to prod (deployed to prod)."
    finished = third["events"][-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["usage"][0]["model"] == "scripted/release-model"
    assert finished["usage"][0]["inputTokens"] > 0 and finished["usage"][0]["outputTokens"] == 10
    assert third["pendingInterrupts"] == []
    result = next(e for e in third["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert (
        result["toolCallId"] == interrupt["toolCallId"] and result["content"] == "deployed to prod"
    )

    # The thread is a session: the next request continues the conversation.
    fourth = chat.step({"say": "What did I ask first?"})
    assert (
        fourth["result"]
        == "This conversation has 2 requests; the first was: Release version 2 to prod"
    )


def test_a_refused_approval_never_runs_the_tool(
    node: str, server_factory: type[Server], tmp_path: Path
) -> None:
    chat = Conversation(node, server_factory(FACTORY).start(), tmp_path)
    first = chat.step({"say": "Release version 2 to prod"})
    second = chat.step({"answerFrontend": True, "pending": first["finished"]["pendingToolCallIds"]})
    [interrupt] = second["finished"]["interrupts"]
    third = chat.step({"resume": [{"interruptId": interrupt["id"], "approved": False}]})
    assert deploys(tmp_path) == []
    assert third["result"].startswith("Not released: Error: the call to deploy was not approved")


def test_the_approval_wait_survives_a_restart(
    node: str, server_factory: type[Server], tmp_path: Path
) -> None:
    server = server_factory(FACTORY)
    chat = Conversation(node, server.start(), tmp_path)
    first = chat.step({"say": "Release version 2 to prod"})
    second = chat.step({"answerFrontend": True, "pending": first["finished"]["pendingToolCallIds"]})
    [interrupt] = second["finished"]["interrupts"]

    server.kill()  # the waiting run's task dies with the process
    chat.url = server.start()  # same folder, same SQLite threads
    third = chat.step({"resume": [{"interruptId": interrupt["id"], "approved": True}]})
    assert deploys(tmp_path) == ["prod"]
    assert third["result"] == "Released version 2 to prod (deployed to prod)."
    assert types(third)[:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "TOOL_CALL_RESULT"]
    assert chat.state == {"build": {"version": "2", "status": "green"}}

    server.kill()
    chat.url = server.start()
    fourth = chat.step({"say": "What did I ask first?"})
    assert (
        fourth["result"]
        == "This conversation has 2 requests; the first was: Release version 2 to prod"
    )


def test_an_input_that_does_not_answer_the_wait_is_refused(
    node: str, server_factory: type[Server], tmp_path: Path
) -> None:
    chat = Conversation(node, server_factory(FACTORY).start(), tmp_path)
    first = chat.step({"say": "Release version 2 to prod"})
    second = chat.step({"answerFrontend": True, "pending": first["finished"]["pendingToolCallIds"]})
    assert second["finished"]["outcome"] == "interrupt"
    chat.messages = chat.messages[:-1]  # as if the client forgot the interrupt
    plan_ok = chat.step
    report = None
    try:
        report = plan_ok({"say": "hello?"})
    except AssertionError as e:  # the client reports RUN_ERROR as an error
        assert "waits for the approval of call" in str(e)
    if report is not None:
        error = next(e for e in report["events"] if e["type"] == "RUN_ERROR")
        assert "waits for the approval of call" in error["message"]
    assert deploys(tmp_path) == []
