"""Compaction's bookkeeping between requests, found unpinned by ``nox -s mutate -- compaction``:
its options' limits, state per conversation and per client, streaming, the window, when it looks
again after a compaction, the summary's usage and event, and what the summariser is given.

Figures are exact: the estimator is :func:`tests.core.test_compaction_plan.chars` (10 a message
plus its characters), and a provider that reports usage reports exactly a multiple of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    TextContent,
    UsageContent,
    UsageDetails,
)
from loopkit.errors import ProviderError
from loopkit.middleware.compaction import (
    DEFAULT_SUMMARY_PROMPT,
    CompactionChatClient,
    CompactionOptions,
)
from loopkit.middleware.conversation_steps import result_stub
from loopkit.run_context import RunEvent, run_scope

from .test_compaction_plan import chars, read, units, write

SYSTEM = ChatMessage.from_text(ChatRole.SYSTEM, "You review code.")
TASK = ChatMessage.from_text(ChatRole.USER, "Review the modules.")


def step(i: int, result: int = 1000, text: int = 0, tool: str = "read") -> list[ChatMessage]:
    call = FunctionCallContent(call_id=f"c{i}", name=tool, arguments={"n": i})
    contents: list[Any] = [TextContent(text="t" * text), call] if text else [call]
    return [
        ChatMessage(role=ChatRole.ASSISTANT, contents=contents),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[FunctionResultContent(call_id=f"c{i}", result="r" * result)],
        ),
    ]


def steps(first: int, count: int, **kw: Any) -> list[ChatMessage]:
    return [m for i in range(first, first + count) for m in step(i, **kw)]


def elided(messages: Sequence[ChatMessage]) -> list[str]:
    """The call ids whose results were elided."""
    return [
        r.call_id for m in messages for r in m.function_results if r.result.startswith("[elided:")
    ]


def summarised(messages: Sequence[ChatMessage]) -> bool:
    return any(m.text.startswith("Summary of the earlier conversation") for m in messages)


class Model:
    """Records requests (messages, options) and summary requests; reports an input of exactly
    ``scale`` times the request's estimate (none when ``scale`` is None); the summary comes with
    a usage of (50, 7) unless ``fail`` makes the summariser raise a ProviderError."""

    def __init__(
        self, scale: int | None = None, summary: str = "S.", fail: str | None = None
    ) -> None:
        self.scale = scale
        self.summary = summary
        self.fail = fail
        self.requests: list[list[ChatMessage]] = []
        self.options: list[ChatOptions | None] = []
        self.summaries: list[list[ChatMessage]] = []
        self.client = FunctionChatClient(self.reply)

    def usage(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> Any:
        if self.scale is None:
            return None
        return UsageDetails(input_tokens=self.scale * units(messages, options), output_tokens=1)

    def reply(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        if messages[0].text == DEFAULT_SUMMARY_PROMPT:
            self.summaries.append(list(messages))
            if self.fail is not None:
                raise ProviderError(self.fail, retryable=False, status_code=400)
            return ChatResponse(
                messages=[ChatMessage.from_text(ChatRole.ASSISTANT, self.summary)],
                usage=UsageDetails(input_tokens=50, output_tokens=7),
            )
        self.requests.append(list(messages))
        self.options.append(options)
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, "ok")],
            usage=self.usage(messages, options),
        )


def client_for(model: Model, **options: Any) -> CompactionChatClient:
    return CompactionChatClient(model.client, CompactionOptions(**options), estimator=chars)


async def send_all(
    client: CompactionChatClient, *requests: list[ChatMessage], options: ChatOptions | None = None
) -> list[list[RunEvent]]:
    """Send the requests in one run; the compaction events of each request."""
    per_request: list[list[RunEvent]] = []
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for messages in requests:
            before = len(events)
            await client.get_response(messages, options)
            per_request.append(events[before:])
    return per_request


# -- the options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trigger_tokens": 0}, "trigger_tokens must be a positive number of tokens, got 0"),
        ({"max_input_tokens": -5}, "max_input_tokens must be a positive number of tokens, got -5"),
        ({"trigger_tokens": 2.5}, "trigger_tokens must be a positive number of tokens, got 2.5"),
        (
            {"max_input_tokens": 1000, "target": 0.0},
            "expected 0 < target < trigger <= 1 (fractions of max_input_tokens), got "
            "target=0.0, trigger=0.8",
        ),
        ({"max_input_tokens": 1000, "target": 0.8}, "got target=0.8, trigger=0.8"),
        ({"max_input_tokens": 1000, "trigger": 1.01}, "got target=0.5, trigger=1.01"),
        (
            {"trigger_tokens": 100, "target_tokens": 100},
            "target_tokens (100) must be below trigger_tokens (100)",
        ),
        (
            {"max_input_tokens": 1000, "trigger_tokens": 1001},
            "trigger_tokens (1,001) must not exceed max_input_tokens (1,000)",
        ),
        ({"trigger_tokens": 100, "keep_recent_steps": 0}, "keep_recent_steps must be >= 1, got 0"),
        ({"trigger_tokens": 100, "min_elide_chars": -1}, "min_elide_chars must be >= 0, got -1"),
        (
            {"trigger_tokens": 100, "summary_max_tokens": 15},
            "summary_max_tokens must be >= 16, got 15",
        ),
    ],
)
def test_options_out_of_range_are_refused_naming_the_value(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        CompactionOptions(**options)
    assert message in str(raised.value)


def test_options_at_their_limits_are_accepted() -> None:
    at_limits = [
        CompactionOptions(trigger_tokens=2, target_tokens=1, min_elide_chars=0),
        CompactionOptions(max_input_tokens=1000, trigger=1.0, target=0.001),
        CompactionOptions(max_input_tokens=1000, trigger_tokens=1000),
        CompactionOptions(trigger_tokens=100, keep_recent_steps=1, summary_max_tokens=16),
    ]
    assert [(o.trigger_at, o.target_at) for o in at_limits] == [
        (2, 1),
        (1000, 1),
        (1000, 625),
        (100, 62),
    ]


def test_options_of_another_type_are_refused() -> None:
    with pytest.raises(TypeError) as raised:
        CompactionChatClient(FunctionChatClient(lambda m, o: "x"), {"trigger_tokens": 5})  # type: ignore[arg-type]
    assert str(raised.value) == (
        "options must be a CompactionOptions, e.g. CompactionOptions(max_input_tokens=200_000); "
        "got dict"
    )


# -- state: per conversation, per client, per request -------------------------------------------


async def test_another_conversation_in_the_same_run_starts_over_with_the_calibration() -> None:
    model = Model(scale=2)
    first = [SYSTEM, TASK, *steps(0, 3)]
    other_task = ChatMessage.from_text(ChatRole.USER, "Another task.")
    other = [SYSTEM, other_task, *steps(10, 4)]
    trigger = units(first) + units(other)  # between twice the first and twice the other
    client = client_for(model, trigger_tokens=trigger, target_tokens=trigger // 2,
                        keep_recent_steps=1, summarize=False)  # fmt: skip
    assert 2 * units(first) < trigger < 2 * units(other) and units(other) < trigger
    events = await send_all(client, first, other)
    # The other conversation is judged with the provider's scale (2) learnt from the first...
    assert events[0] == [] and len(events[1]) == 1
    assert events[1][0].data["tokens_before"] == 2 * units(other)
    # ... and compacted on its own: nothing of the first conversation is sent with it.
    sent = model.requests[1]
    assert sent[1] is other_task and not any(m in sent for m in first[2:])
    assert elided(sent) and set(elided(sent)) <= {"c10", "c11", "c12"}


OPTIONS: dict[str, Any] = {"trigger_tokens": 4000, "target_tokens": 2500, "keep_recent_steps": 1,
                           "summarize": False}  # fmt: skip


@pytest.mark.parametrize("change", ["shorter", "last known message", "inside the prefix"])
async def test_a_conversation_edited_between_requests_is_compacted_afresh(change: str) -> None:
    model = Model()
    client = client_for(model, **OPTIONS)
    first = [SYSTEM, TASK, *steps(0, 5)]
    edited = list(first)
    if change == "shorter":
        edited = first[:-2]  # the last step taken back (a retried request)
    elif change == "last known message":
        edited = [*first[:-1], step(99)[1]]
        edited[-2] = step(99)[0]
    requests = [first, edited]
    if change == "inside the prefix":
        # one more step (no compaction), then the last step of the compacted prefix replaced
        grown = [*first, *step(5, result=10)]
        edited = list(grown)
        edited[len(first) - 2 : len(first)] = step(50)
        requests = [first, grown, edited]
    events = await send_all(client, *requests)
    assert len(events[0]) == 1
    # Compacted from the edited conversation itself, as a new run would compact it.
    fresh = Model()
    await send_all(client_for(fresh, **OPTIONS), edited)
    assert model.requests[-1] == fresh.requests[0]
    assert [len(m.contents) for m in model.requests[-1]] == [len(m.contents) for m in edited]


async def test_the_same_request_twice_is_not_compacted_twice() -> None:
    model = Model()
    client = client_for(model, trigger_tokens=4000, target_tokens=2500, keep_recent_steps=1,
                        summarize=False)  # fmt: skip
    messages = [SYSTEM, TASK, *steps(0, 6)]
    events = await send_all(client, messages, messages)
    assert [len(e) for e in events] == [1, 0]
    assert model.requests[1] == model.requests[0]


async def test_two_compaction_clients_in_one_run_keep_their_own_state() -> None:
    one, two = Model(), Model()
    options = {"trigger_tokens": 4000, "target_tokens": 2500, "keep_recent_steps": 1,
               "summarize": False}  # fmt: skip
    a, b = client_for(one, **options), client_for(two, **options)
    first = [SYSTEM, TASK, *steps(0, 6)]
    second = [SYSTEM, ChatMessage.from_text(ChatRole.USER, "Other."), *steps(20, 6)]
    events: list[RunEvent] = []
    with run_scope() as run:
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for _ in range(3):  # alternating: each keeps its own compacted prefix
            await a.get_response(first)
            await b.get_response(second)
    assert len(events) == 2
    assert one.requests[2] == one.requests[0] and two.requests[2] == two.requests[0]


# -- streaming ------------------------------------------------------------------------------------


class StreamingModel(Model):
    """Streams its answer; the usage comes in two updates (the input first, the output last),
    as Anthropic's stream reports it."""

    def streaming(self) -> Any:
        model = self

        class Client(FunctionChatClient):
            async def get_streaming_response(
                self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
            ) -> AsyncIterator[ChatResponseUpdate]:
                response = model.reply(messages, options)
                usage = response.usage
                if usage is not None:
                    first = UsageDetails(input_tokens=usage.input_tokens, output_tokens=0)
                    yield ChatResponseUpdate(contents=[UsageContent(usage=first)])
                yield ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[TextContent(text="ok")])
                if usage is not None:
                    last = UsageDetails(input_tokens=0, output_tokens=usage.output_tokens)
                    yield ChatResponseUpdate(contents=[UsageContent(usage=last)])

        return Client(lambda m, o: "unused")


