"""How an agent turns the model's final answer into its typed output, and what it tells the
model when the answer does not fit."""

from __future__ import annotations

import json
import re
from typing import Any, Generic, TypeVar, cast, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError, create_model

from loopkit.abstractions.response_format import ResponseFormat
from loopkit.errors import describe_validation_error

__all__ = ["OutputSpec"]

OutputT = TypeVar("OutputT")

# A whole answer wrapped in a Markdown code fence (```json ... ```), as models often write it.
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


def type_name(tp: Any) -> str:
    """A short readable name for an output type (``Invoice``, ``list[int]``, ``str``)."""
    if isinstance(tp, type) and not getattr(tp, "__args__", None):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _check_type(tp: Any) -> None:
    """Refuse what is no type at all (``42``, ``"Invoice"``, an ``Invoice(...)``) in one line,
    before pydantic explains at length why it cannot build a schema from it."""
    if isinstance(tp, type) or get_origin(tp) is not None or tp is Any:
        return
    if isinstance(tp, str):
        raise TypeError(
            f"output_type must be a type, got the string {tp!r}: pass the class itself "
            "(output_type=Invoice), not its name"
        )
    shown = repr(tp) if isinstance(tp, int | float | bool) or tp is None else ""
    kind = type(tp).__name__
    what = f"the {kind} {shown}" if shown else f"an instance of {kind}"
    hint = f" (pass the class: output_type={kind})" if not shown else ""
    raise TypeError(
        f"output_type must be a type such as str, int, list[str], a pydantic model, a "
        f"dataclass or a TypedDict; got {what}{hint}"
    )


class OutputSpec(Generic[OutputT]):
    """The output type of an agent: its response format, its validation, its serialisation.

    ``None`` or ``str`` means text: the answer's text is the output, nothing is validated and
    no response format is requested. Anything else is validated with pydantic
    (``TypeAdapter(output_type)``) from the answer's JSON, unwrapped from ``{"result": ...}``
    when the response format had to wrap it (a bare value is accepted too).
    """

    def __init__(self, output_type: Any) -> None:
        self.output_type = str if output_type is None else output_type
        self.is_text = self.output_type is str
        self.type_name = type_name(self.output_type)
        self.response_format: ResponseFormat | None = None
        self._adapter: TypeAdapter[Any] | None = None
        self._wrapped: TypeAdapter[Any] | None = None
        if self.is_text:
            return
        _check_type(self.output_type)
        try:
            self.response_format = ResponseFormat.for_type(self.output_type)
        except TypeError as e:
            raise TypeError(
                f"output_type {self.type_name} cannot be the answer's shape ({e}); use a pydantic "
                "model, a dataclass, a TypedDict, a primitive or a container of them"
            ) from None
        self._adapter = TypeAdapter(self.output_type)
        if self.response_format.wrap_key is not None:
            fields: dict[str, Any] = {self.response_format.wrap_key: (self.output_type, ...)}
            wrapper: type[BaseModel] = create_model("Wrapped", **fields)
            self._wrapped = TypeAdapter(wrapper)

    def parse(self, text: str) -> OutputT:
        """The output in ``text``; raises pydantic's ``ValidationError`` when it does not fit."""
        if self.is_text:
            return cast(OutputT, text)
        assert self._adapter is not None
        match = _FENCE.match(text)
        raw = match.group("body") if match else text.strip()
        if self._wrapped is not None:
            assert self.response_format is not None and self.response_format.wrap_key
            try:
                wrapped = self._wrapped.validate_json(raw)
            except ValidationError as first:
                try:  # a model that answered the bare value
                    return cast(OutputT, self._adapter.validate_json(raw))
                except ValidationError:
                    raise first from None
            return cast(OutputT, getattr(wrapped, self.response_format.wrap_key))
        return cast(OutputT, self._adapter.validate_json(raw))

    def describe(self, error: ValidationError) -> str:
        """The validation errors as one line (``where: what; where: what``)."""
        return describe_validation_error(error)

    def feedback(self, errors: str) -> str:
        """What the agent tells the model after an answer that did not validate."""
        schema = self.response_format.schema if self.response_format else None
        return (
            f"Your answer is not a valid {self.type_name}: {errors}. Answer again with only the "
            f"JSON, no other text, matching this schema: "
            f"{json.dumps(schema, separators=(',', ':'))}"
        )

    def serialise(self, output: Any) -> str:
        """The output as text (an agent used as a tool returns this): text as it is, anything
        else as JSON."""
        if self.is_text:
            return str(output)
        if isinstance(output, BaseModel):
            return output.model_dump_json()
        assert self._adapter is not None
        return self._adapter.dump_json(output).decode()
