"""Pydantic models built from values loopkit made itself, without validating them again.

A streamed run makes several small models a round (the message its updates fold into, the tool
update, the agent's events) from values that are already of their field types: validated
contents, ints, strings. Validating them again is most of what streaming costs beyond a plain
run. :func:`trusted` builds such a model the way pydantic's ``model_construct`` does (the same
four attributes), without its per-call walk over the fields; every field must be given.
``tests/agents/test_stream.py`` checks that each model built so equals its validated twin.
Never use it for data from outside (a provider's JSON, a user's input): that is validated.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

M = TypeVar("M", bound=BaseModel)

# pydantic keeps these in slots of BaseModel; setting them through their descriptors skips the
# lookup by name that object.__setattr__ makes.
_new = object.__new__
_set = object.__setattr__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` holding ``values`` (every field, already of its type)."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set_fields(model, set(values))
    _set_extra(model, None)
    _set_private(model, None)
    return model