async def stream_all(
    client: CompactionChatClient, *requests: list[ChatMessage], options: ChatOptions | None = None
) -> list[list[RunEvent]]:
    per_request: list[list[RunEvent]] = []
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(lambda e: events.append(e) if e.type == "compaction" else None)
        for messages in requests:
            before = len(events)
            async for _ in client.get_streaming_response(messages, options):
                pass
            per_request.append(events[before:])
    return per_request


async def test_a_streamed_request_calibrates_from_usage_split_over_updates() -> None:
    model = StreamingModel(scale=3)
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(trigger_tokens=9000, target_tokens=5000, keep_recent_steps=1,
                          summarize=False),
        estimator=chars,
    )  # fmt: skip
    first = [SYSTEM, TASK, *steps(0, 2)]
    grown = [*first, *steps(2, 2)]
    assert units(grown) < 9000 < 3 * units(grown)
    events = await stream_all(client, first, grown)
    assert events[0] == [] and events[1][0].data["tokens_before"] == 3 * units(grown)


async def test_a_streamed_request_counts_its_tools_and_passes_its_options_on() -> None:
    model = StreamingModel()
    options = ChatOptions(tools=[read, write], model_id="m-1")
    messages = [SYSTEM, TASK, *steps(0, 3)]
    tools = chars([], options)
    trigger = units(messages) + tools // 2
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(trigger_tokens=trigger, target_tokens=trigger // 2,
                          keep_recent_steps=1, summarize=False),
        estimator=chars,
    )  # fmt: skip
    [events] = await stream_all(client, messages, options=options)
    assert events and events[0].data["tokens_before"] == units(messages) + tools
    assert model.options == [options]


