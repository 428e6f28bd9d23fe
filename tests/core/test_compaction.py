"""CompactionChatClient: old tool results elided, then the oldest steps summarised; whole steps
only, the caller's list untouched, a stable prefix between compactions, state per run."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from loopkit import (
    ChatClientBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    DelegatingChatClient,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    TextContent,
    UsageDetails,
    tool,
)
from loopkit.errors import ProviderError
from loopkit.middleware.compaction import (
    CompactionChatClient,
    CompactionOptions,
    CompactionWarning,
    describe_call,
    estimate_tokens,
)
from loopkit.run_context import RunEvent, run_scope
from loopkit.sessions import check_complete

from . import compaction_scenario as scenario

SYSTEM = ChatMessage.from_text(ChatRole.SYSTEM, "You review code.")
TASK = ChatMessage.from_text(ChatRole.USER, "Review the modules.")


def step(i: int, result_chars: int = 4000, text: str = "") -> list[ChatMessage]:
    """One step: the assistant calls read_file, the tool message answers it."""
    call = FunctionCallContent(
        call_id=f"c{i}", name="read_file", arguments={"path": f"src/module_{i:03}.py"}
    )
    contents: list[Any] = [TextContent(text=text), call] if text else [call]
    return [
        ChatMessage(role=ChatRole.ASSISTANT, contents=contents),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[FunctionResultContent(call_id=f"c{i}", result="r" * result_chars)],
        ),
    ]


def conversation(steps: int, **kw: Any) -> list[ChatMessage]:
    return [SYSTEM, TASK, *(m for i in range(steps) for m in step(i, **kw))]


class Model:
    """A model that records what it was sent; ``usage_factor`` makes it report that many
    times the estimate as its input tokens (None: no usage)."""

    def __init__(self, usage_factor: float | None = None) -> None:
        self.requests: list[Sequence[ChatMessage]] = []
        self.usage_factor = usage_factor
        self.client = FunctionChatClient(self.reply)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        self.requests.append(messages)
        usage = None
        if self.usage_factor is not None:
            tokens = int(sum(estimate_tokens([m]) for m in messages) * self.usage_factor)
            usage = UsageDetails(input_tokens=tokens, output_tokens=5)
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok")], usage=usage, model_id="m"
        )


def units(messages: Sequence[ChatMessage]) -> int:
    """The middleware's own measure: the sum of the per-message estimates."""
    return sum(estimate_tokens([m]) for m in messages)


def elided(message: ChatMessage) -> bool:
    return any(r.result.startswith("[elided:") for r in message.function_results)


def summary_writer(text: str = "They read modules; nothing is left open.") -> FunctionChatClient:
    return FunctionChatClient(lambda messages, options: text, model_id="summarizer")


async def send(
    client: CompactionChatClient, messages: list[ChatMessage]
) -> tuple[list[RunEvent], ChatResponse]:
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        response = await client.get_response(messages)
    return events, response


async def test_below_the_trigger_the_conversation_passes_unchanged() -> None:
    model = Model()
    client = CompactionChatClient(model.client, CompactionOptions(trigger_tokens=50_000))
    messages = conversation(5)
    events, _ = await send(client, messages)
    assert model.requests[0] is messages  # not even copied
    assert events == []


async def test_old_results_are_elided_oldest_first_and_only_as_many_as_needed() -> None:
    model = Model()
    options = CompactionOptions(
        trigger_tokens=9000, target_tokens=7500, keep_recent_steps=4, summarize=False
    )
    client = CompactionChatClient(model.client, options)
    messages = conversation(10)
    events, _ = await send(client, messages)

    sent = model.requests[0]
    assert len(sent) == len(messages)
    tool_messages = [m for m in sent if m.role == ChatRole.TOOL]
    flags = [elided(m) for m in tool_messages]
    n = sum(flags)
    assert n >= 1 and flags == [True] * n + [False] * (10 - n)  # the oldest, in a row
    assert not any(flags[-4:])  # the last four steps keep their results
    assert units(sent) <= 7500
    # One stub fewer would not have reached the target.
    last = 2 + 2 * (n - 1) + 1
    assert units([*sent[:last], messages[last], *sent[last + 1 :]]) > 7500
    assert tool_messages[0].function_results[0].result == (
        "[elided: the result of read_file(path='src/module_000.py'), 4,000 characters; "
        "call the tool again if you need it]"
    )
    assert tool_messages[0].function_results[0].call_id == "c0"
    assert sent[2] is messages[2]  # the calls themselves are untouched
    [event] = events
    assert event.type == "compaction"
    assert event.data["strategy"] == "elide"
    assert event.data["elided_results"] == n
    assert event.data["summarised_messages"] == 0
    assert event.data["tokens_before"] == units(messages) > 9000
    assert event.data["tokens_after"] == units(sent) <= 7500


