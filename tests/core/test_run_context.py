"""RunContext: per-run state reached from any middleware, isolated between concurrent runs."""

from __future__ import annotations

import asyncio

import pytest

from loopkit.run_context import RunContext, RunEvent, current_run, run_scope


def test_outside_a_run_there_is_none() -> None:
    assert current_run() is None


def test_run_scope_sets_and_restores_the_current_run() -> None:
    with run_scope(name="outer") as outer:
        assert current_run() is outer
        with run_scope(name="inner") as inner:
            assert current_run() is inner
        assert current_run() is outer
    assert current_run() is None


def test_run_scope_takes_a_run_or_fields_not_both() -> None:
    with pytest.raises(TypeError, match="not both"), run_scope(RunContext(), name="x"):
        pass


def test_state_is_per_owner_and_per_run() -> None:
    owner_a, owner_b = object(), object()
    run1, run2 = RunContext(), RunContext()
    run1.state_for(owner_a, list).append(1)
    run1.state_for(owner_a, list).append(2)
    run1.state_for(owner_b, list).append(3)
    run2.state_for(owner_a, list).append(4)
    assert run1.state_for(owner_a, list) == [1, 2]
    assert run1.state_for(owner_b, list) == [3]
    assert run2.state_for(owner_a, list) == [4]
    assert run1.has_state(owner_a) and not RunContext().has_state(owner_a)


async def test_concurrent_tasks_each_see_their_own_run() -> None:
    seen: dict[str, str | None] = {}

    async def one(name: str) -> None:
        with run_scope(name=name):
            await asyncio.sleep(0)  # let the other task run inside its own scope
            run = current_run()
            seen[name] = run.name if run else None

    await asyncio.gather(one("a"), one("b"), one("c"))
    assert seen == {"a": "a", "b": "b", "c": "c"}
    assert current_run() is None


def test_children_know_their_parent_and_depth() -> None:
    root = RunContext(name="root")
    child = root.child("child", card="x")
    grandchild = child.child()
    assert (root.depth, child.depth, grandchild.depth) == (0, 1, 2)
    assert child.parent is root and child.metadata == {"card": "x"}
    assert root.child_runs == 1 and child.child_runs == 1
    assert len({root.run_id, child.run_id, grandchild.run_id}) == 3


def test_events_reach_subscribers_in_order_until_unsubscribed() -> None:
    run = RunContext()
    got: list[RunEvent] = []
    unsubscribe = run.subscribe(got.append)
    first = run.emit("compaction", tokens_before=10, tokens_after=4)
    unsubscribe()
    run.emit("fallback", client="b")
    assert got == [first]
    assert first.run_id == run.run_id and first.data == {"tokens_before": 10, "tokens_after": 4}
    unsubscribe()  # twice is harmless


class _Aware:
    def __init__(self, inner: object | None = None) -> None:
        self.inner = inner
        self.started: list[str] = []

    def on_run_start(self, run: RunContext) -> None:
        self.started.append(run.run_id)


class _Plain:
    def __init__(self, inner: object) -> None:
        self.inner = inner


def test_run_aware_middleware_is_started_once_per_run() -> None:
    bottom = _Aware()
    top = _Aware(_Plain(bottom))  # a client that is not RunAware in between is skipped
    run = RunContext()
    run.start_middleware(top)
    run.start_middleware(top)
    other = RunContext()
    other.start_middleware(top)
    assert top.started == [run.run_id, other.run_id]
    assert bottom.started == [run.run_id, other.run_id]


async def test_message_hooks_get_each_complete_step_in_order() -> None:
    from loopkit.abstractions.content import ChatMessage

    run = RunContext()
    got: list[list[str]] = []

    async def store(messages: list[ChatMessage]) -> None:
        got.append([m.text for m in messages])

    run.on_messages(store)
    await run.messages_added([ChatMessage.from_text("assistant", "a")])
    await run.messages_added([ChatMessage.from_text("assistant", "b")])
    assert got == [["a"], ["b"]]


class _AwareWithState:
    inner = None

    def on_run_start(self, run: RunContext) -> None:
        run.state_for(self, list).append("started")


def test_starting_does_not_take_the_clients_own_state_slot() -> None:
    client = _AwareWithState()
    run = RunContext()
    run.start_middleware(client)
    run.start_middleware(client)
    assert run.state_for(client, list) == ["started"]