async def test_a_streamed_request_outside_a_run_is_compacted_on_its_own() -> None:
    model = StreamingModel()
    client = CompactionChatClient(
        model.streaming(),
        CompactionOptions(trigger_tokens=4000, target_tokens=2500, keep_recent_steps=1,
                          summarize=False),
        estimator=chars,
    )  # fmt: skip
    messages = [SYSTEM, TASK, *steps(0, 6)]
    async for _ in client.get_streaming_response(messages):
        pass
    assert elided(model.requests[0]) and units(model.requests[0]) <= 2500


# -- the window -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("keep", "scale"), [(4, None), (2, None), (3, 2)])
async def test_latest_steps_that_alone_overflow_the_window_are_not_all_kept(
    keep: int, scale: int | None
) -> None:
    model = Model(scale=scale)
    factor = scale or 1
    # The latest steps are large: kept verbatim, they alone would not fit the window.
    old = steps(0, 4, result=300)
    latest = steps(10, keep, result=2500)
    messages = [SYSTEM, TASK, *old, *latest]
    window = (units(messages) * factor) * 9 // 10
    client = client_for(model, max_input_tokens=window, trigger=0.8, target=0.5,
                        keep_recent_steps=keep, summarize=False)  # fmt: skip
    first = [SYSTEM, TASK, step(90, result=10)[0], step(90, result=10)[1]]
    await send_all(client, first, messages) if scale else await send_all(client, messages)
    sent = model.requests[-1]
    # Only the last step stays whole; the steps before it lose their results.
    assert f"c{10 + keep - 1}" not in elided(sent)
    assert {f"c{10 + i}" for i in range(keep - 1)} <= set(elided(sent))
    assert units(sent) * factor <= window


