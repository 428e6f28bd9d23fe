"""Messages, contents, a message's ``contents`` and a call's ``arguments`` (deeply) stamp every
in-place change (``edit_count``), which caches of per-message work rely on; copies, validation
and serialisation are not changes, and keep those containers watched."""

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
from loopkit.abstractions.watched import WatchedDict, WatchedList

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
            FunctionCallContent(
                call_id="c", name="f", arguments={"x": 1, "list": [1, 2, {"deep": True}]}
            ),
        ],
    )


#: The methods of ``dict`` that never change it.
DICT_READ_ONLY = {
    "__class__", "__class_getitem__", "__contains__", "__delattr__", "__dir__", "__doc__",
    "__eq__", "__format__", "__ge__", "__getattribute__", "__getitem__", "__getstate__", "__gt__",
    "__hash__", "__init__", "__init_subclass__", "__iter__", "__le__", "__len__", "__lt__",
    "__ne__", "__new__", "__or__", "__reduce__", "__reduce_ex__", "__repr__", "__reversed__",
    "__ror__", "__setattr__", "__sizeof__", "__str__", "__subclasshook__", "copy", "fromkeys",
    "get", "items", "keys", "values",
}  # fmt: skip


def test_every_changing_list_and_dict_method_is_watched() -> None:
    """A new ``list`` or ``dict`` method (a future Python) fails here until it is watched."""
    changing = {name for name in dir(list) if name not in READ_ONLY}
    assert "append" in changing
    assert {name for name in changing if name not in vars(WatchedList)} == set()
    changing = {name for name in dir(dict) if name not in DICT_READ_ONLY}
    assert "update" in changing
    assert {name for name in changing if name not in vars(WatchedDict)} == set()


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
    "arguments key set": lambda m: _args(m).__setitem__("x", 2),
    "arguments key deleted": lambda m: _args(m).__delitem__("x"),
    "arguments updated": lambda m: _args(m).update(y=1),
    "arguments or-ed": lambda m: _args(m).__ior__({"y": 1}),
    "arguments popped": lambda m: _args(m).pop("x"),
    "arguments item popped": lambda m: _args(m).popitem(),
    "arguments setdefault": lambda m: _args(m).setdefault("y", 1),
    "arguments cleared": lambda m: _args(m).clear(),
    "nested list appended": lambda m: _args(m)["list"].append(4),
    "nested dict set": lambda m: _args(m)["list"][2].__setitem__("deep", False),
    "arguments assigned then changed": lambda m: _assign_then_change(m),
}


def _args(m: ChatMessage) -> dict[str, Any]:
    call = m.contents[2]
    assert isinstance(call, FunctionCallContent)
    return call.arguments


def _assign_then_change(m: ChatMessage) -> None:
    call = m.contents[2]
    assert isinstance(call, FunctionCallContent)
    call.arguments = {"plain": [1]}
    before = edit_count()
    call.arguments["plain"].append(2)  # the assigned dict was stored watched
    assert edit_count() != before


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
        for call in each.function_calls:
            assert type(call.arguments) is WatchedDict, each
            assert type(call.arguments["list"]) is WatchedList, each
            assert type(call.arguments["list"][2]) is WatchedDict, each
    calls = [
        FunctionCallContent(call_id="c", name="f"),
        FunctionCallContent.model_construct(call_id="c", name="f", arguments={"a": [1]}),
        FunctionCallContent(call_id="c", name="f").model_copy(update={"arguments": {"a": [1]}}),
    ]
    for call in calls:
        assert type(call.arguments) is WatchedDict, call
    assert type(calls[1].arguments["a"]) is WatchedList


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
    call = m.function_calls[0]
    assert json.dumps(call.arguments) == '{"x": 1, "list": [1, 2, {"deep": true}]}'
    assert call.arguments == {"x": 1, "list": [1, 2, {"deep": True}]}
    assert type(call.model_dump()["arguments"]) is dict
    # An assigned list is copied (as validation always did): the caller's list stays theirs.
    mine = [TextContent(text="mine")]
    m.contents = mine
    mine.append(TextContent(text="later"))
    assert m.text == "mine"


def test_only_plain_dicts_and_lists_are_copied_into_watched_ones() -> None:
    from collections import OrderedDict, defaultdict

    from loopkit.abstractions.watched import watched

    counts: defaultdict[str, int] = defaultdict(int)
    ordered = OrderedDict(a=1)
    data = watched({"counts": counts, "ordered": ordered, "pair": (1, [2]), "list": [{"a": 1}]})
    assert data["counts"] is counts and data["ordered"] is ordered  # their behaviour kept
    assert data["pair"] == (1, [2]) and type(data["pair"][1]) is list  # inside a tuple: as is
    assert type(data["list"]) is WatchedList and type(data["list"][0]) is WatchedDict
