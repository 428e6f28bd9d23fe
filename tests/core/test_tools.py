from __future__ import annotations

import inspect
import threading
from typing import Annotated, Literal

import pytest
from pydantic import Field

from loopkit import FunctionTool, Tool, ToolArgumentsError, tool
from loopkit.abstractions.tools import parse_docstring


@tool
def search(
    query: Annotated[str, "what to look for"],
    limit: int = 10,
    mode: Literal["exact", "fuzzy"] = "exact",
) -> list[str]:
    """Search the notes.

    Args:
        query: ignored here; Annotated wins.
        limit: how many hits
            at most.
    """
    return [query] * min(limit, 2)


def test_schema_from_signature_annotated_and_docstring() -> None:
    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the notes."
    props = search.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "what to look for"}
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["default"] == 10
    assert props["limit"]["description"] == "how many hits at most."
    assert props["mode"]["enum"] == ["exact", "fuzzy"]
    assert search.parameters["required"] == ["query"]
    assert search.parameters["additionalProperties"] is False
    assert "title" not in search.parameters


async def test_arguments_are_validated_and_converted() -> None:
    assert await search.invoke({"query": "x", "limit": "1"}) == ["x"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "query: Field required"),
        ({"query": "x", "limit": "many"}, "limit: Input should be a valid integer"),
        ({"query": "x", "mode": "loose"}, "mode: Input should be 'exact' or 'fuzzy'"),
        ({"query": "x", "colour": 1}, "colour: Extra inputs are not permitted"),
    ],
)
async def test_invalid_arguments_give_a_readable_error(arguments: dict, fragment: str) -> None:
    with pytest.raises(ToolArgumentsError) as e:
        await search.invoke(arguments)
    assert fragment in str(e.value)
    assert "invalid arguments for search" in str(e.value)
    assert "Expected: query (string), limit (integer), mode (string)" in str(e.value)


async def test_sync_functions_run_off_the_event_loop() -> None:
    seen: list[str] = []

    @tool
    def where() -> str:
        seen.append(threading.current_thread().name)
        return "ok"

    assert await where.invoke({}) == "ok"
    assert seen[0] != threading.main_thread().name


async def test_async_functions_are_awaited() -> None:
    @tool(name="twice", description="Double it.")
    async def double(x: Annotated[int, Field(ge=0, description="a count")]) -> int:
        return 2 * x

    assert double.name == "twice"
    assert double.description == "Double it."
    assert double.parameters["properties"]["x"]["minimum"] == 0
    assert double.parameters["properties"]["x"]["description"] == "a count"
    assert await double.invoke({"x": 4}) == 8
    with pytest.raises(ToolArgumentsError, match="greater than or equal to 0"):
        await double.invoke({"x": -1})


def test_var_args_are_refused_with_a_reason() -> None:
    def f(*items: int) -> int:
        return 0

    with pytest.raises(TypeError, match="tools need named parameters"):
        FunctionTool.from_function(f)


def test_decorated_function_stays_callable() -> None:
    assert search("q", limit=1) == ["q"]


async def test_decorated_async_function_called_directly_returns_its_coroutine() -> None:
    @tool(name="triple")
    async def triple(x: int) -> int:
        return 3 * x

    pending = triple(2)
    assert inspect.iscoroutine(pending)
    assert await pending == 6
    assert isinstance(triple, Tool) and isinstance(triple, FunctionTool)


def test_function_tool_is_generic_in_the_signature_at_runtime_too() -> None:
    # FunctionTool[P, R] subscripts (a user may annotate with it); from_function keeps settings.
    alias = FunctionTool[[int], int]
    assert alias.__origin__ is FunctionTool
    built = FunctionTool.from_function(lambda a: a, name="echo", description="Echo it.")
    assert (built.name, built.description, built(5)) == ("echo", "Echo it.", 5)


def test_parse_docstring_rest_style() -> None:
    summary, params = parse_docstring(
        """Do a thing.

        More words.

        :param str path: the file
        :param depth: how deep
        :returns: nothing
        """
    )
    assert summary == "Do a thing.\n\nMore words."
    assert params == {"path": "the file", "depth": "how deep"}


def test_a_tool_rewrapped_under_another_name_keeps_the_function() -> None:
    plus = FunctionTool.from_function(search, name="find")
    assert plus.name == "find"
    assert plus.description == "Search the notes."
    assert plus.parameters == search.parameters
    assert plus("q", limit=1) == ["q"]
    assert str(inspect.signature(search)).startswith("(query:")


class Opaque:
    """A type pydantic cannot validate (no schema, no arbitrary types allowed)."""


def test_a_type_without_a_schema_is_a_clear_error_on_first_use() -> None:
    """The argument model is built on first use (no pydantic at decoration time): a parameter
    type pydantic knows nothing about is then a TypeError that names the tool."""

    def handle(item: Opaque) -> str:
        return "never"

    made = FunctionTool.from_function(handle)  # the signature itself is fine
    with pytest.raises(TypeError, match="tool 'handle': cannot validate its arguments"):
        made.parameters  # noqa: B018
    with pytest.raises(TypeError, match="tool 'handle'"):
        made.validate({"item": 1})


def test_the_schema_is_built_once_even_by_racing_threads() -> None:
    def count(n: int) -> int:
        """Count to n."""
        return n

    made = FunctionTool.from_function(count)
    barrier = threading.Barrier(8)
    seen: list[dict[str, object]] = []

    def read() -> None:
        barrier.wait()
        seen.append(made.parameters)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(s is seen[0] for s in seen)
    assert made.validate({"n": "3"}) == {"n": 3}
    assert made.parameters is seen[0]