# -- when compaction looks again ----------------------------------------------------------------


async def test_with_nothing_left_to_compact_it_waits_for_a_quarter_of_the_gap() -> None:
    model = Model(fail="summariser down " + "x" * 700)
    # Short results (nothing to elide), long texts: only a summary could help, and it fails.
    base = [SYSTEM, TASK, *steps(0, 4, result=50, text=900)]
    tools_free = units(base)
    trigger, target = tools_free - 1, tools_free - 1001
    client = client_for(model, trigger_tokens=trigger, target_tokens=target, keep_recent_steps=1)
    quarter = (trigger - target) // 4  # 250

    def note(cost: int) -> ChatMessage:
        return ChatMessage.from_text(ChatRole.USER, "x" * (cost - 10))

    second = [*base, note(quarter - 10)]
    third = [*second, note(10)]  # a quarter of the gap larger than the first: not yet
    fourth = [*third, note(11)]  # more than a quarter: look again
    fifth = [*fourth, note(10)]
    events = await send_all(client, base, second, third, fourth, fifth)
    assert [units(r) - tools_free for r in (second, third, fourth)] == [240, 250, 261]
    assert [len(e) for e in events] == [1, 0, 0, 1, 0]
    assert len(model.summaries) == 2
    [event] = events[0]
    assert event.data == {
        "tokens_before": tools_free,
        "tokens_after": tools_free,
        "elided_results": 0,
        "summarised_messages": 0,
        "strategy": "none",
        "trigger_tokens": trigger,
        "target_tokens": target,
        "summary_error": ("summariser down " + "x" * 700)[:600],
    }
    assert model.requests[0] == base  # sent as it was


