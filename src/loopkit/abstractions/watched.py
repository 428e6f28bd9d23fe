"""Containers that stamp their in-place changes, so that caches of per-message work can trust
what they have seen without reading it again.

A provider maps every message of a conversation to its wire format, and a scripted model counts
its characters: done on every request, the cost of a request grows with the history. A cache
of that work must know when a message it has seen was changed in place. Messages and contents
(:mod:`loopkit.abstractions.content`) stamp every field assigned; the lists and dicts they hold
(a message's ``contents``, a call's ``arguments`` and the dicts and lists nested in them) are
the classes here, which stamp every change. :func:`edit_count` is the latest stamp: a cache
filled while it was ``n`` can trust every message it saw while it is still ``n``.

They compare, serialise (``json``, pydantic), copy and pickle as plain lists and dicts; copies,
deep copies and unpickled ones are watched too. A mutable value of another kind put inside (a
set, an object, a ``dict`` subclass) is not watched.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, Self, SupportsIndex

__all__ = ["WatchedDict", "WatchedList", "edit_count", "mark_edited", "watched"]

# Not configuration: a stamp that caches compare against (any change anywhere makes them look
# again, which is rare: the loop and the middleware make new objects rather than change old
# ones). ``next()`` on a count is atomic, so two threads editing at once still move the stamp to
# a value no cache has seen.
_edit_stamps = itertools.count(1)
_last_edit = [0]


def edit_count() -> int:
    """The stamp of the latest in-place change to a message, a content, or a watched list or
    dict; it moves with every such change."""
    return _last_edit[0]


def mark_edited() -> None:
    """Move the stamp (a message, content or watched container was changed in place)."""
    _last_edit[0] = next(_edit_stamps)


def watched(value: Any) -> Any:
    """``value`` with every plain ``dict`` and ``list`` in it (itself included) made watched
    copies; anything else (a tuple, a set, a ``dict`` or ``list`` subclass such as a
    ``defaultdict``, whose behaviour a copy would lose) is kept as it is."""
    kind = type(value)
    if kind is dict or kind is WatchedDict:
        return WatchedDict({k: watched(v) for k, v in value.items()})
    if kind is list or kind is WatchedList:
        return WatchedList([watched(v) for v in value])
    return value


class WatchedList(list[Any]):
    """A ``list`` that stamps its changes (:func:`edit_count`). Values added are kept as given
    (:class:`~loopkit.abstractions.content.ChatMessage` contents are models, watched themselves);
    use :func:`watched` for nested plain data."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        mark_edited()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        mark_edited()

    def __iadd__(self, values: Iterable[Any]) -> Self:  # type: ignore[misc]
        super().__iadd__(values)
        mark_edited()
        return self

    def __imul__(self, times: SupportsIndex) -> Self:
        super().__imul__(times)
        mark_edited()
        return self

    def append(self, value: Any) -> None:
        super().append(value)
        mark_edited()

    def extend(self, values: Iterable[Any]) -> None:
        super().extend(values)
        mark_edited()

    def insert(self, index: SupportsIndex, value: Any) -> None:
        super().insert(index, value)
        mark_edited()

    def remove(self, value: Any) -> None:
        super().remove(value)
        mark_edited()

    def pop(self, index: SupportsIndex = -1) -> Any:
        value = super().pop(index)
        mark_edited()
        return value

    def clear(self) -> None:
        super().clear()
        mark_edited()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        mark_edited()

    def reverse(self) -> None:
        super().reverse()
        mark_edited()

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # copy, deepcopy and pickle rebuild it from a plain list: a copy is not an edit
        return (type(self), (list(self),))


class WatchedDict(dict[str, Any]):
    """A ``dict`` that stamps its changes (:func:`edit_count`); see :func:`watched` for values
    nested in it."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        mark_edited()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        mark_edited()

    def __ior__(self, other: Any) -> Self:  # type: ignore[misc,override]
        super().__ior__(other)
        mark_edited()
        return self

    def clear(self) -> None:
        super().clear()
        mark_edited()

    def pop(self, key: str, *default: Any) -> Any:
        value = super().pop(key, *default)
        mark_edited()
        return value

    def popitem(self) -> tuple[str, Any]:
        item = super().popitem()
        mark_edited()
        return item

    def setdefault(self, key: str, default: Any = None) -> Any:
        value = super().setdefault(key, default)
        mark_edited()
        return value

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        mark_edited()

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (type(self), (dict(self),))
