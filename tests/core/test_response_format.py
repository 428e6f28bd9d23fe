"""ResponseFormat: text, JSON, a JSON schema, or one derived from a Python type."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from loopkit import ChatOptions
from loopkit.abstractions.response_format import ResponseFormat


class Line(BaseModel):
    description: str
    amount: float
    note: str | None = None


class Invoice(BaseModel):
    customer: str
    lines: list[Line]


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Pair(TypedDict):
    left: str
    right: str


def test_text_json_and_a_given_schema_map_to_openai() -> None:
    assert ResponseFormat.text().to_openai() == {"type": "text"}
    assert ResponseFormat.json().to_openai() == {"type": "json_object"}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = ResponseFormat.json_schema(schema, "my answer!")
    assert fmt.to_openai() == {
        "type": "json_schema",
        "json_schema": {"name": "my_answer_", "schema": schema, "strict": True},
    }
    assert fmt.schema is not schema  # copied: the caller's dict can change without effect


def test_a_model_becomes_a_strict_object_schema_with_its_nested_models() -> None:
    fmt = ResponseFormat.for_type(Invoice)
    assert (fmt.kind, fmt.name, fmt.strict, fmt.wrap_key) == ("json_schema", "Invoice", True, None)
    schema = fmt.schema
    assert schema is not None
    assert schema["required"] == ["customer", "lines"] and schema["additionalProperties"] is False
    line = schema["$defs"]["Line"]
    # strict mode: every property required, objects closed, no null default; note stays nullable
    assert line["required"] == ["description", "amount", "note"]
    assert line["additionalProperties"] is False
    assert "default" not in line["properties"]["note"]
    assert {"type": "null"} in line["properties"]["note"]["anyOf"]
    assert "title" not in schema and "title" not in line


@pytest.mark.parametrize(
    ("tp", "name", "wrapped"),
    [(Point, "Point", False), (Pair, "Pair", False), (int, "int", True), (list[str], "list", True)],
)
def test_dataclasses_typeddicts_and_primitives(tp: Any, name: str, wrapped: bool) -> None:
    fmt = ResponseFormat.for_type(tp)
    assert fmt.name == name and (fmt.wrap_key == "result") is wrapped
    assert fmt.schema is not None and fmt.schema["type"] == "object"
    if wrapped:
        assert fmt.schema["required"] == ["result"]


def test_a_free_form_dict_is_sent_without_strict_mode() -> None:
    fmt = ResponseFormat.for_type(dict[str, int])
    assert fmt.wrap_key == "result" and fmt.strict is False
    assert fmt.schema is not None
    assert fmt.schema["properties"]["result"]["additionalProperties"] == {"type": "integer"}


def test_a_wrapped_schema_keeps_its_definitions_at_the_root() -> None:
    fmt = ResponseFormat.for_type(list[Line])
    assert fmt.schema is not None and "Line" in fmt.schema["$defs"]
    assert fmt.schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Line"}


def test_options_carry_the_format_and_bad_input_is_named() -> None:
    options = ChatOptions(response_format=ResponseFormat.for_type(Point))
    assert options.copy().response_format == options.response_format
    with pytest.raises(TypeError, match="cannot derive a JSON schema from"):
        ResponseFormat.for_type(object())
    with pytest.raises(TypeError, match="schema must be a JSON schema as a dict"):
        ResponseFormat.json_schema("{}", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a name"):
        ResponseFormat.json_schema({}, "")