async def test_after_falling_short_of_the_target_it_waits_for_the_gap_again() -> None:
    model = Model()
    trigger, target = 6000, 3000
    client = client_for(model, trigger_tokens=trigger, target_tokens=target, keep_recent_steps=2,
                        summarize=False)  # fmt: skip
    # The last two steps are large and stay: the compaction cannot reach the target.
    messages = [SYSTEM, TASK, *steps(0, 3), *steps(10, 2, result=3000)]
    [[event]] = await send_all(client, messages)
    after = event.data["tokens_after"]
    assert trigger < after
    gap = trigger - target
    # Growing by less than the gap: no new compaction, though a step could now be elided.
    small = [*messages, *step(20, result=gap - 200)]
    large = [*messages, *step(20, result=gap + 100)]
    model2 = Model()
    client2 = client_for(model2, trigger_tokens=trigger, target_tokens=target,
                         keep_recent_steps=2, summarize=False)  # fmt: skip
    assert [len(e) for e in await send_all(client2, messages, small)] == [1, 0]
    model3 = Model()
    client3 = client_for(model3, trigger_tokens=trigger, target_tokens=target,
                         keep_recent_steps=2, summarize=False)  # fmt: skip
    assert [len(e) for e in await send_all(client3, messages, large)] == [1, 1]


async def test_the_next_look_is_never_later_than_the_window() -> None:
    trigger, target, window = 6000, 3000, 9400
    messages = [SYSTEM, TASK, *steps(0, 3), *steps(10, 2, result=3000)]
    options = {"max_input_tokens": window, "trigger_tokens": trigger, "target_tokens": target,
               "keep_recent_steps": 2, "summarize": False}  # fmt: skip
    probe = Model()
    [[event]] = await send_all(client_for(probe, **options), messages)
    after = event.data["tokens_after"]
    assert after + (trigger - target) > window  # the gap alone would look again past the window
    # one more step that takes the request just over the window
    grown = [*messages, *step(20, result=window - after + 5 - 33)]
    assert after + units(grown[-2:]) == window + 5
    model = Model()
    events = await send_all(client_for(model, **options), messages, grown)
    assert len(events[1]) == 1  # a request over the window compacts


# -- the summary's usage and event --------------------------------------------------------------


async def test_the_summary_costs_the_run_its_tokens_and_the_event_says_so() -> None:
    model = Model()
    client = client_for(model, trigger_tokens=4000, target_tokens=1500, keep_recent_steps=1)
    messages = [SYSTEM, TASK, *steps(0, 6, result=100, text=600)]
    with run_scope() as run:
        events: list[RunEvent] = []
        run.subscribe(events.append)
        await client.get_response(messages)
        usage = run.usage
    assert (usage.input_tokens, usage.output_tokens) == (50, 7)
    [event] = [e for e in events if e.type == "compaction"]
    sent = model.requests[0]
    assert summarised(sent)
    assert event.data == {
        "tokens_before": units(messages),
        "tokens_after": units(sent),
        "elided_results": 0,
        "summarised_messages": len(messages) - len(sent) + 1,
        "strategy": "summary",
        "trigger_tokens": 4000,
        "target_tokens": 1500,
        "summary_input_tokens": 50,
        "summary_output_tokens": 7,
    }


# -- what the summariser is given -----------------------------------------------------------------


def transcript_of(model: Model) -> str:
    return model.summaries[-1][1].text


