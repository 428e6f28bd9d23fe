"""Run events of middleware (compaction, fallback) reach the run log as lines of the run."""

from __future__ import annotations

import io

from loopkit import Agent, ChatClientBuilder, FunctionChatClient, ProviderError, tool

from .helpers import Replies, answer, calls, lines


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}: " + "x" * 6000


async def test_a_compaction_is_a_line_of_the_run_in_the_run_log() -> None:
    log = io.StringIO()
    replies = Replies(
        *(calls(("read_file", {"path": f"f{i}.py"})) for i in range(8)), answer("done")
    )
    model = (
        ChatClientBuilder(replies.client())
        .use_run_log(log)
        .use_compaction(max_input_tokens=6000, keep_recent_steps=1, summarize=False)
    )
    agent = Agent(model, instructions="Read the files.", tools=[read_file], name="reader")
    result = await agent.run("go")
    events = lines(log)
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions, [e["type"] for e in events]
    first = compactions[0]
    assert first["run_id"] == result.run_id
    assert first["data"]["strategy"] == "elide"
    assert first["data"]["tokens_after"] < first["data"]["tokens_before"]
    # the rounds after the compaction are in the same run
    assert {e["run_id"] for e in events if e["type"] == "round"} == {result.run_id}


async def test_a_fallback_is_a_line_naming_both_clients() -> None:
    log = io.StringIO()

    def failing(messages: object, options: object) -> object:
        raise ProviderError("bad key (HTTP 401)", retryable=False, status_code=401)

    primary = FunctionChatClient(failing, model_id="primary-model")
    backup = Replies(answer("from the backup")).client()
    model = (
        ChatClientBuilder(primary)
        .use_run_log(log)
        .use_fallback([backup], names=["primary", "backup"])
    )
    result = await Agent(model, name="fb").run("hi")
    assert result.text == "from the backup"
    (line,) = [e for e in lines(log) if e["type"] == "fallback"]
    assert line["run_id"] == result.run_id
    assert line["data"]["from_client"] == "primary" and line["data"]["to_client"] == "backup"
    assert line["data"]["status_code"] == 401
