"""Every store behaves exactly like the reference (``InMemorySession``, which recomputes the
open calls from the whole history each time) over random sequences of operations: batches
valid and invalid, pops, reads with limits, clears. The stored stores keep the open calls in a
column instead, updated incrementally; this is what shows the two agree."""

from __future__ import annotations

import random

import pytest

from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from loopkit.sessions import InMemorySession, open_calls_of
from tests.sessions.conftest import Store, dump, say

OPERATIONS = 150
CALL_IDS = [f"c{i}" for i in range(5)]  # few ids, so ids are reused once answered
TOOLS = ["read_file", "grep", "build"]


def random_batch(rng: random.Random, open_calls: dict[str, str]) -> list[ChatMessage]:
    """A batch that usually keeps the rule (answers the calls left open, makes calls and answers
    them, results in any order, in one or more tool messages, sometimes inside the message
    that made the call) and sometimes breaks it (a dropped, unknown or doubled result)."""
    batch: list[ChatMessage] = []
    pending = dict(open_calls)
    if rng.random() < 0.5:
        batch.append(say("user", f"u{rng.randrange(1000)}"))
    for _ in range(rng.randrange(3)):
        ids = rng.sample(CALL_IDS, rng.randrange(1, 3))
        contents: list[TextContent | FunctionCallContent | FunctionResultContent] = [
            FunctionCallContent(call_id=i, name=rng.choice(TOOLS)) for i in ids
        ]
        pending.update((c.call_id, c.name) for c in contents if isinstance(c, FunctionCallContent))
        if rng.random() < 0.2 and pending:  # a message that makes and answers a call
            answered = rng.choice(sorted(pending))
            contents.append(FunctionResultContent(call_id=answered, result="inline"))
            del pending[answered]
        batch.append(ChatMessage(role=ChatRole.ASSISTANT, contents=contents))
    answers = sorted(pending)
    rng.shuffle(answers)
    roll = rng.random()
    if roll < 0.1 and answers:
        answers.pop()  # leaves a call open: refused
    elif roll < 0.15:
        answers.append("never-made")  # refused
    elif roll < 0.2 and answers:
        answers.append(answers[0])  # answered twice: refused
    while answers:
        cut = rng.randrange(1, len(answers) + 1)
        chunk, answers = answers[:cut], answers[cut:]
        batch.append(
            ChatMessage(
                role=ChatRole.TOOL,
                contents=[FunctionResultContent(call_id=i, result=f"r{i}") for i in chunk],
            )
        )
    if rng.random() < 0.5:
        batch.append(say("assistant", "answer"))
    return batch


async def outcome(coroutine: object) -> object:
    """The value, or the type of the exception, an operation ends with."""
    try:
        return await coroutine  # type: ignore[misc]
    except Exception as error:
        return type(error)


@pytest.mark.parametrize("seed", [7, 2024])
async def test_every_store_agrees_with_the_reference(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    reference, session = InMemorySession("reference"), store.session()
    counts = {"refused": 0, "popped": 0}
    for step in range(OPERATIONS):
        roll = rng.random()
        if roll < 0.45:
            batch = random_batch(rng, open_calls_of(await reference.get_messages()))
            expected = await outcome(reference.add_messages(batch))
            assert await outcome(session.add_messages(batch)) == expected, (step, dump(batch))
            counts["refused"] += expected is not None
        elif roll < 0.65:
            expected_pop = await reference.pop_message()
            got = await session.pop_message()
            assert dump([got] if got else []) == dump([expected_pop] if expected_pop else [])
            counts["popped"] += expected_pop is not None
        elif roll < 0.97:
            limit = rng.choice([None, 0, 1, 2, 3, 5, 8, 13])
            expected_read = await reference.get_messages(limit)
            assert dump(await session.get_messages(limit)) == dump(expected_read), (step, limit)
        else:
            await reference.clear()
            await session.clear()
    assert dump(await store.session().get_messages()) == dump(await reference.get_messages())
    assert counts["refused"] > 5 and counts["popped"] > 5, counts  # both paths were exercised