@pytest.mark.parametrize(
    ("target", "cut"), [(20000, 1000), (2000, 200), (500, None)], ids=["1000", "200", "omitted"]
)
async def test_the_transcript_is_cut_to_fit_the_summarisers_window(
    target: int, cut: int | None
) -> None:
    model = Model()
    client = client_for(model, trigger_tokens=target + 1, target_tokens=target,
                        keep_recent_steps=1, min_elide_chars=10**6)  # fmt: skip
    messages = [SYSTEM, TASK, *steps(0, 11, result=3000, text=50)]
    await send_all(client, messages)
    text = transcript_of(model)
    limit = target * 4
    if cut is not None:
        assert f"read: {'r' * cut} [... 3,000 characters in all]" in text
        assert f"read: {'r' * (cut + 1)}" not in text
        assert len(text) <= limit
    else:
        assert text.startswith("[the beginning is omitted]\n")
        assert len(text) <= limit + len("[the beginning is omitted]\n")


async def test_a_later_summary_keeps_the_earlier_one_whatever_it_cuts() -> None:
    model = Model(summary="EARLIER-SUMMARY " * 5)
    client = client_for(model, trigger_tokens=5000, target_tokens=1500, keep_recent_steps=1,
                        min_elide_chars=10**6)  # fmt: skip
    first = [SYSTEM, TASK, *steps(0, 6, result=1200, text=50)]
    grown = [*first, *steps(6, 30, result=1200, text=50)]
    events = await send_all(client, first, grown)
    assert [len(e) for e in events] == [1, 1] and len(model.summaries) == 2
    text = transcript_of(model)
    assert text.startswith("Earlier summary:\nEARLIER-SUMMARY ")
    assert "[the beginning is omitted]\n" in text
    assert len(text) <= 1500 * 4 + len("\n\n[the beginning is omitted]\n")


# -- which results are worth eliding ------------------------------------------------------------


def sized_result(call: FunctionCallContent, saving: int) -> FunctionResultContent:
    """A result whose stub is exactly ``saving`` characters shorter than it."""
    size = 50
    while True:
        result = FunctionResultContent(call_id=call.call_id, result="r" * size)
        if size - len(result_stub(call, result)) == saving:
            return result
        size += 1


@pytest.mark.parametrize(("saving", "worth_it"), [(0, False), (1, True), (2, True)])
async def test_a_result_is_elided_only_when_its_stub_is_shorter(
    saving: int, worth_it: bool
) -> None:
    call = FunctionCallContent(call_id="c0", name="read", arguments={"n": 0})
    small = sized_result(call, saving)
    messages = [
        SYSTEM,
        TASK,
        ChatMessage(role=ChatRole.ASSISTANT, contents=[call]),
        ChatMessage(role=ChatRole.TOOL, contents=[small]),
        *steps(1, 2, result=20),
    ]
    model = Model()
    client = client_for(model, trigger_tokens=units(messages) - 1, target_tokens=10,
                        keep_recent_steps=1, min_elide_chars=0, summarize=False)  # fmt: skip
    await send_all(client, messages)
    assert ("c0" in elided(model.requests[0])) is worth_it


async def test_a_small_result_beside_a_large_one_does_not_hide_it() -> None:
    calls = [FunctionCallContent(call_id=f"c{i}", name="read", arguments={"n": i}) for i in (0, 1)]
    messages = [
        SYSTEM,
        TASK,
        ChatMessage(role=ChatRole.ASSISTANT, contents=calls),
        ChatMessage(
            role=ChatRole.TOOL,
            contents=[
                FunctionResultContent(call_id="c0", result="small"),
                FunctionResultContent(call_id="c1", result="r" * 400),  # exactly the minimum
            ],
        ),
        *steps(2, 1),
    ]
    model = Model()
    client = client_for(model, trigger_tokens=units(messages) - 1, target_tokens=100,
                        keep_recent_steps=1, summarize=False)  # fmt: skip
    await send_all(client, messages)
    assert elided(model.requests[0]) == ["c1"]
