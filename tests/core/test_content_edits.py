"""Messages and contents stamp every in-place change (``edit_count``), which caches of per-message
work rely on; copies, validation and serialisation are not changes and keep ``contents`` a list."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    ContentList,
    FunctionCallContent,
    TextContent,
    edit_count,
)

#: The methods of ``list`` that never change it.
READ_ONLY = {
    "__add__", "__class__", "__class_getitem__", "__contains__", "__delattr__", "__dir__",
    "__doc__", "__eq__", "__format__", "__ge__", "__getattribute__", "__getitem__",
    "__getstate__", "__gt__", "__hash__", "__init__", "__init_subclass__", "__iter__", "__le__",
    "__len__", "__lt__", "__mul__", "__ne__", "__new__", "__reduce__", "__reduce_ex__",
    "__repr__", "__reversed__", "__rmul__", "__setattr__", "__sizeof__", "__str__",
    "__subclasshook__", "copy", "count", "index",
}  # fmt: skip


def message() -> ChatMessage:
    return ChatMessage(
        role=ChatRole.ASSISTANT,
        contents=[
            TextContent(text="b"),
            TextContent(text="a"),
            FunctionCallContent(call_id="c", name="f", arguments={"x": 1}),
        ],
    )


def test_every_changing_list_method_is_watched() -> None:
    """A new ``list`` method (a future Python) fails here until ContentList watches it."""
    changing = {name for name in dir(list) if name not in READ_ONLY}
    assert changing, "no changing list methods found"
    assert {name for name in changing if name not in vars(ContentList)} == set()


def _sort(contents: list[Any]) -> None:
    contents.sort(key=lambda c: getattr(c, "text", ""))


def _iadd(contents: list[Any]) -> None:
    contents += [TextContent(text="c")]


def _imul(contents: list[Any]) -> None:
    contents *= 2


CHANGES: dict[str, Callable[[ChatMessage], object]] = {
    "append": lambda m: m.contents.append(TextContent(text="c")),
    "extend": lambda m: m.contents.extend([TextContent(text="c")]),
    "insert": lambda m: m.contents.insert(0, TextContent(text="c")),
    "pop": lambda m: m.contents.pop(),
    "remove": lambda m: m.contents.remove(m.contents[0]),
    "clear": lambda m: m.contents.clear(),
    "sort": lambda m: _sort(m.contents),
    "reverse": lambda m: m.contents.reverse(),
    "setitem": lambda m: m.contents.__setitem__(0, TextContent(text="c")),
    "setitem slice": lambda m: m.contents.__setitem__(slice(0, 2), []),
    "delitem": lambda m: m.contents.__delitem__(0),
    "iadd": lambda m: _iadd(m.contents),
    "imul": lambda m: _imul(m.contents),
    "message field": lambda m: setattr(m, "author_name", "x"),
    "contents assigned": lambda m: setattr(m, "contents", []),
    "content field": lambda m: setattr(m.contents[0], "text", "z"),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_each_change_in_place_moves_the_stamp(change: str) -> None:
    m = message()
    before = edit_count()
    CHANGES[change](m)
    assert edit_count() != before


def test_contents_is_a_watched_list_however_the_message_is_made() -> None:
    m = message()
    made = [
        m,
        ChatMessage.model_validate(m.model_dump()),
        ChatMessage.model_validate_json(m.model_dump_json()),
        ChatMessage.model_construct(role=ChatRole.USER, contents=[TextContent(text="a")]),
        m.model_copy(),
        m.model_copy(update={"contents": [TextContent(text="a")]}),
        m.model_copy(deep=True),
        copy.copy(m),
        copy.deepcopy(m),
        pickle.loads(pickle.dumps(m)),
        ChatMessage(role=ChatRole.USER),
    ]
    m2 = message()
    m2.contents = [TextContent(text="assigned")]
    made.append(m2)
    for each in made:
        assert type(each.contents) is ContentList, each


def test_copies_and_reads_are_not_changes() -> None:
    m = message()
    before = edit_count()
    copy.deepcopy(m)
    pickle.loads(pickle.dumps(m))
    m.model_copy(update={"contents": [TextContent(text="a")]})
    ChatMessage.model_validate(m.model_dump())
    _ = (m.text, m.function_calls, list(m.contents), m == message())
    assert edit_count() == before


def test_a_watched_list_is_still_a_plain_list_to_its_readers() -> None:
    m = message()
    assert m.contents == list(m.contents)
    assert json.loads(m.model_dump_json())["contents"][0] == {"type": "text", "text": "b"}
    assert isinstance(m.contents, list)
    assert m == ChatMessage.model_validate(m.model_dump())
    # An assigned list is copied (as validation always did): the caller's list stays theirs.
    mine = [TextContent(text="mine")]
    m.contents = mine
    mine.append(TextContent(text="later"))
    assert m.text == "mine"
