"""Cuts at their exact boundaries: the loop's tool-result cut (4,000 characters) and the run log's
round-text cut (2,000 characters). One character on either side of each limit is pinned, through
the real loop, the real run log and a real MCP server, so an off-by-one in either direction fails.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from loopkit import ChatClientBuilder, ChatResponse, RunLog, tool
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.mcp import MCPClient
from loopkit.middleware.function_invocation import (
    DEFAULT_MAX_RESULT_CHARS,
    FunctionInvocationOptions,
    cut_result,
)
from tests.mcp_client.helpers import SERVER_SCRIPT

from .helpers import call, opts, script, user

LIMIT = 4000


def cut_note(total: int, shown: int = LIMIT) -> str:
    return (
        f"\n[cut: the result has {total} characters, only the first {shown} are shown."
        " Ask for less, for example one folder, one window or one element.]"
    )


def test_the_default_limit_is_4000() -> None:
    assert DEFAULT_MAX_RESULT_CHARS == LIMIT
    assert FunctionInvocationOptions().max_result_chars == LIMIT


@pytest.mark.parametrize("size", [0, 1, LIMIT - 1, LIMIT])
def test_up_to_the_limit_nothing_is_cut(size: int) -> None:
    text = "x" * size
    assert cut_result(text, LIMIT) == text


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT + 2, 2 * LIMIT])
def test_above_the_limit_the_first_4000_are_kept_with_a_note(size: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(size))
    assert cut_result(text, LIMIT) == text[:LIMIT] + cut_note(size)


def test_no_limit_never_cuts() -> None:
    assert cut_result("x" * 100_000, None) == "x" * 100_000


def test_a_smaller_limit_is_honoured_at_its_boundary() -> None:
    assert cut_result("y" * 100, 100) == "y" * 100
    assert cut_result("y" * 101, 100) == "y" * 100 + cut_note(101, 100)
    with pytest.raises(ValueError, match="max_result_chars must be >= 100, got 99"):
        FunctionInvocationOptions(max_result_chars=99)
    assert FunctionInvocationOptions(max_result_chars=100).max_result_chars == 100


@tool
def sized(n: int) -> str:
    """Return exactly n characters."""
    return "z" * n


@pytest.mark.parametrize(("size", "cut"), [(LIMIT, False), (LIMIT + 1, True)])
async def test_through_the_loop_and_the_run_log(size: int, cut: bool) -> None:
    """What the model receives and what the run log records are the same text, cut or not."""
    expected = "z" * size if not cut else "z" * LIMIT + cut_note(size)
    buf = io.StringIO()
    client = (
        ChatClientBuilder(
            script({"calls": [call("sized", {"equals": expected}, n=size)]}, {"text": "ok"})
        )
        .use_function_invocation()
        .use_run_log(buf)
        .build()
    )
    await client.get_response(user(), opts(sized))
    tool_events = [e for e in map(json.loads, buf.getvalue().splitlines()) if e["type"] == "tool"]
    assert [e["data"]["result"] for e in tool_events] == [expected]


@pytest.mark.integration
async def test_an_mcp_text_result_at_the_boundary() -> None:
    """A real MCP server's text block of exactly 4,000 characters reaches the model whole;
    4,001 are cut (the MCP conversion adds nothing that would push it over)."""
    async with MCPClient.stdio(sys.executable, [str(SERVER_SCRIPT), "stdio"]) as server:
        tools = await server.list_tools()
        turns = [
            {"calls": [call("echo", {"equals": "e" * LIMIT}, text="e" * LIMIT)]},
            {"calls": [call("echo", {"equals": "e" * LIMIT + cut_note(LIMIT + 1)},
                            text="e" * (LIMIT + 1))]},
            {"text": "ok"},
        ]  # fmt: skip
        client = ChatClientBuilder(script(*turns)).use_function_invocation().build()
        answer = await client.get_response(user(), opts(*tools))
    assert answer.text == "ok"


# -- the run log's round text ------------------------------------------------------------------

TEXT_LIMIT = 2000


def logged_round_text(text: str, **log_options: Any) -> str:
    buf = io.StringIO()
    log = RunLog(buf, **log_options)
    log.round(ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)]), 1.0)
    (event,) = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert event["type"] == "round"
    return str(event["data"]["text"])


def test_the_run_log_keeps_2000_characters_by_default() -> None:
    assert RunLog(io.StringIO()).max_text_chars == TEXT_LIMIT


@pytest.mark.parametrize("size", [0, 1, TEXT_LIMIT - 1, TEXT_LIMIT])
def test_round_text_up_to_the_limit_is_whole(size: int) -> None:
    text = "r" * size
    assert logged_round_text(text) == text


@pytest.mark.parametrize("size", [TEXT_LIMIT + 1, 3 * TEXT_LIMIT])
def test_round_text_above_the_limit_is_cut_and_says_so(size: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(size))
    assert logged_round_text(text) == text[:TEXT_LIMIT] + f"… [cut, {size} characters]"


def test_round_text_limits_are_per_log() -> None:
    assert logged_round_text("s" * 50, max_text_chars=50) == "s" * 50
    assert logged_round_text("s" * 51, max_text_chars=50) == "s" * 50 + "… [cut, 51 characters]"
    assert logged_round_text("s" * 10_000, max_text_chars=None) == "s" * 10_000
