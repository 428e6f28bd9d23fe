"""Importing loopkit's core names loads neither pydantic nor asyncio; first use loads them.

``from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog`` is what a
typical program names at import time, and pydantic (with annotated_types, pydantic_core,
typing_extensions) plus asyncio cost more than 100 ms to import. These names are the real
classes and functions (no proxies); their modules name the pydantic message types in
annotations only and import them where a request uses them. Each check runs in a fresh
interpreter, since this test process has loaded everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Loaded by pydantic (or by asyncio) and by nothing the core names need at import time.
HEAVY = (
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_extensions",
    "asyncio",
    "loopkit.abstractions.chat",
    "loopkit.abstractions.content",
)


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_the_core_names_load_neither_pydantic_nor_asyncio() -> None:
    found = _run(
        f"""
        import json, sys
        from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog
        print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """
    )
    assert found["loaded"] == []


def test_decorating_subclassing_and_isinstance_at_import_time_load_no_pydantic() -> None:
    """What a module of user code does at import: ``@tool`` on its functions (a bad signature
    still refused at once), a middleware subclass, isinstance checks, a builder.

    (``isinstance(add, Tool)``, the runtime protocol, is first use on Python 3.11: its check
    reads every member of the protocol, ``parameters`` too, which builds the schema.)"""
    found = _run(
        f"""
        import json, sys
        from typing import Annotated
        from loopkit import (
            ChatClientBuilder, DelegatingChatClient, FunctionInvokingChatClient, FunctionTool,
            RunLog, tool,
        )

        @tool
        def add(a: int, b: Annotated[int, "the second number"] = 1) -> int:
            '''Add two numbers.'''
            return a + b

        class Counting(DelegatingChatClient):
            pass

        try:
            @tool
            def bad(*items: int) -> int:
                return 0
            refused = None
        except TypeError as e:
            refused = str(e)

        checks = {{
            "is_tool": isinstance(add, FunctionTool),
            "direct_call": add(2, 3),
            "loop_is_delegating": issubclass(FunctionInvokingChatClient, DelegatingChatClient),
            "subclass": isinstance(Counting(None), DelegatingChatClient),
            "runlog_is_class": isinstance(RunLog, type),
            "refused": refused,
            "builder": type(ChatClientBuilder(Counting(None))).__name__,
        }}
        checks["loaded"] = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps(checks))
        """
    )
    assert found["loaded"] == []
    assert found["is_tool"] is True
    assert found["direct_call"] == 5
    assert found["loop_is_delegating"] is True
    assert found["subclass"] is True
    assert found["runlog_is_class"] is True
    assert "tools need named parameters" in str(found["refused"])
    assert found["builder"] == "ChatClientBuilder"


def test_first_use_loads_what_it_needs_and_runs_a_tool_call() -> None:
    """Import, then first use in the same fresh interpreter: the tool's schema, a run with one
    tool call through the loop and a run log, the messages pickled and validated again."""
    found = _run(
        f"""
        import io, json, pickle, sys
        from loopkit import ChatClientBuilder, tool, FunctionInvokingChatClient, RunLog
        before = [m for m in {HEAVY!r} if m in sys.modules]
        import asyncio

        @tool
        def add(a: int, b: int = 1) -> int:
            '''Add two numbers.'''
            return a + b

        from loopkit import (
            ChatMessage, ChatResponse, FunctionCallContent, FunctionChatClient, Tool,
        )

        def model(messages, options):
            if len(messages) == 1:
                call = FunctionCallContent(call_id="c1", name="add", arguments={{"a": 2, "b": "3"}})
                return ChatResponse(messages=[ChatMessage(role="assistant", contents=[call])])
            return "the sum is " + messages[-1].contents[0].result

        log = io.StringIO()
        client = (
            ChatClientBuilder(FunctionChatClient(model))
            .use_function_invocation()
            .use_run_log(RunLog(log, environ={{}}))
            .build()
        )
        from loopkit import ChatOptions
        response = asyncio.run(
            client.get_response(
                [ChatMessage.from_text("user", "add 2 and 3")], ChatOptions(tools=[add])
            )
        )
        again = [ChatMessage.model_validate_json(m.model_dump_json()) for m in response.messages]
        print(json.dumps({{
            "before": before,
            "loop": isinstance(client, FunctionInvokingChatClient),
            "is_tool": isinstance(add, Tool),
            "text": response.text,
            "schema": add.parameters["properties"]["a"],
            "same_schema": add.parameters is add.parameters,
            "lines": [json.loads(line)["type"] for line in log.getvalue().splitlines()],
            "pickled": pickle.loads(pickle.dumps(response.messages)) == response.messages,
            "validated": again == response.messages,
            "after": [m for m in ("pydantic", "asyncio") if m in sys.modules],
        }}))
        """
    )
    assert found["before"] == []
    assert found["loop"] is True
    assert found["is_tool"] is True
    assert found["text"] == "the sum is 5"
    assert found["schema"] == {"type": "integer"}
    assert found["same_schema"] is True
    assert found["lines"] == ["start", "round", "tool", "round"]
    assert found["pickled"] is True
    assert found["validated"] is True
    assert found["after"] == ["pydantic", "asyncio"]
