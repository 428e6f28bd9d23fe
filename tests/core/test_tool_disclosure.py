"""Progressive tool disclosure: what each request offers the model, and the compacted schemas."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

import pytest

from loopkit import (
    Agent,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ScriptDivergedError,
    ScriptedChatClient,
    tool,
)
from loopkit.abstractions.chat import ChatClient
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.tool_disclosure import LOAD_TOOLS, ToolDisclosure, compact_schema


@tool
def read(path: str) -> str:
    """Read a file. Long details follow here."""
    return f"read {path}"


@tool
def click(target: str, row: Annotated[int | None, "table row"] = None, times: int = 1) -> str:
    """Click an element like a user; waits for the effect."""
    return f"clicked {target}"


@tool
def cell(table: str, row: int) -> str:
    """Read a table cell."""
    return f"{table}[{row}]"


class Offered(DelegatingChatClient):
    """Records the tool names (and schemas) each request offers the model."""

    def __init__(self, inner: ChatClient) -> None:
        super().__init__(inner)
        self.names: list[list[str]] = []
        self.schemas: list[dict[str, Any]] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        assert options is not None
        self.names.append([t.name for t in options.tools])
        self.schemas.append({t.name: t.parameters for t in options.tools})
        return await self.inner.get_response(messages, options)


def run(
    turns: list[dict[str, Any]], core: list[str], defer: tuple[str, ...] = ("*",)
) -> tuple[Offered, str]:
    disclosure = ToolDisclosure(core, defer=defer)
    offered = Offered(ScriptedChatClient(turns, require_offered=True))
    agent = Agent(
        offered,
        tools=disclosure.tools([read, click, cell]),
        middleware=[disclosure.middleware],
        include_detailed_errors=True,
    )
    return offered, asyncio.run(agent.run("go")).text


def test_core_first_then_loaded_tools_appended_in_load_order() -> None:
    offered, text = run(
        [
            {"calls": [{"name": LOAD_TOOLS, "arguments": {"names": ["cell", "click"]}}]},
            {"calls": [{"name": "cell", "arguments": {"table": "T", "row": 0}}]},
            {"calls": [{"name": "click", "arguments": {"target": "B"}}]},
            {"text": "done"},
        ],
        core=["read"],
    )
    assert text == "done"
    assert offered.names[0] == ["read", LOAD_TOOLS]
    # the earlier tools keep their places (a prompt cache keeps them); loads come after
    assert offered.names[1:] == [["read", LOAD_TOOLS, "cell", "click"]] * 3


def test_a_tool_not_loaded_is_not_offered() -> None:
    with pytest.raises(ScriptDivergedError, match="calls cell, which this request did not offer"):
        run([{"calls": [{"name": "cell", "arguments": {"table": "T", "row": 0}}]}], core=["read"])


def test_a_deferred_tool_called_without_a_load_is_offered_from_then_on() -> None:
    """A model (not a strict replay) may call a deferred tool it knows by name: the loop runs it,
    and later requests offer it, appended, as its history now calls it; a failed call loads
    nothing."""
    disclosure = ToolDisclosure(["read"])
    turns: list[dict[str, Any]] = [
        {"calls": [{"name": "cell", "arguments": {"table": "T"}}]},  # invalid: an error result
        {"calls": [{"name": "cell", "arguments": {"table": "T", "row": 0}}]},
        {"text": "done"},
    ]
    offered = Offered(ScriptedChatClient(turns))
    agent = Agent(
        offered, tools=disclosure.tools([read, click, cell]), middleware=[disclosure.middleware]
    )
    assert asyncio.run(agent.run("go")).text == "done"
    assert offered.names == [
        ["read", LOAD_TOOLS],
        ["read", LOAD_TOOLS],
        ["read", LOAD_TOOLS, "cell"],
    ]


def test_a_failed_load_loads_nothing_and_names_what_exists() -> None:
    turns: list[dict[str, Any]] = [
        {
            "calls": [
                {
                    "name": LOAD_TOOLS,
                    "arguments": {"names": ["cell", "nope"]},
                    "expect": {"error": True, "contains": ["nope", "available: click, cell"]},
                }
            ]
        },
        {"text": "done"},
    ]
    offered, _ = run(turns, core=["read"])
    assert offered.names == [["read", LOAD_TOOLS], ["read", LOAD_TOOLS]]


def test_patterns_and_nothing_deferred() -> None:
    offered, _ = run([{"text": "done"}], core=["*"])
    assert offered.names == [["read", "click", "cell"]]  # no load_tools when all are core
    offered, _ = run([{"text": "done"}], core=["c*"])
    assert offered.names == [["click", "cell", LOAD_TOOLS]]


def test_load_tools_lists_the_deferred_tools() -> None:
    loader = ToolDisclosure(["read"]).tools([read, click, cell])[-1]
    assert loader.name == LOAD_TOOLS
    assert loader.description.endswith("Available: click, cell.")


def test_compacted_schema_keeps_meaning_drops_noise() -> None:
    full = click.parameters
    assert "anyOf" in full["properties"]["row"]  # pydantic's Optional spelling, before
    small = compact_schema(
        {
            "title": "clickArguments",
            "type": "object",
            "properties": {
                "title": {"type": "string", "title": "Title"},  # an argument named "title"
                "row": {
                    "anyOf": [{"type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": "table row",
                    "title": "Row",
                },
                "times": {"type": "integer", "default": 1, "maximum": 5},
            },
            "required": ["title"],
        }
    )
    assert small == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "row": {"type": "integer", "description": "table row"},
            "times": {"type": "integer", "default": 1, "maximum": 5},
        },
        "required": ["title"],
    }


def test_compacted_schema_drops_what_goes_without_saying() -> None:
    # additionalProperties false and empty defaults ("", false, []) say nothing a model needs
    # (an optional argument left out is empty or off; the tool still refuses unknown arguments)
    small = compact_schema(
        {
            "type": "object",
            "properties": {
                "folder": {"type": "string", "default": ""},
                "diff": {"type": "boolean", "default": False},
                "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                "clear": {"type": "boolean", "default": True},
                "start": {"type": "integer", "default": 0},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "inner": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "additionalProperties": False,
        }
    )
    assert small == {
        "type": "object",
        "properties": {
            "folder": {"type": "string"},
            "diff": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "clear": {"type": "boolean", "default": True},  # a real default stays
            "start": {"type": "integer", "default": 0},  # 0 is a value, not "nothing"
            "env": {"type": "object", "additionalProperties": {"type": "string"}},  # a map
            "inner": {"type": "object", "properties": {}},
        },
    }


def test_requests_carry_the_compacted_schemas() -> None:
    offered, _ = run([{"text": "done"}], core=["*"])
    row = offered.schemas[0]["click"]["properties"]["row"]
    assert row == {"type": "integer", "description": "table row"}


def test_defer_leaves_unlisted_tool_sets_offered() -> None:
    # only c* tools may wait for a load; of those, cell is core: click waits
    offered, _ = run(
        [
            {"calls": [{"name": LOAD_TOOLS, "arguments": {"names": ["click"]}}]},
            {"text": "done"},
        ],
        core=["cell"],
        defer=["c*"],
    )
    assert offered.names == [["read", "cell", LOAD_TOOLS], ["read", "cell", LOAD_TOOLS, "click"]]
