"""The chat with a hosted model: litellm's real HTTP path against the fake Anthropic server
(tests/fakes: no key and no internet here, so the provider is played on 127.0.0.1).

The run's conversation goes as text (no tool blocks: the chat declares no tools, and Anthropic
refuses tool blocks whose tools are not declared), the answer streams back, and the next
question carries the first question and its answer: the chat's session goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit.cards.config import RunnerConfig
from loopkit.cards.durable import PreparedRun
from loopkit_board.service import BoardService
from tests.fakes.fake_llm_server import FakeLLMServer, Turn

pytestmark = pytest.mark.integration


def line(kind: str, **data: object) -> str:
    return json.dumps({"time": "t", "type": kind, "run_id": "r", "data": data}) + "\n"


class OneRun(BoardService):
    """The service with one run whose preparation is given (the durable database is not what
    this test is about: tests/board/test_browser.py runs the whole thing)."""

    def __init__(self, prepared: PreparedRun, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.one = prepared

    async def prepared(self, run_id: str) -> PreparedRun | None:
        return self.one if run_id == "run-1" else None


async def test_a_hosted_model_reads_the_run_as_text_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text(
        line("round", round=1, calls=["ui_click"], text="Clicking delete.")
        + line("tool", name="ui_click", arguments={"target": "Delete"}, result="dialog opened")
        + line("round", round=2, calls=[], text="RESULT: done")
        + line("result", status="done", reason=None)
    )
    prepared = PreparedRun(
        card_text="title: Delete asks first",
        title="Delete asks first",
        run_dir=str(tmp_path),
        repo=str(tmp_path / "repo"),
        app_folder="invoice_app",
        log_path=str(log),
        base="0" * 40,
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    with FakeLLMServer.anthropic() as server:
        server.enqueue(Turn.reply("At round 1 it clicked Delete."), Turn.reply("It ended done."))
        service = OneRun(
            prepared,
            cards_dir=tmp_path,
            config=RunnerConfig(runs_dir=tmp_path, api_base=server.api_base),
            chat_model="anthropic/claude-x",
        )
        first = "".join([p async for p in service.ask("run-1", "what happened at step 1?")])
        second = "".join([p async for p in service.ask("run-1", "and then?")])
    assert first == "At round 1 it clicked Delete." and second == "It ended done."
    sent = [r.body for r in server.requests]
    assert "tools" not in sent[0] or not sent[0]["tools"]
    blocks = [
        b
        for m in sent[0]["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
    ]
    assert all(b.get("type") == "text" for b in blocks), blocks
    text = json.dumps(sent[0]["messages"])
    assert "Delete asks first" in text and 'ui_click({\\"target\\": \\"Delete\\"})' in text
    assert "dialog opened" in text
    later = json.dumps(sent[1]["messages"])
    assert "what happened at step 1?" in later and "At round 1 it clicked Delete." in later
    history = await service.chat_history("run-1")
    assert [m.text for m in history] == [
        "what happened at step 1?", first, "and then?", second,
    ]  # fmt: skip


async def test_a_run_asked_about_while_it_runs_is_seen_as_it_went_on(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text(
        line("round", round=1, calls=["read_file"], text="Reading.")
        + line("tool", name="read_file", arguments={"path": "a.py"}, result="A")
        + line("round", round=2, calls=["start_app"], text="")  # its result not yet written
    )
    prepared = PreparedRun(
        card_text="title: T", title="T", run_dir=str(tmp_path), repo=str(tmp_path / "repo"),
        app_folder="invoice_app", log_path=str(log), base="0" * 40,
    )  # fmt: skip
    service = OneRun(prepared, cards_dir=tmp_path, config=RunnerConfig(runs_dir=tmp_path))
    early = "".join([p async for p in service.ask("run-1", "what happened at step 2?")])
    assert "there is no 2" in early  # round 2 had no result yet: not in the chat's context
    with log.open("a") as f:
        f.write(line("tool", name="start_app", arguments={}, result="The app is running"))
        f.write(line("round", round=3, calls=[], text="RESULT: done"))
        f.write(line("result", status="done", reason=None))
    later = "".join([p async for p in service.ask("run-1", "what happened at step 2?")])
    assert "At round 2" in later and "start_app({}) → The app is running" in later
    outline = "".join([p async for p in service.ask("run-1", "how did it end?")])
    assert "the run ended: done" in outline
    history = [m.text for m in await service.chat_history("run-1")]
    assert history == [
        "what happened at step 2?", early, "what happened at step 2?", later,
        "how did it end?", outline,
    ]  # fmt: skip
