"""The Session contract, once, for every store (the ``store`` fixture: memory, SQLite,
SQLAlchemy on SQLite, SQLAlchemy on PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from loopkit.sessions import IncompleteStepError, Session, SessionStoreError
from tests.sessions.conftest import Store, call, dump, result, say


def roles(messages: list[ChatMessage]) -> list[str]:
    return [m.role.value for m in messages]


async def test_messages_come_back_equal_and_in_order(store: Store) -> None:
    session = store.session()
    assert isinstance(session, Session)
    assert session.session_id == store.id("s")
    sent = [
        say("system", "be brief"),
        say("user", "hi"),
        ChatMessage(
            role=ChatRole.ASSISTANT,
            author_name="planner",
            contents=[
                TextContent(text="reading"),
                FunctionCallContent(call_id="c1", name="read_file", arguments={"path": "a"}),
                FunctionCallContent(call_id="c2", name="grep", arguments={"q": [1, {"x": None}]}),
            ],
        ),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[
                FunctionResultContent(call_id="c2", result="no match", error=True),
                FunctionResultContent(call_id="c1", result="text"),
            ],
        ),
        say("assistant", "done"),
    ]
    await session.add_messages(sent[:2])
    await session.add_messages(sent[2:])
    assert dump(await session.get_messages()) == dump(sent)
    assert dump(await store.session().get_messages()) == dump(sent)  # another object, same id


async def test_binary_data_survives(store: Store) -> None:
    # A PNG header is not UTF-8: stored as JSON it must go through base64, not break the batch.
    image = DataContent(media_type="image/png", data=b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    linked = DataContent(media_type="image/jpeg", uri="https://example.org/x.jpg")
    session = store.session()
    await session.add_messages([ChatMessage(role=ChatRole.USER, contents=[image, linked])])
    (back,) = await store.session().get_messages()
    assert back.contents == [image, linked]


async def test_unicode_and_surrogates_survive(store: Store) -> None:
    # Everything a Python str (and so ChatMessage) holds: astral emoji, right-to-left text,
    # combining marks, NUL and control characters, and lone surrogates (what bytes decoded
    # with errors="surrogateescape" become, e.g. a tool's output in an unknown encoding).
    texts = [
        "héllo wörld — ½ · 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀👩‍👩‍👧",
        "שלום عليكم",
        "e\u0301 \u200b\ufeff",
        "nul\x00 bell\x07 esc\x1b tab\t crlf\r\n",
        "lone \udc80\udcff surrogates \ud800 end",
        "\\u0000 and \\ud800 as literal text",
    ]
    session = store.session("ü-ß-😀")
    calls = [
        ChatMessage(
            role=ChatRole.ASSISTANT,
            contents=[
                FunctionCallContent(call_id="ç1", name="lire", arguments={"chemin": texts[4]})
            ],
        ),
        ChatMessage(
            role=ChatRole.TOOL, contents=[FunctionResultContent(call_id="ç1", result=texts[3])]
        ),
    ]
    sent = [say("user", t) for t in texts] + calls
    await session.add_messages(sent)
    back = await store.session("ü-ß-😀").get_messages()
    assert [m.model_dump() for m in back] == [m.model_dump() for m in sent]
    await session.set_metadata({"title": texts[0], "raw\udc80": texts[4]})
    assert await store.session("ü-ß-😀").get_metadata() == {
        "title": texts[0],
        "raw\udc80": texts[4],
    }


async def test_a_batch_is_stored_whole_or_not_at_all(store: Store) -> None:
    session = store.session()
    await session.add_messages([say("user", "first")])
    bad_batches = [
        [say("user", "x"), call("c1"), say("assistant", "y")],  # call never answered
        [call("c1"), result("c1"), result("c9")],  # answers a call never made
        [call("c1"), result("c1"), result("c1")],  # answers it twice
        [result("c1"), call("c1")],  # answer before the call
    ]
    for batch in bad_batches:
        with pytest.raises(IncompleteStepError):
            await session.add_messages(batch)
    assert roles(await session.get_messages()) == ["user"]
    assert roles(await store.session().get_messages()) == ["user"]


async def test_a_call_is_never_stored_without_its_result(store: Store) -> None:
    session = store.session()
    with pytest.raises(IncompleteStepError, match=r"read_file \(c1\)"):
        await session.add_messages([say("user", "hi"), call("c1")])
    with pytest.raises(IncompleteStepError, match="never made"):
        await session.add_messages([result("c9")])
    # A call and its result must come in one batch: the next batch cannot answer it.
    with pytest.raises(IncompleteStepError):
        await session.add_messages([call("c2")])
    with pytest.raises(IncompleteStepError, match="never made"):
        await session.add_messages([result("c2")])
    await session.add_messages([call("c1", "c2"), say("assistant", "between"), result("c2", "c1")])
    await session.add_messages([])  # nothing open: an empty batch is fine
    assert roles(await session.get_messages()) == ["assistant", "assistant", "tool"]


async def test_a_limit_never_starts_with_an_orphaned_result(store: Store) -> None:
    session = store.session()
    await session.add_messages([say("user", "u"), call("c1"), result("c1"), say("assistant", "a")])
    await session.add_messages(
        [call("c2", "c3"), result("c2"), result("c3"), say("assistant", "b")]
    )
    history = await session.get_messages()
    assert len(history) == 8
    for limit in range(10):
        got = await session.get_messages(limit=limit)
        assert len(got) <= limit
        assert dump(got) == dump(history[len(history) - len(got) :])  # a suffix
        made = {c.call_id for m in got for c in m.function_calls}
        assert all(r.call_id in made for m in got for r in m.function_results), limit
    assert roles(await session.get_messages(limit=2)) == ["assistant"]  # c3's result lost c3
    assert len(await session.get_messages(limit=4)) == 4  # starts at the two-call message
    assert len(await session.get_messages(limit=3)) == 1  # both results lost their call
    assert await session.get_messages(limit=0) == []
    assert len(await session.get_messages(limit=1000)) == 8
    with pytest.raises(ValueError, match="limit"):
        await session.get_messages(limit=-1)


async def test_pop_then_answer_again(store: Store) -> None:
    session = store.session()
    assert await session.pop_message() is None
    await session.add_messages([say("user", "u"), call("c1", name="grep"), result("c1")])
    popped = await session.pop_message()
    assert popped is not None and popped.role == ChatRole.TOOL
    # The call is open again, seen by another object on the same session too.
    for writer in (session, store.session()):
        with pytest.raises(IncompleteStepError, match=r"grep \(c1\)"):
            await writer.add_messages([say("user", "next")])
    await session.add_messages([result("c1", text="retried"), say("assistant", "fine")])
    *_, answer, final = await session.get_messages()
    assert (answer.function_results[0].result, final.text) == ("retried c1", "fine")
    # Popping the answer and then the call leaves nothing open.
    assert (await session.pop_message()).text == "fine"  # type: ignore[union-attr]
    assert (await session.pop_message()).role == ChatRole.TOOL  # type: ignore[union-attr]
    assert (await session.pop_message()).function_calls  # type: ignore[union-attr]
    await session.add_messages([say("user", "again")])
    assert roles(await session.get_messages()) == ["user", "user"]


async def test_pop_reopens_calls_made_many_messages_earlier(store: Store) -> None:
    session = store.session()
    # A step may put other messages between a call and its result (one batch).
    filler = [say("assistant", f"thinking {i}") for i in range(40)]
    await session.add_messages(
        [call("far", name="build"), *filler, call("near"), result("near", "far")]
    )
    await session.pop_message()
    with pytest.raises(IncompleteStepError) as raised:
        await session.add_messages([say("user", "x")])
    assert "build (far)" in str(raised.value) and "read_file (near)" in str(raised.value)
    await session.add_messages([result("far"), result("near")])
    assert len(await session.get_messages()) == 44


async def test_metadata_merges_removes_and_is_json_only(store: Store) -> None:
    session = store.session()
    assert await session.get_metadata() == {}
    await session.set_metadata({"card": "x", "rounds": 3, "nested": {"a": [1, 2.5, None, True]}})
    await session.set_metadata({"rounds": None, "model": "m", "absent": None})
    expected = {"card": "x", "model": "m", "nested": {"a": [1, 2.5, None, True]}}
    assert await session.get_metadata() == expected
    assert await store.session().get_metadata() == expected
    with pytest.raises(ValueError, match="JSON"):
        await session.set_metadata({"bad": object()})
    assert await session.get_metadata() == expected
    got = await session.get_metadata()
    got["card"] = "changed by the caller"
    assert (await session.get_metadata())["card"] == "x"


async def test_clear_removes_messages_metadata_and_open_calls(store: Store) -> None:
    session, other = store.session("a"), store.session("b")
    await session.add_messages([say("user", "u"), call("c1"), result("c1")])
    await session.set_metadata({"k": "v"})
    await other.add_messages([say("user", "other")])
    await other.set_metadata({"k": "other"})
    await session.pop_message()  # leaves c1 open
    await session.clear()
    assert await session.get_messages() == [] and await session.get_metadata() == {}
    assert await session.pop_message() is None
    await session.add_messages([say("user", "fresh")])  # c1 is not open any more
    assert roles(await store.session("a").get_messages()) == ["user"]
    assert [m.text for m in await other.get_messages()] == ["other"]
    assert await other.get_metadata() == {"k": "other"}


async def test_two_sessions_in_one_store_are_isolated(store: Store) -> None:
    a, b = store.session("a"), store.session("b")
    await a.add_messages([say("user", "for a"), call("c1"), result("c1")])
    await b.add_messages([say("user", "for b"), call("c1"), result("c1")])
    await a.pop_message()
    await b.add_messages([say("user", "b is not blocked by a's open call")])
    await b.set_metadata({"who": "b"})
    assert roles(await a.get_messages()) == ["user", "assistant"]
    assert len(await b.get_messages()) == 4
    assert await a.get_metadata() == {}
    await b.clear()
    assert roles(await a.get_messages()) == ["user", "assistant"]


async def test_concurrent_writers_keep_whole_batches_in_order(store: Store) -> None:
    writers = [store.session() for _ in range(3)]  # three objects, one conversation
    tasks_per_writer, batches_per_task = 2, 8

    async def write(w: int, task: int) -> None:
        writer = writers[w]
        for n in range(batches_per_task):
            tag = f"w{w}-t{task}-{n}"
            await writer.add_messages(
                [say("user", tag), call(tag), result(tag), say("assistant", tag)]
            )

    await asyncio.gather(
        *(write(w, t) for w in range(len(writers)) for t in range(tasks_per_writer))
    )
    history = await store.session().get_messages()
    assert len(history) == len(writers) * tasks_per_writer * batches_per_task * 4
    seen: dict[str, list[int]] = {}
    for start in range(0, len(history), 4):
        batch = history[start : start + 4]
        tag = batch[0].text
        assert roles(batch) == ["user", "assistant", "tool", "assistant"], start
        assert batch[1].function_calls[0].call_id == tag == batch[3].text
        assert batch[2].function_results[0].call_id == tag
        writer_task, n = tag.rsplit("-", 1)
        seen.setdefault(writer_task, []).append(int(n))
    assert all(ns == list(range(batches_per_task)) for ns in seen.values()), seen


async def test_calls_on_one_object_run_in_the_order_they_were_made(store: Store) -> None:
    session = store.session()
    await asyncio.gather(*(session.add_messages([say("user", str(i))]) for i in range(30)))
    assert [m.text for m in await session.get_messages()] == [str(i) for i in range(30)]


async def test_stored_messages_are_copies(store: Store) -> None:
    session = store.session()
    message = say("user", "original")
    await session.add_messages([message])
    message.contents.clear()
    (read,) = await session.get_messages()
    read.contents.clear()
    (again,) = await session.get_messages()
    assert again.text == "original"


async def test_close_ends_the_objects_use_and_keeps_what_was_stored(store: Store) -> None:
    """Every store closes the same way (the Session protocol's close / async with): later calls
    raise SessionStoreError, closing twice is harmless, a stored conversation stays stored."""
    async with store.session("closing") as session:
        await session.add_messages([say("user", "hi")])
    await session.close()  # a second time
    with pytest.raises(SessionStoreError, match="closed"):
        await session.get_messages()
    with pytest.raises(SessionStoreError, match="closed"):
        await session.add_messages([say("user", "again")])
    if store.source is not None:  # a stored conversation outlives the object that wrote it
        async with store.opener(store.id("closing")) as again:
            assert dump(await again.get_messages()) == dump([say("user", "hi")])


async def test_bad_session_ids_are_clear_errors(store: Store) -> None:
    for bad in ("", None, 42):
        with pytest.raises(ValueError, match="session_id"):
            store.opener(bad)  # type: ignore[arg-type]


async def test_a_cancelled_append_stores_its_batch_whole_or_not_at_all(store: Store) -> None:
    session = store.session()
    batch = [m for i in range(300) for m in (say("user", f"u{i}"), call(f"c{i}"), result(f"c{i}"))]
    for delay in (0, 1, 3):
        task = asyncio.ensure_future(session.add_messages(batch))
        for _ in range(delay):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    stored = await store.session().get_messages()
    assert len(stored) % len(batch) == 0  # whole batches only
    assert all(
        dump(stored[i : i + len(batch)]) == dump(batch) for i in range(0, len(stored), len(batch))
    )
    await session.add_messages([say("user", "still usable")])
    assert (await session.get_messages(limit=1))[0].text == "still usable"
