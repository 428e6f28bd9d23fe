"""A tool with simple parameters is described and checked without a pydantic model, exactly as
the model would: the same JSON schema (key for key, in the same order), the same values, the
same errors (``loopkit.abstractions.simple_arguments``)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field, ValidationError

from loopkit import FunctionTool, ToolArgumentsError
from loopkit.abstractions.tools import _clean_schema


def by_model(tool: FunctionTool) -> tuple[Any, dict[str, Any]]:
    """The pydantic model's schema and check for ``tool`` (what it used for every tool before)."""
    model = tool._build_model(tool._parameter_list())

    def check(arguments: dict[str, Any]) -> dict[str, Any]:
        parsed = model.model_validate(arguments)
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    return check, _clean_schema(model.model_json_schema())


def f_scalars(text: str, count: int, ratio: float, flag: bool) -> None:
    """Scalars."""


def f_defaults(
    text: str = "a", count: int = 3, ratio: float = 0.5, flag: bool = False, none: str | None = None
) -> None:
    """Defaults of every scalar type and None."""


def f_described(
    path: Annotated[str, "the file to read"],
    start: Annotated[int, "first line"] = 1,
    lines: int | None = None,
) -> None:
    """Read lines.

    Args:
        lines: how many lines (all when not given)
    """


def f_lists(names: list[str], sizes: list[int] | None = None, weights: list[float] = []) -> None:  # noqa: B006
    """Lists (a list default is not simple: the model handles this one)."""


def f_lists_simple(names: list[str], sizes: list[int] | None = None) -> None:
    """Lists of scalars, optional."""


def f_none() -> None:
    """No parameters at all."""


def f_optional_first(value: None | int = 2) -> None:  # noqa: RUF036  (on purpose)
    """None written first."""


SIMPLE = [f_scalars, f_defaults, f_described, f_lists_simple, f_none, f_optional_first]

INPUTS: list[dict[str, Any]] = [
    {},
    {"text": "x", "count": 1, "ratio": 1.5, "flag": True},
    {"text": "x", "count": "7", "ratio": "2", "flag": "yes"},  # lax coercions
    {"text": 5, "count": 1.5, "ratio": "a", "flag": "maybe"},  # refused, each its own error
    {"text": "x", "count": 1, "ratio": 1, "flag": 0, "other": 1},  # an unknown name
    {"path": "a.py", "start": "3", "lines": None},
    {"path": "a.py", "lines": "x"},
    {"names": ["a", "b"], "sizes": [1, "2"]},
    {"names": "a"},
    {"names": [], "sizes": None},
    {"value": None},
    {"value": "3"},
    {"none": 1, "count": True},
]


@pytest.mark.parametrize("fn", SIMPLE, ids=lambda f: f.__name__)
def test_the_schema_is_the_models_key_for_key(fn: Any) -> None:
    tool = FunctionTool(fn)
    _, expected = by_model(tool)
    assert json.dumps(tool.parameters) == json.dumps(expected)
    assert tool._model is None  # no model was built


@pytest.mark.parametrize("fn", SIMPLE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("arguments", INPUTS, ids=range(len(INPUTS)))
def test_values_and_errors_are_the_models(fn: Any, arguments: dict[str, Any]) -> None:
    tool = FunctionTool(fn)
    check, _ = by_model(tool)
    try:
        expected: Any = check(arguments)
    except ValidationError as e:
        expected = [(err["type"], err["loc"], err["msg"]) for err in e.errors()]
    try:
        got: Any = tool._build()(arguments)
    except ValidationError as e:
        got = [(err["type"], err["loc"], err["msg"]) for err in e.errors()]
    assert got == expected
    if isinstance(expected, dict):
        assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]
        assert list(got) == list(expected)  # every parameter, in order


def f_literal(mode: Literal["a", "b"]) -> None:
    """Literal: not simple (yet)."""


def f_field(count: Annotated[int, Field(ge=1)]) -> None:
    """A constraint: not simple."""


def f_any(value) -> None:  # type: ignore[no-untyped-def]
    """No annotation: not simple."""


def f_field_default(count: int = Field(default=2, description="how many")) -> None:
    """A Field default: not simple."""


@pytest.mark.parametrize("fn", [f_literal, f_field, f_any, f_field_default, f_lists])
def test_other_parameters_keep_the_model(fn: Any) -> None:
    tool = FunctionTool(fn)
    assert tool.parameters is not None
    assert tool._model is not None


async def test_a_simple_tool_refuses_bad_arguments_as_before() -> None:
    tool = FunctionTool(f_described)
    with pytest.raises(ToolArgumentsError) as e:
        await tool.invoke({"start": "x", "extra": 1})
    assert str(e.value) == (
        "invalid arguments for f_described: path: Field required; start: Input should be a "
        "valid integer, unable to parse string as an integer; extra: Extra inputs are not "
        "permitted. Expected: path (string), start (integer), lines (any)."
    )
