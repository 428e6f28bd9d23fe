"""``ResponseFormat``: what shape the model's answer must have (text, any JSON, a JSON schema).

Set it on :attr:`ChatOptions.response_format <loopkit.abstractions.chat.ChatOptions>`; a provider
that supports structured output sends it natively (``LiteLLMChatClient`` as OpenAI's
``response_format``, which litellm maps for the other providers); the scripted and function
clients ignore it. :meth:`ResponseFormat.for_type` derives the schema from a Python type with
pydantic (a model, a dataclass, a TypedDict, a primitive or a container of them). Providers want
an object at the root, so any other schema is wrapped as ``{"result": <schema>}``;
:attr:`ResponseFormat.wrap_key` says so, and the agent unwraps the answer before validating it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter

__all__ = ["ResponseFormat", "ResponseFormatKind"]

ResponseFormatKind = Literal["text", "json", "json_schema"]

#: The key under which :meth:`ResponseFormat.for_type` wraps a schema that is not an object.
WRAP_KEY = "result"

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """The shape of the answer: ``text``, ``json`` (any JSON object) or ``json_schema``.

    Build one with :meth:`text`, :meth:`json`, :meth:`json_schema` or :meth:`for_type`.
    """

    #: ``text``, ``json`` (any JSON object) or ``json_schema`` (an object matching ``schema``).
    kind: ResponseFormatKind = "text"
    #: The JSON schema of the answer (``json_schema`` only).
    schema: dict[str, Any] | None = None
    #: A name for the schema (letters, digits, ``_`` and ``-``; providers require one).
    name: str | None = None
    #: Ask the provider to enforce the schema exactly (OpenAI's strict structured outputs).
    strict: bool = False
    #: Set when :meth:`for_type` wrapped a non-object schema: the answer's value is under it.
    wrap_key: str | None = None

    @classmethod
    def text(cls) -> ResponseFormat:
        """Plain text (the default of every model)."""
        return cls("text")

    @classmethod
    def json(cls) -> ResponseFormat:
        """Any JSON object (OpenAI's JSON mode)."""
        return cls("json")

    @classmethod
    def json_schema(cls, schema: dict[str, Any], name: str, strict: bool = True) -> ResponseFormat:
        """A JSON object matching ``schema`` (used as given; see :meth:`for_type` to derive one)."""
        if not isinstance(schema, dict):
            raise TypeError(f"schema must be a JSON schema as a dict, got {type(schema).__name__}")
        return cls("json_schema", dict(schema), _clean_name(name), strict)

    @classmethod
    def for_type(cls, tp: Any, *, name: str | None = None, strict: bool = True) -> ResponseFormat:
        """The schema of ``tp`` as pydantic sees it: a model, dataclass, TypedDict, primitive or
        container. A schema whose root is not an object with properties is wrapped as
        ``{"result": <schema>}`` (:attr:`wrap_key`). With ``strict`` the schema is made fit for
        strict mode (every object closed, every property listed as required, nullable where
        optional); a schema that cannot be (a free-form dict) is sent with ``strict`` off."""
        try:
            schema = TypeAdapter(tp).json_schema()
        except Exception as e:  # pydantic cannot describe the type
            # pydantic's first line says what failed; the rest is advice for model authors.
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TypeError(f"cannot derive a JSON schema from {tp!r}: {first}") from e
        schema = _drop_titles(schema)
        wrap_key: str | None = None
        if schema.get("type") != "object" or "properties" not in schema:
            defs = schema.pop("$defs", None)
            schema = {
                "type": "object",
                "properties": {WRAP_KEY: schema},
                "required": [WRAP_KEY],
                "additionalProperties": False,
            }
            if defs:
                schema["$defs"] = defs
            wrap_key = WRAP_KEY
        if strict:
            strict_schema = _strict(schema)
            strict = strict_schema is not None
            schema = strict_schema if strict_schema is not None else schema
        return cls("json_schema", schema, _clean_name(name or _type_name(tp)), strict, wrap_key)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``response_format`` value (litellm's input format)."""
        if self.kind == "text":
            return {"type": "text"}
        if self.kind == "json":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": self.name or "result",
                "schema": self.schema or {},
                "strict": self.strict,
            },
        }


def _type_name(tp: Any) -> str:
    return str(getattr(tp, "__name__", None) or "result")


def _clean_name(name: str) -> str:
    cleaned = _NAME_CHARS.sub("_", name)[:64]
    if not cleaned:
        raise ValueError(f"a response format needs a name of letters, digits, _ or -; got {name!r}")
    return cleaned


def _drop_titles(node: Any) -> Any:
    """The schema without pydantic's ``title`` noise (a property called ``title`` stays)."""
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _drop_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _drop_titles(value)
    return out


def _strict(node: Any) -> Any:
    """``node`` fit for strict structured outputs, or None when it cannot be (an object with
    free-form properties)."""
    if isinstance(node, list):
        items = [_strict(v) for v in node]
        return None if any(i is None for i in items) else items
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs"):
            converted = {name: _strict(sub) for name, sub in value.items()}
            if any(v is None for v in converted.values()):
                return None
            out[key] = converted
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "additionalProperties"):
            if key == "additionalProperties" and value is not False:
                return None  # a dict with free keys: strict mode cannot express it
            converted_value = _strict(value)
            if converted_value is None:
                return None
            out[key] = converted_value
        elif key == "default" and value is None:
            continue  # strict mode rejects defaults; a nullable type already allows null
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
        out["required"] = list(out["properties"])
    return out