async def test_small_results_are_not_worth_a_stub_so_the_oldest_steps_are_dropped() -> None:
    """Every result under min_elide_chars and no summary allowed: eliding can do nothing, so the
    oldest steps go (down to the target), a note in their place."""
    model = Model()
    options = CompactionOptions(
        trigger_tokens=800, target_tokens=500, summarize=False, min_elide_chars=400
    )
    client = CompactionChatClient(model.client, options)
    messages = conversation(10, result_chars=300)
    assert units(messages) > 800
    events, _ = await send(client, messages)
    sent = model.requests[0]
    assert units(sent) <= 500
    assert sent[:2] == [SYSTEM, TASK]
    note = sent[2]
    assert note.role == ChatRole.USER and note.text.startswith("[")
    kept = sent[3:]
    assert all(a is b for a, b in zip(kept, messages[len(messages) - len(kept) :], strict=True))
    dropped_steps = (len(messages) - 2 - len(kept)) // 2
    assert f"{dropped_steps} of the earliest steps" in note.text
    assert kept[0].role == ChatRole.ASSISTANT and len(kept) >= 2
    check_complete(sent)
    [event] = events
    assert event.data["strategy"] == "drop"
    assert event.data["dropped_messages"] == 2 * dropped_steps
    assert event.data["tokens_after"] == units(sent)
    assert "over_limit" not in event.data


async def test_a_request_that_cannot_fit_goes_out_with_the_reason_said_once() -> None:
    model = Model()
    options = CompactionOptions(
        trigger_tokens=300, target_tokens=200, summarize=False, drop_oldest=False
    )
    client = CompactionChatClient(model.client, options)
    messages = conversation(10, result_chars=300)
    events: list[RunEvent] = []
    with (
        pytest.warns(CompactionWarning, match="drop_oldest is off") as warned,
        run_scope() as run,
    ):
        run.subscribe(events.append)
        await client.get_response(messages)
        messages = [*messages, *step(10, result_chars=300)]
        await client.get_response(messages)
    assert model.requests[1] is messages  # sent as it is
    [event] = events  # said once, not on every request above the limit
    assert event.data["strategy"] == "none"
    assert "above the trigger (300)" in event.data["over_limit"]
    assert "Set drop_oldest=True" in event.data["over_limit"]
    assert len(warned) == 1


async def test_what_compaction_never_removes_can_still_be_too_large_and_it_says_so() -> None:
    model = Model()
    options = CompactionOptions(max_input_tokens=1000, keep_recent_steps=1, summarize=False)
    client = CompactionChatClient(model.client, options)
    huge_task = ChatMessage.from_text(ChatRole.USER, "x" * 8000)  # 2,000 tokens on its own
    messages = [SYSTEM, huge_task, *(m for i in range(4) for m in step(i, result_chars=100))]
    with pytest.warns(CompactionWarning, match="max_input_tokens"):
        events, _ = await send(client, messages)
    over = [e.data["over_limit"] for e in events if "over_limit" in e.data]
    assert len(over) == 1
    assert "the task (the first user message)" in over[0] and "max_input_tokens (1,000)" in over[0]


