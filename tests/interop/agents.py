"""The agents the interop tests serve: a release assistant whose model is a function of the
conversation (not of a position in a script), so a server that restarts mid-conversation goes
on exactly where the stored session is."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from loopkit import (
    Agent,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionChatClient,
    SQLiteSession,
    TextContent,
    UsageDetails,
)
from loopkit.interop.ag_ui import AGUIApp, FrontEndApprover, current_state

MODEL = "scripted/release-model"


def _reply(
    text: str = "", calls: Sequence[tuple[str, dict[str, Any]]] = (), n: int = 0
) -> ChatResponse:
    contents: list[Any] = [TextContent(text=text)] if text else []
    contents += [
        FunctionCallContent(call_id=f"call-{n}-{name}-{i}", name=name, arguments=arguments)
        for i, (name, arguments) in enumerate(calls)
    ]
    return ChatResponse(
        messages=[ChatMessage(role="assistant", contents=contents)],
        usage=UsageDetails(input_tokens=100 + n, output_tokens=10),
        model_id=MODEL,
        finish_reason="tool_calls" if calls else "stop",
    )


def release_model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    """Release a version: check the build, show a chart (a frontend tool), deploy (approval),
    report; asked again later, recall the conversation."""
    users = [m.text for m in messages if m.role == "user"]
    last = messages[-1]
    n = len(messages)
    if last.role == "user":
        if len(users) == 1:
            return _reply(calls=[("check_build", {"version": "2"})], n=n)
        return _reply(
            f"This conversation has {len(users)} requests; the first was: {users[0]}", n=n
        )
    answered = {c.call_id: c.name for m in messages for c in m.function_calls}
    result = last.contents[-1]
    name = answered.get(getattr(result, "call_id", ""), "")
    text = getattr(result, "result", "")
    if name == "check_build":
        return _reply(
            "The build is green; here is the chart.", [("show_chart", {"values": [3, 5, 8]})], n=n
        )
    if name == "show_chart":
        return _reply(calls=[("deploy", {"env": "prod"})], n=n)
    if name == "deploy":
        if getattr(result, "error", False):
            return _reply(f"Not released: {text}", n=n)
        return _reply(f"Released version 2 to prod ({text}).", n=n)
    return _reply(f"unexpected: {last.model_dump_json()}", n=n)


class Release(BaseModel):
    version: str
    env: str


def release_agent(folder: str | Path) -> Agent[str]:
    """The release assistant; ``deploy`` appends a line to ``folder/deploys.log`` (the tests
    count real executions) and needs the front-end's approval."""
    log = Path(folder) / "deploys.log"

    def check_build(version: str) -> str:
        """Check that the build of a version is green."""
        current_state()["build"] = {"version": version, "status": "green"}
        return json.dumps({"version": version, "status": "green"})

    def deploy(env: str) -> str:
        """Deploy the checked build to an environment."""
        with log.open("a") as f:
            f.write(env + "\n")
        return f"deployed to {env}"

    return Agent(
        FunctionChatClient(release_model, model_id=MODEL),
        name="release",
        instructions="You release software: check the build, show the chart, deploy.",
        tools=[check_build, deploy],
        approval_required=["deploy"],
        approver=FrontEndApprover(),
    )


def ag_ui_app(folder: str, url: str) -> AGUIApp:
    """The release assistant over AG-UI, its threads in ``folder/threads.sqlite``."""
    db = str(Path(folder) / "threads.sqlite")
    return AGUIApp(release_agent(folder), sessions=lambda thread: SQLiteSession(db, thread))


def a2a_app(folder: str, url: str) -> Any:
    """The release assistant over A2A (no approval: deploy runs), tasks and conversations in
    ``folder/a2a.sqlite``."""
    from loopkit.interop.a2a import to_a2a

    db = str(Path(folder) / "a2a.sqlite")
    agent = Agent(
        FunctionChatClient(a2a_model, model_id=MODEL),
        name="release",
        instructions="You release software: check the build, then answer.",
        tools=[_check_build],
    )
    return to_a2a(agent, url=url, sessions=lambda sid: SQLiteSession(db, sid))


def _check_build(version: str) -> str:
    """Check that the build of a version is green."""
    return json.dumps({"version": version, "status": "green"})


def a2a_model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    """Checks the build, then says so; a later message in the context recalls the first."""
    users = [m.text for m in messages if m.role == "user"]
    last = messages[-1]
    if last.role == "user":
        if len(users) > 1:
            return _reply(f"Earlier you asked: {users[0]}", n=len(messages))
        return _reply("Checking the build.", [("_check_build", {"version": "2"})], n=len(messages))
    return _reply(f"Build checked: {last.contents[-1].result}", n=len(messages))  # type: ignore[union-attr]


class Invoice(BaseModel):
    """The typed output of the invoicing agent served over MCP."""

    customer: str
    total: float
    lines: int


class InvoiceRequest(BaseModel):
    """The typed input of the invoicing agent served over MCP."""

    customer: str
    amounts: list[float]


def _price(amount: float) -> str:
    """Price one line (adds 10 % tax)."""
    return f"{amount * 1.1:.2f}"


def invoice_model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    """Prices each amount with a tool (one round a line), then answers the invoice as JSON."""
    request = json.loads(next(m.text for m in messages if m.role == "user"))
    priced = [c.result for m in messages if m.role == "tool" for c in m.contents]  # type: ignore[union-attr]
    amounts = request["amounts"]
    n = len(messages)
    if len(priced) < len(amounts):
        return _reply(calls=[("_price", {"amount": amounts[len(priced)]})], n=n)
    total = round(sum(float(p) for p in priced), 2)
    return _reply(
        json.dumps({"customer": request["customer"], "total": total, "lines": len(amounts)}), n=n
    )


def invoice_agent() -> Agent[Invoice]:
    """An agent with a typed input (``InvoiceRequest``) and output (``Invoice``)."""
    return Agent(
        FunctionChatClient(invoice_model, model_id=MODEL),
        name="invoicer",
        instructions="Price every amount with _price, then answer the invoice.",
        tools=[_price],
        output_type=Invoice,
    )


def text_model(messages: list[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    return _reply(f"You said: {messages[-1].text}", n=len(messages))


#: A text agent, the simplest thing to serve.
echo_agent = Agent(
    FunctionChatClient(text_model, model_id=MODEL), name="echo", instructions="Repeat."
)
