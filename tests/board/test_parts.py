"""The board's parts without a server: the card folder, a run's feed, the chat's context."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from loopkit.abstractions.content import ChatRole
from loopkit.errors import CardError
from loopkit_board.cards import CardFolder
from loopkit_board.chat import RunLogAnswerer, as_plain_text, conversation_from_log
from loopkit_board.feed import RunFeed


def line(kind: str, **data: object) -> str:
    return json.dumps({"time": "t", "type": kind, "run_id": "r", "data": data}) + "\n"


def test_the_card_folder_lists_bad_cards_with_their_error_and_writes_only_valid_ones(
    tmp_path: Path,
) -> None:
    folder = CardFolder(tmp_path)
    made = folder.create("Totals are wrong", "Body.\n", category="Bug")
    assert made.name == "totals-are-wrong.md" and made.state == "New" and made.ok
    assert folder.create("Totals are wrong", "x").name == "totals-are-wrong-2.md"
    (tmp_path / "bad.md").write_text("---\ntitle: ''\n---\n", encoding="utf-8")
    entries = {e.name: e for e in folder.list()}
    assert entries["bad.md"].error is not None and "title" in entries["bad.md"].error
    assert entries["totals-are-wrong.md"].category == "Bug"
    with pytest.raises(CardError, match="no front matter"):
        folder.write("totals-are-wrong.md", "not a card")
    assert (tmp_path / "totals-are-wrong.md").read_text().startswith("---\ntitle: Totals")
    with pytest.raises(CardError, match="expected a file name"):
        folder.write("../escape.md", made.text)
    # an edit shows at the next listing (the cache is keyed by size and mtime)
    folder.write("totals-are-wrong.md", made.text.replace("state: New", "state: Done"))
    assert {e.name: e.state for e in folder.list()}["totals-are-wrong.md"] == "Done"
    os.remove(tmp_path / "bad.md")
    assert "bad.md" not in {e.name for e in folder.list()}


async def test_ten_watchers_share_one_reader_and_get_every_event_in_order(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text("")
    probes = 0
    state = {"value": "queued", "position": 2}

    async def probe() -> tuple[str, int | None, Path | None, str | None]:
        nonlocal probes
        probes += 1
        queued = state["value"] == "queued"
        return state["value"], state["position"] if queued else None, log, None  # type: ignore[return-value]

    feed = RunFeed("r", probe, log_poll=0.01, state_poll=0.05)
    seen: list[list[str]] = [[] for _ in range(10)]

    async def watch(i: int) -> None:
        async for event in feed.subscribe():
            seen[i].append(event.kind)

    async def until(kinds: list[str]) -> None:
        for _ in range(500):
            if [e.kind for e in feed.events][: len(kinds)] == kinds:
                return
            await asyncio.sleep(0.01)

    started = asyncio.get_running_loop().time()
    watchers = [asyncio.create_task(watch(i)) for i in range(10)]
    await asyncio.wait_for(until(["queued", "state"]), 5)
    state["position"] = 1
    await asyncio.wait_for(until(["queued", "state", "queued"]), 5)
    state["value"] = "running"
    await asyncio.wait_for(until(["queued", "state", "queued", "state"]), 5)
    with log.open("a") as f:
        f.write(line("round", round=1, calls=["read_file"], text="hi"))
        f.write(line("tool", name="read_file", arguments={"path": "a"}, result="x" * 1000)[:-30])
        f.flush()
        await asyncio.sleep(0.1)  # half a line: not an event yet
        assert all(s.count("tool") == 0 for s in seen)
        f.write(line("tool", name="read_file", arguments={"path": "a"}, result="x" * 1000)[-30:])
        f.write(line("result", status="done", reason=None))
    await asyncio.wait_for(
        until(["queued", "state", "queued", "state", "round", "tool", "result"]), 5
    )
    state["value"] = "done"
    await asyncio.wait_for(asyncio.gather(*watchers), 5)
    elapsed = asyncio.get_running_loop().time() - started
    expected = ["queued", "state", "queued", "state", "round", "tool", "result", "state", "end"]
    assert all(s == expected for s in seen), seen
    tool = next(e for e in feed.events if e.kind == "tool")
    assert tool.data["arguments"] == {"path": "a"} and "(1000 characters)" in tool.data["result"]
    # one reader: probes at the state poll's pace, whatever the number of watchers (ten
    # readers would probe ten times as often)
    assert probes <= elapsed / 0.05 + 2
    # a watcher arriving after the end gets the whole story, then the stream ends
    late = [e.kind async for e in feed.subscribe()]
    assert late == expected


def test_the_chat_context_is_the_run_and_the_offline_model_answers_from_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text(
        line("start", model="scripted", tools=["a"])
        + line("round", round=1, calls=["list_files"], text="Looking around.")
        + line("tool", name="list_files", arguments={"folder": "app"}, result="app/main.py")
        + line("round", round=2, calls=["read_file", "read_file"], text="")
        + line("tool", name="read_file", arguments={"path": "a.py"}, result="A")
        + line("tool", name="read_file", arguments={"path": "b.py"}, result="B")
        + line("round", round=3, calls=[], text="RESULT: done")
        + line("result", status="done", reason=None)
        + line("round", round=4, calls=["start_app"], text="")  # stopped before its result
    )
    messages = conversation_from_log("THE CARD\nDelete asks first", log)
    roles = [m.role for m in messages]
    assert roles[0] == ChatRole.USER and "Delete asks first" in messages[0].text
    assert roles[1:] == ["assistant", "tool", "assistant", "tool", "assistant", "assistant"]
    assert messages[3].function_calls[1].arguments == {"path": "b.py"}
    assert [r.result for r in messages[4].function_results] == ["A", "B"]
    answerer = RunLogAnswerer()
    from loopkit.abstractions.content import ChatMessage

    ask = [*messages, ChatMessage.from_text(ChatRole.USER, "what happened at step 2?")]
    answer = answerer.answer(ask)
    assert 'read_file({"path": "b.py"}) → B' in answer and "round 2" in answer
    outline = answerer.answer([*messages, ChatMessage.from_text(ChatRole.USER, "and?")])
    assert "2 rounds of tool calls (3 calls" in outline and "the run ended: done" in outline
    missing = answerer.answer([*messages, ChatMessage.from_text(ChatRole.USER, "step 9?")])
    assert "there is no 9" in missing
    # for a hosted model: the same run as text, the two sides taking turns, nothing lost
    plain = as_plain_text(messages)
    assert [m.role for m in plain] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert not any(m.function_calls or m.function_results for m in plain)
    assert 'read_file({"path": "b.py"})' in plain[3].text and "B" in plain[4].text
    assert plain[5].text.endswith("[the run ended: done]")


async def test_every_follower_of_a_run_gets_the_same_feed(tmp_path: Path) -> None:
    from loopkit.cards.config import RunnerConfig
    from loopkit_board.service import BoardService

    service = BoardService(tmp_path, config=RunnerConfig(runs_dir=tmp_path / "runs"))
    streams = [service.follow("run-1") for _ in range(10)]
    other = service.follow("run-2")
    assert len(service._feeds) == 2  # one reader a run, not one a browser
    for stream in [*streams, other]:
        await stream.aclose()  # type: ignore[attr-defined]


def test_the_library_never_imports_the_board() -> None:
    import ast

    package = Path(__file__).resolve().parents[2] / "src" / "loopkit"
    offenders = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("loopkit_board")]
    assert offenders == []