async def test_when_eliding_is_not_enough_the_oldest_steps_are_summarised() -> None:
    model = Model()
    requests: list[list[ChatMessage]] = []

    def summarise(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        requests.append(messages)
        assert options is not None and options.max_output_tokens == 200
        return "They read the first modules; every handler is unchecked."

    options = CompactionOptions(
        trigger_tokens=8000, target_tokens=5000, keep_recent_steps=3, summary_max_tokens=200
    )
    client = CompactionChatClient(model.client, options, summarizer=FunctionChatClient(summarise))
    # Long reasoning in every step, short results: eliding cannot help here.
    messages = conversation(12, result_chars=100, text="x" * 3000)
    events, _ = await send(client, messages)

    sent = model.requests[0]
    assert sent[0] is SYSTEM and sent[1] is TASK  # the system message and the task stay
    summary = sent[2]
    assert summary.role == ChatRole.USER
    assert summary.text.startswith("Summary of the earlier conversation")
    assert "every handler is unchecked" in summary.text
    kept = sent[3:]
    cut = len(messages) - len(kept)
    assert all(a is b for a, b in zip(kept, messages[cut:], strict=True))  # verbatim
    assert kept[0].role == ChatRole.ASSISTANT  # cut at a step boundary
    assert len(kept) >= 2 * 3  # at least the last three steps
    check_complete(sent)
    assert units(sent) <= 5000
    [request] = requests
    assert request[0].role == ChatRole.SYSTEM and "condense" in request[0].text
    transcript = request[1].text
    assert "read_file(path='src/module_000.py')" in transcript
    first_kept = kept[0].function_calls[0].arguments["path"]
    assert first_kept not in transcript  # only the summarised part is sent
    [event] = events
    assert event.data["strategy"] == "summary"
    assert event.data["summarised_messages"] == cut - 2
    assert event.data["tokens_after"] == units(sent)


async def test_a_continued_sessions_latest_request_stays_verbatim() -> None:
    model = Model()
    options = CompactionOptions(
        trigger_tokens=8000, target_tokens=5000, keep_recent_steps=2, summary_max_tokens=100
    )
    client = CompactionChatClient(model.client, options, summarizer=summary_writer())
    answer = ChatMessage.from_text(ChatRole.ASSISTANT, "Reviewed: all fine.")
    request = ChatMessage.from_text(ChatRole.USER, "Now fix every unchecked handler.")
    messages = [
        SYSTEM,
        TASK,
        answer,
        request,
        *(m for i in range(12) for m in step(i, result_chars=100, text="x" * 3000)),
    ]
    events, _ = await send(client, messages)
    sent = model.requests[0]
    assert sent[:3] == [SYSTEM, TASK, request] and sent[2] is request
    assert sent[3].text.startswith("Summary of the earlier conversation")
    assert answer not in sent
    check_complete(sent)
    assert events[0].data["strategy"] == "summary"


async def test_a_later_summary_folds_in_the_earlier_one() -> None:
    model = Model()
    transcripts: list[str] = []

    def summarise(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        transcripts.append(messages[-1].text)
        return f"summary number {len(transcripts)}"

    options = CompactionOptions(
        trigger_tokens=8000, target_tokens=5000, keep_recent_steps=2, summary_max_tokens=100
    )
    client = CompactionChatClient(model.client, options, summarizer=FunctionChatClient(summarise))
    messages = conversation(12, result_chars=100, text="x" * 3000)
    with run_scope():
        await client.get_response(messages)
        for i in range(12, 24):
            messages = [*messages, *step(i, result_chars=100, text="y" * 3000)]
            await client.get_response(messages)
    assert len(transcripts) >= 2
    assert "Earlier summary:\nsummary number 1" in transcripts[1]
    last = model.requests[-1]
    assert next(m.text for m in last if m.text.startswith("Summary of")).endswith(
        f"summary number {len(transcripts)}"
    )
    assert sum(m.text.startswith("Summary of") for m in last) == 1
    check_complete(last)


def random_conversation(rng: random.Random) -> list[ChatMessage]:
    """Steps with one to three calls, answered in one tool message or one each; user turns and
    plain answers in between; results and texts of random sizes."""
    messages = [SYSTEM, TASK]
    n = 0
    for _ in range(rng.randint(1, 30)):
        kind = rng.random()
        if kind < 0.1:
            messages.append(ChatMessage.from_text(ChatRole.USER, "u" * rng.randint(1, 2000)))
            continue
        if kind < 0.2:
            messages.append(ChatMessage.from_text(ChatRole.ASSISTANT, "a" * rng.randint(1, 900)))
            continue
        calls = []
        for _ in range(rng.randint(1, 3)):
            n += 1
            calls.append(FunctionCallContent(call_id=f"k{n}", name="tool", arguments={"n": n}))
        text = [TextContent(text="t" * rng.randint(0, 1500))] if rng.random() < 0.5 else []
        messages.append(ChatMessage(role=ChatRole.ASSISTANT, contents=[*text, *calls]))
        results = [
            FunctionResultContent(call_id=c.call_id, result="r" * rng.randint(0, 6000))
            for c in calls
        ]
        if rng.random() < 0.5:
            messages.append(ChatMessage(role=ChatRole.TOOL, contents=list(results)))
        else:
            messages.extend(ChatMessage(role=ChatRole.TOOL, contents=[r]) for r in results)
    return messages


def is_step_end(messages: list[ChatMessage], end: int) -> bool:
    try:
        check_complete(messages[:end])
    except ValueError:
        return False
    return True


# Some seeds make a latest step larger than the trigger on its own: compaction says so.
@pytest.mark.filterwarnings("ignore::loopkit.middleware.compaction.CompactionWarning")
@pytest.mark.parametrize("seed", range(40))
async def test_call_result_pairs_are_never_split(seed: int) -> None:
    rng = random.Random(seed)
    model = Model(usage_factor=rng.choice([None, 1.0, 1.7]))
    trigger = rng.randint(500, 8000)
    options = CompactionOptions(
        trigger_tokens=trigger,
        target_tokens=rng.randint(100, trigger - 1),
        keep_recent_steps=rng.randint(1, 5),
        summarize=rng.random() < 0.7,
        summary_max_tokens=rng.randint(16, 400),
    )
    client = CompactionChatClient(model.client, options, summarizer=summary_writer())
    full = random_conversation(rng)
    # The conversation grows as in a run: a few whole steps at a time (a loop never sends a
    # call without its result).
    ends = [i + 1 for i in range(2, len(full)) if is_step_end(full, i + 1)]
    with run_scope():
        while ends:
            end = ends.pop(rng.randint(0, min(3, len(ends) - 1)))
            ends = [e for e in ends if e > end]
            before = [m.model_dump() for m in full[:end]]
            await client.get_response(full[:end])
            assert [m.model_dump() for m in full[:end]] == before
            sent = model.requests[-1]
            check_complete(sent)
            assert sent[0] is SYSTEM and sent[1] is TASK
            # The newest step is always sent as it is.
            assert sent[-1] is full[end - 1]


async def test_the_prefix_stays_the_same_between_compactions() -> None:
    outcome = await scenario.run(rounds=120, window=40_000, keep_requests=True)
    requests = outcome.recorder.requests
    compactions = [e for e in outcome.events if e.type == "compaction"]
    assert 2 <= len(compactions) <= 120 // 10  # large, rare jumps
    breaks = 0
    for before, after in itertools.pairwise(requests):
        assert after[0] is before[0] and after[1] is before[1]  # system and task
        if not all(a is b for a, b in zip(before, after[: len(before)], strict=True)):
            breaks += 1
            # Even a compaction keeps what was compacted before (a partial cache hit).
            same = next(
                i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a is not b
            )
            assert same >= 2
    assert breaks == len(compactions)  # every other request extends the one before
    for request in requests:
        check_complete(request)
    assert max(outcome.recorder.estimates) < 40_000


async def test_peak_input_stays_under_the_window_with_compaction_and_not_without() -> None:
    with_compaction = await scenario.run(rounds=300)
    without = await scenario.run(rounds=300, compaction=False)
    for outcome in (with_compaction, without):
        assert outcome.rounds == 301 and outcome.text.endswith("RESULT: done")
    assert max(with_compaction.recorder.estimates) < scenario.WINDOW
    assert max(with_compaction.recorder.reported) < scenario.WINDOW
    assert max(without.recorder.estimates) > scenario.WINDOW
    strategies = {e.data["strategy"] for e in with_compaction.events}
    assert strategies == {"elide", "elide+summary"}


async def test_two_concurrent_runs_are_independent() -> None:
    model = Model()
    options = CompactionOptions(trigger_tokens=9000, target_tokens=6000, summarize=False)
    client = CompactionChatClient(model.client, options)
    big, small = conversation(10), conversation(10, result_chars=200)
    events: dict[str, list[RunEvent]] = {"big": [], "small": []}
    sent: dict[str, list[Sequence[ChatMessage]]] = {"big": [], "small": []}

    async def one(name: str, messages: list[ChatMessage]) -> None:
        with run_scope(name=name) as run:
            run.subscribe(events[name].append)
            for i in range(10, 14):
                await asyncio.sleep(0)  # interleave the two runs
                await client.get_response(messages)
                sent[name].append(model.requests[-1])
                messages = [
                    *messages,
                    *step(i, result_chars=len(messages[-1].function_results[0].result)),
                ]

    await asyncio.gather(one("big", big), one("small", small))
    assert len(events["big"]) == 1 and events["small"] == []
    assert not any(elided(m) for request in sent["small"] for m in request)
    assert all(any(elided(m) for m in request) for request in sent["big"])


async def test_the_callers_messages_are_never_modified() -> None:
    model = Model()
    options = CompactionOptions(trigger_tokens=3000, target_tokens=1000, keep_recent_steps=1)
    client = CompactionChatClient(model.client, options, summarizer=summary_writer())
    messages = conversation(10)
    copy = list(messages)
    dumped = [m.model_dump() for m in messages]
    await send(client, messages)
    assert messages == copy and all(a is b for a, b in zip(messages, copy, strict=True))
    assert [m.model_dump() for m in messages] == dumped
    assert model.requests[0] is not messages


async def test_the_providers_token_count_calibrates_the_trigger() -> None:
    # The provider counts three times what the characters suggest (a dense tokenizer).
    options = CompactionOptions(
        trigger_tokens=5000, target_tokens=3000, keep_recent_steps=1, summarize=False
    )
    for factor, compacts in ((3.0, True), (None, False)):
        model = Model(usage_factor=factor)
        client = CompactionChatClient(model.client, options)
        messages = conversation(8, result_chars=1000)
        assert units(messages) < 5000 < 3 * units(messages[:-2])
        events: list[RunEvent] = []
        with run_scope() as run:
            run.subscribe(events.append)
            await client.get_response(messages[:-2])
            assert events == []  # no figure yet: the estimate says it fits
            await client.get_response(messages)
        assert bool(events) is compacts
        if compacts:
            assert events[0].data["tokens_before"] == pytest.approx(3 * units(messages), rel=0.01)
            assert 3 * units(model.requests[-1]) <= 3000 * 1.01


async def test_the_estimator_can_be_replaced() -> None:
    model = Model()
    options = CompactionOptions(
        trigger_tokens=5000, target_tokens=3000, keep_recent_steps=1, summarize=False
    )

    def dense(messages: Sequence[ChatMessage], options: ChatOptions | None = None, /) -> int:
        return 10 * estimate_tokens(messages, options)

    client = CompactionChatClient(model.client, options, estimator=dense)
    messages = conversation(4, result_chars=1000)
    assert units(messages) < 5000
    events, _ = await send(client, messages)
    assert events and events[0].data["tokens_before"] == 10 * units(messages)


async def test_a_failed_summary_keeps_the_run_going_with_what_eliding_gives() -> None:
    secret = "sk-ant-api03-" + "Q" * 40

    def fail(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        raise ProviderError(f"400 bad request for key {secret}", retryable=False, status_code=400)

    model = Model()
    options = CompactionOptions(trigger_tokens=4000, target_tokens=2000, keep_recent_steps=2)
    client = CompactionChatClient(model.client, options, summarizer=FunctionChatClient(fail))
    messages = conversation(10, result_chars=1000, text="x" * 1000)
    events, response = await send(client, messages)
    assert response.text == "ok"
    sent = model.requests[0]
    assert sum(elided(m) for m in sent) == 8  # everything but the last two steps
    [event] = events
    assert event.data["strategy"] == "elide"
    assert "400 bad request" in event.data["summary_error"]
    assert secret not in event.data["summary_error"]


async def test_a_failed_summary_that_leaves_the_request_over_the_window_drops_steps() -> None:
    """Results too small to elide, the summariser down: the oldest steps go, so the request
    fits the window all the same (the event says both what failed and what was done)."""

    def fail(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        raise ProviderError("529 overloaded", retryable=True, status_code=529)

    model = Model()
    options = CompactionOptions(max_input_tokens=5000, keep_recent_steps=2)
    client = CompactionChatClient(model.client, options, summarizer=FunctionChatClient(fail))
    messages = conversation(12, result_chars=100, text="x" * 1500)
    assert units(messages) > 5000
    events, _ = await send(client, messages)
    sent = model.requests[0]
    assert units(sent) <= options.target_at
    assert "of the earliest steps of this conversation were removed" in sent[2].text
    assert sent[-4:] == messages[-4:]  # the last two steps, verbatim
    check_complete(sent)
    [event] = events
    assert event.data["strategy"] == "drop"
    assert "529 overloaded" in event.data["summary_error"]


async def test_a_bug_in_the_summariser_is_not_swallowed() -> None:
    def bug(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        raise RuntimeError("summariser bug")

    model = Model()
    options = CompactionOptions(trigger_tokens=4000, target_tokens=2000, keep_recent_steps=2)
    client = CompactionChatClient(model.client, options, summarizer=FunctionChatClient(bug))
    with pytest.raises(RuntimeError, match="summariser bug"):
        await send(client, conversation(10, result_chars=1000, text="x" * 1000))
    assert model.requests == []


async def test_outside_a_run_each_request_is_compacted_on_its_own() -> None:
    model = Model()
    options = CompactionOptions(trigger_tokens=9000, target_tokens=6000, summarize=False)
    client = CompactionChatClient(model.client, options)
    await client.get_response(conversation(10))  # no run_scope: no events, no memory
    assert units(model.requests[0]) <= 6000


async def test_streaming_requests_are_compacted_and_calibrate_from_the_usage_update() -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return scenario.file_text(path, 4000)

    model = scenario.ScriptedChatClient(scenario.script(40, 300))
    estimates: list[int] = []

    class StreamRecorder(DelegatingChatClient):
        def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> AsyncIterator[ChatResponseUpdate]:
            estimates.append(estimate_tokens(messages, options))
            return self.inner.get_streaming_response(messages, options)

    streamed = StreamRecorder(model)
    client = (
        ChatClientBuilder(streamed)
        .use_function_invocation(max_rounds=50)
        .use_compaction(trigger_tokens=12_000, target_tokens=7_000, summarize=False)
        .build()
    )
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(events.append)
        updates = [
            u
            async for u in client.get_streaming_response(
                [SYSTEM, TASK], ChatOptions(tools=[read_file])
            )
        ]
    assert model.finished and "RESULT: done" in "".join(u.text for u in updates)
    # Each round adds about 1,100 tokens; a compaction frees at least the 5,000 between the
    # trigger and the target, so there is at most one per 4.5 rounds.
    assert 2 <= len(events) <= 1 + 40 * 1_100 // 5_000
    assert len(estimates) == 41 and max(estimates) < 12_000 + 2_000


def test_options_are_checked_with_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"max_input_tokens .* or trigger_tokens"):
        CompactionOptions()
    with pytest.raises(ValueError, match="target < trigger"):
        CompactionOptions(max_input_tokens=1000, trigger=0.5, target=0.6)
    with pytest.raises(ValueError, match="must be below trigger_tokens"):
        CompactionOptions(trigger_tokens=1000, target_tokens=1000)
    with pytest.raises(ValueError, match="must not exceed max_input_tokens"):
        CompactionOptions(max_input_tokens=1000, trigger_tokens=2000)
    with pytest.raises(ValueError, match="keep_recent_steps must be >= 1"):
        CompactionOptions(trigger_tokens=1000, keep_recent_steps=0)
    with pytest.raises(ValueError, match="max_input_tokens must be a positive"):
        CompactionOptions(max_input_tokens=-5)
    with pytest.raises(TypeError, match="options must be a CompactionOptions"):
        CompactionChatClient(Model().client, 100_000)  # type: ignore[arg-type]
    options = CompactionOptions(max_input_tokens=200_000)
    assert (options.trigger_at, options.target_at) == (160_000, 100_000)
    assert CompactionOptions(trigger_tokens=8000).target_at == 5000


def test_the_builder_adds_compaction_with_typed_options() -> None:
    model = Model()
    client = ChatClientBuilder(model.client).use_compaction(max_input_tokens=100_000).build()
    assert isinstance(client, CompactionChatClient)
    assert client.options.trigger_at == 80_000 and client.inner is model.client
    options = CompactionOptions(trigger_tokens=10)
    built = ChatClientBuilder(model.client).use_compaction(options).build()
    assert isinstance(built, CompactionChatClient) and built.options is options
    with pytest.raises(TypeError, match="not both"):
        ChatClientBuilder(model.client).use_compaction(options, trigger_tokens=5)


def test_a_call_is_described_as_the_model_could_repeat_it() -> None:
    call = FunctionCallContent(
        call_id="1", name="write_file", arguments={"path": "a.py", "content": "x" * 5000, "n": 3}
    )
    text = describe_call(call)
    assert text.startswith("write_file(path='a.py', content='xxx") and text.endswith(", n=3)")
    assert len(text) < 120
