"""The arguments of a tool whose parameters all have simple types, without a pydantic model.

A :class:`~loopkit.abstractions.tools.FunctionTool` describes and validates its arguments with a
pydantic model built on first use: about a millisecond a tool for the model and two more for
its JSON schema, paid in the first rounds of every run that uses the tool for the first time.
Most tools take a few ``str``, ``int``, ``float`` and ``bool`` parameters (maybe optional, maybe
lists of those, with scalar defaults and descriptions): for those, :func:`simple_arguments`
writes the JSON schema directly and validates with a validator of ``pydantic_core`` (the engine
under pydantic's models) built from a core schema, which takes microseconds. Both are what the
pydantic model gives (the schema key for key, in the same order; the same coercions and the same
errors; ``tests/core/test_simple_arguments.py`` compares them); any other parameter leaves the
tool to the model.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Union, get_args, get_origin

__all__ = ["Parameter", "simple_arguments"]

#: A parameter without a default.
REQUIRED: Any = ...

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_DEFAULT_TYPES = (str, int, float, bool, type(None))


class Parameter(NamedTuple):
    """One parameter as the tool sees it: its name, its type (``Annotated`` unwrapped to its
    base when its extras are description strings), its default (:data:`REQUIRED` for none) and
    its description."""

    name: str
    annotation: Any
    default: Any
    description: str | None


def _core(kind: type) -> Any:
    from pydantic_core import core_schema as cs

    makers: dict[type, Callable[[], Any]] = {
        str: cs.str_schema,
        int: cs.int_schema,
        float: cs.float_schema,
        bool: cs.bool_schema,
    }
    return makers[kind]()


def _describe(annotation: Any) -> tuple[dict[str, Any], Any] | None:
    """(JSON schema, core schema) of a simple type: a scalar, ``X | None``, ``list[X]``."""
    from pydantic_core import core_schema as cs

    if annotation in _JSON_TYPES:  # exact: bool is an int, and subclasses are not simple
        return {"type": _JSON_TYPES[annotation]}, _core(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = _describe(args[0] if args[1] is type(None) else args[1])
        if inner is None or "anyOf" in inner[0]:
            return None
        return {"anyOf": [inner[0], {"type": "null"}]}, cs.nullable_schema(inner[1])
    if origin is list and len(args) == 1 and args[0] in _JSON_TYPES:
        return {"items": {"type": _JSON_TYPES[args[0]]}, "type": "array"}, cs.list_schema(
            _core(args[0])
        )
    return None


def simple_arguments(
    parameters: Sequence[Parameter],
) -> tuple[Callable[[dict[str, Any]], dict[str, Any]], dict[str, Any]] | None:
    """(validate, JSON schema) for ``parameters``, or None when one of them is not simple.

    ``validate(arguments)`` returns every parameter's value (defaults filled in) converted to
    its type, or raises pydantic's ``ValidationError``; unknown names are refused."""
    from pydantic_core import SchemaValidator
    from pydantic_core import core_schema as cs

    properties: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    required: list[str] = []
    for p in parameters:
        described = _describe(p.annotation)
        if described is None:
            return None
        json_schema, core_schema = described
        prop = dict(json_schema)
        if p.default is not REQUIRED:
            if type(p.default) not in _DEFAULT_TYPES:
                return None
            prop["default"] = p.default
            core_schema = cs.with_default_schema(core_schema, default=p.default)
        else:
            required.append(p.name)
        if p.description is not None:
            prop["description"] = p.description
        properties[p.name] = dict(sorted(prop.items()))  # pydantic's order: by key
        fields[p.name] = cs.typed_dict_field(core_schema, required=p.default is REQUIRED)
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    validator = SchemaValidator(cs.typed_dict_schema(fields, extra_behavior="forbid"))
    validate: Callable[[dict[str, Any]], dict[str, Any]] = validator.validate_python
    return validate, schema
