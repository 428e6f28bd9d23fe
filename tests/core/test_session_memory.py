"""InMemorySession and the rule every store keeps: never a call without its result."""

from __future__ import annotations

import pytest

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
)
from loopkit.sessions import IncompleteStepError, InMemorySession, Session


def call(call_id: str, name: str = "read_file") -> ChatMessage:
    return ChatMessage(
        role=ChatRole.ASSISTANT, contents=[FunctionCallContent(call_id=call_id, name=name)]
    )


def result(call_id: str) -> ChatMessage:
    return ChatMessage(
        role=ChatRole.TOOL, contents=[FunctionResultContent(call_id=call_id, result="ok")]
    )


async def test_it_is_a_session_and_keeps_messages_in_order() -> None:
    session = InMemorySession("s1")
    assert isinstance(session, Session)
    await session.add_messages([ChatMessage.from_text("user", "hi")])
    await session.add_messages([call("c1"), result("c1"), ChatMessage.from_text("assistant", "x")])
    texts = [m.role.value for m in await session.get_messages()]
    assert texts == ["user", "assistant", "tool", "assistant"]


async def test_a_call_without_its_result_is_refused_and_nothing_is_stored() -> None:
    session = InMemorySession()
    with pytest.raises(IncompleteStepError, match=r"read_file \(c1\)"):
        await session.add_messages([ChatMessage.from_text("user", "hi"), call("c1")])
    assert await session.get_messages() == []
    with pytest.raises(IncompleteStepError, match="never made"):
        await session.add_messages([result("c9")])


async def test_a_limit_never_starts_with_an_orphaned_result() -> None:
    session = InMemorySession()
    await session.add_messages([call("c1"), result("c1"), ChatMessage.from_text("assistant", "a")])
    last_two = await session.get_messages(limit=2)
    assert [m.role.value for m in last_two] == ["assistant"]  # the result lost its call
    assert len(await session.get_messages(limit=3)) == 3
    assert await session.get_messages(limit=0) == []


async def test_popping_a_result_leaves_its_call_open() -> None:
    session = InMemorySession()
    await session.add_messages([call("c1"), result("c1")])
    popped = await session.pop_message()
    assert popped is not None and popped.role == ChatRole.TOOL
    with pytest.raises(IncompleteStepError):
        await session.add_messages([ChatMessage.from_text("user", "next")])
    await session.add_messages([result("c1")])
    assert len(await session.get_messages()) == 2


async def test_stored_messages_are_copies() -> None:
    session = InMemorySession()
    message = ChatMessage.from_text("user", "original")
    await session.add_messages([message])
    message.contents.clear()
    (read,) = await session.get_messages()
    read.contents.clear()
    (again,) = await session.get_messages()
    assert again.text == "original"


async def test_metadata_merges_removes_and_clears() -> None:
    session = InMemorySession()
    await session.set_metadata({"card": "x", "rounds": 3})
    await session.set_metadata({"rounds": None, "model": "m"})
    assert await session.get_metadata() == {"card": "x", "model": "m"}
    with pytest.raises(ValueError, match="JSON"):
        await session.set_metadata({"bad": object()})
    await session.add_messages([ChatMessage.from_text("user", "hi")])
    await session.clear()
    assert await session.get_messages() == [] and await session.get_metadata() == {}


def test_bad_ids_and_limits_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="session_id"):
        InMemorySession("")
