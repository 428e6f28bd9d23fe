"""Tool disclosure's compacted schemas keep a real default of an optional argument (issue 21: an
outside reviewer dropped it without any test noticing)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

from loopkit import Agent, ChatMessage, ChatOptions, ChatResponse, ScriptedChatClient, tool
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.tool_disclosure import ToolDisclosure, compact_schema


@tool
def search(
    pattern: str,
    limit: Annotated[int | None, "at most this many hits (none: all)"] = 50,
    folder: str | None = "src",
    case: bool | None = None,
) -> str:
    """Search the files."""
    return f"{pattern} {limit} {folder} {case}"


def test_an_optional_argument_keeps_its_real_default() -> None:
    small = compact_schema(search.parameters)["properties"]
    # None is a value the tool accepts here, and the default is not None: both must stay, or a
    # model would believe that leaving `limit` out means "all hits".
    assert small["limit"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": 50,
        "description": "at most this many hits (none: all)",
    }
    assert small["folder"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "src"}
    # a null default is what leaving it out means anyway: the plain type is enough
    assert small["case"] == {"type": "boolean"}


def test_a_non_null_default_that_says_nothing_still_goes() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": ""}
    assert compact_schema(schema) == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_the_model_is_offered_the_real_default() -> None:
    offered: list[dict[str, Any]] = []

    class Offered(DelegatingChatClient):
        async def get_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> ChatResponse:
            assert options is not None
            offered.append({t.name: t.parameters for t in options.tools})
            return await self.inner.get_response(messages, options)

    disclosure = ToolDisclosure(["*"])
    agent = Agent(
        Offered(ScriptedChatClient([{"text": "done"}])),
        tools=disclosure.tools([search]),
        middleware=[disclosure.middleware],
    )
    asyncio.run(agent.run("go"))
    limit = offered[0]["search"]["properties"]["limit"]
    assert limit["default"] == 50 and {"type": "null"} in limit["anyOf"]
