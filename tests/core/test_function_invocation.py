from __future__ import annotations

import asyncio
import datetime
import decimal
import types
from typing import Any

import pytest

from loopkit import (
    ChatClientBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    DelegatingChatClient,
    FunctionCallContent,
    FunctionChatClient,
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    FunctionResultContent,
    MaxConsecutiveErrorsError,
    ToolError,
    UsageDetails,
    tool,
)
from loopkit.middleware.function_invocation import ToolInvocation, cut_result, tool_result_to_text

from .helpers import call, opts, script, user


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def boom() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


@tool
def refuse() -> str:
    """Fails with a message for the model."""
    raise ToolError("path outside the allowed folders")


def loop(model, **kw) -> FunctionInvokingChatClient:
    return FunctionInvokingChatClient(model, FunctionInvocationOptions(**kw))


def pairs_complete(messages) -> bool:
    calls = [c.call_id for m in messages for c in m.contents if isinstance(c, FunctionCallContent)]
    results = [
        c.call_id for m in messages for c in m.contents if isinstance(c, FunctionResultContent)
    ]
    return calls == results


async def test_two_rounds_then_text() -> None:
    model = script(
        {"calls": [call("add", {"equals": "3"}, a=1, b=2), call("add", {"equals": "7"}, a=3, b=4)]},
        {"text": "3 and 7"},
    )
    response = await loop(model).get_response(user(), opts(add))
    assert response.text == "3 and 7"
    assert [m.role for m in response.messages] == [
        ChatRole.ASSISTANT,
        ChatRole.TOOL,
        ChatRole.ASSISTANT,
    ]
    assert [r.result for r in response.messages[1].function_results] == ["3", "7"]
    assert response.additional_properties["rounds"] == 2
    assert response.usage is not None and response.usage.input_tokens > 0
    assert pairs_complete(response.messages)


async def test_max_rounds_then_one_final_request_without_tools() -> None:
    model = script(
        {"calls": [call("add", a=1, b=1)]},
        {"calls": [call("add", a=2, b=2)]},
        {"text": "RESULT: failed: out of rounds", "expect_no_tools": True},
    )
    seen_modes: list[str] = []
    inner_get = model.get_response

    async def spy(messages, options=None):
        seen_modes.append(options.tool_mode.kind if options and options.tool_mode else "auto")
        return await inner_get(messages, options)

    model.get_response = spy  # type: ignore[method-assign]
    response = await loop(model, max_rounds=2).get_response(user(), opts(add))
    assert seen_modes == ["auto", "auto", "none"]
    assert response.additional_properties["max_rounds_reached"] is True
    assert response.text == "RESULT: failed: out of rounds"
    assert pairs_complete(response.messages)


async def test_final_request_calls_are_dropped_to_keep_pairs_complete() -> None:
    model = script(
        {"calls": [call("add", a=1, b=1)]},
        {"text": "x", "calls": [call("add", a=1, b=1)]},
        strict=False,
    )
    response = await loop(model, max_rounds=1).get_response(user(), opts(add))
    assert pairs_complete(response.messages)
    assert response.text == "x"


async def test_final_request_can_be_switched_off() -> None:
    model = script({"calls": [call("add", a=1, b=1)]}, {"text": "never asked"})
    response = await loop(model, max_rounds=1, final_request_without_tools=False).get_response(
        user(), opts(add)
    )
    assert model.position == 1
    assert response.additional_properties["max_rounds_reached"] is True


async def test_three_failing_rounds_are_tolerated_the_fourth_ends_the_run() -> None:
    turns = [{"calls": [call("boom")]} for _ in range(4)] + [{"text": "never"}]
    model = script(*turns)
    with pytest.raises(MaxConsecutiveErrorsError) as raised:
        await loop(model, max_consecutive_errors=3).get_response(user(), opts(boom))
    assert model.position == 4
    error = raised.value
    assert (error.tools, error.round) == (["boom"], 4)
    assert isinstance(error.__cause__, RuntimeError) and str(error.__cause__) == "disk on fire"
    assert str(error) == (
        "tools failed in 4 rounds in a row (max_consecutive_errors=3); round 4: boom: "
        "RuntimeError: disk on fire"
    )


async def test_a_success_resets_the_consecutive_error_count() -> None:
    turns = [
        {"calls": [call("boom")]},
        {"calls": [call("boom")]},
        {"calls": [call("add", a=1, b=1)]},
        {"calls": [call("boom")]},
        {"calls": [call("boom")]},
        {"text": "survived"},
    ]
    response = await loop(script(*turns), max_consecutive_errors=2).get_response(
        user(), opts(boom, add)
    )
    assert response.text == "survived"


async def test_zero_consecutive_errors_ends_the_run_at_the_first() -> None:
    with pytest.raises(MaxConsecutiveErrorsError) as raised:
        await loop(script({"calls": [call("boom")]}), max_consecutive_errors=0).get_response(
            user(), opts(boom)
        )
    assert raised.value.round == 1 and isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("detailed", "expected"),
    [
        # Which tool and the exception's type by default; its message only when asked for.
        (False, "Error: boom failed with RuntimeError."),
        (True, "Error: boom failed with RuntimeError: disk on fire"),
    ],
)
async def test_detailed_errors_on_and_off(detailed: bool, expected: str) -> None:
    model = script({"calls": [call("boom", {"equals": expected, "error": True})]}, {"text": "ok"})
    await loop(model, include_detailed_errors=detailed).get_response(user(), opts(boom))


async def test_tool_error_message_always_reaches_the_model() -> None:
    model = script(
        {"calls": [call("refuse", {"equals": "Error: path outside the allowed folders"})]},
        {"text": "ok"},
    )
    await loop(model, include_detailed_errors=False).get_response(user(), opts(refuse))


async def test_validation_failure_goes_back_as_a_readable_error() -> None:
    model = script(
        {
            "calls": [
                call(
                    "add",
                    {"contains": ["invalid arguments for add", "b: Field required"], "error": True},
                    a=1,
                )
            ]
        },
        {"text": "ok"},
    )
    assert (await loop(model).get_response(user(), opts(add))).text == "ok"


async def test_invalid_json_arguments_are_reported_to_the_model() -> None:
    from loopkit import ChatMessage, ChatResponse, FunctionChatClient

    replies = iter(
        [
            ChatResponse(
                messages=[
                    ChatMessage(
                        role=ChatRole.ASSISTANT,
                        contents=[
                            FunctionCallContent(
                                call_id="c1",
                                name="add",
                                arguments={},
                                arguments_error="arguments are not valid JSON: '{a: 1'",
                            )
                        ],
                    )
                ]
            ),
            "done",
        ]
    )
    seen: list[str] = []

    def reply(messages, options):
        for m in messages:
            seen.extend(r.result for r in m.function_results)
        return next(replies)

    response = await loop(FunctionChatClient(reply)).get_response(user(), opts(add))
    assert response.text == "done"
    assert seen == ["Error: arguments are not valid JSON: '{a: 1'"]


async def test_unknown_tool_is_answered_by_default() -> None:
    model = script(
        {
            "calls": [
                call(
                    "nope",
                    {
                        "equals": 'Error: there is no tool named "nope". Available tools: add.',
                        "error": True,
                    },
                )
            ]
        },
        {"text": "fine"},
        strict=True,
    )
    model.strict = True
    response = await loop(model).get_response(user(), opts(add))
    assert response.text == "fine"


async def test_unknown_tool_terminates_when_asked() -> None:
    model = script({"calls": [call("nope")]}, {"text": "never"}, strict=False)
    response = await loop(model, terminate_on_unknown_calls=True).get_response(user(), opts(add))
    assert model.position == 1
    assert response.additional_properties["unknown_tools"] == ["nope"]
    assert response.function_calls[0].name == "nope"


async def test_parallel_invocation_runs_one_rounds_calls_concurrently() -> None:
    running = 0
    peak = 0

    @tool
    async def slow(n: int) -> int:
        """Sleep a bit."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        return n

    turns = [{"calls": [call("slow", {"equals": str(i)}, n=i) for i in range(3)]}, {"text": "ok"}]
    await loop(script(*turns), allow_concurrent_invocation=True).get_response(user(), opts(slow))
    assert peak == 3
    peak = 0
    await loop(script(*turns), allow_concurrent_invocation=False).get_response(user(), opts(slow))
    assert peak == 1


async def test_results_are_plain_text_and_cut_with_a_note() -> None:
    @tool
    def big() -> str:
        """Lots of text."""
        return "x" * 5000

    @tool
    def data() -> dict:
        """A dict."""
        return {"a": "ü", "b": [1, 2]}

    model = script(
        {
            "calls": [
                call(
                    "big",
                    {"contains": ["[cut: the result has 5000 characters, only the first 4000"]},
                ),
                call("data", {"equals": '{"a":"ü","b":[1,2]}'}),
            ]
        },
        {"text": "ok"},
    )
    await loop(model).get_response(user(), opts(big, data))
    assert len(cut_result("y" * 4001, 4000).split("\n")[0]) == 4000
    assert tool_result_to_text(None) == ""
    assert tool_result_to_text(b"\x00\x01") == "(binary result, 2 bytes, not shown)"


async def test_listeners_below_the_loop_see_each_invocation() -> None:
    from loopkit import DelegatingChatClient

    class Spy(DelegatingChatClient):
        def __init__(self, inner):
            super().__init__(inner)
            self.seen: list[ToolInvocation] = []

        def on_tool_invoked(self, invocation: ToolInvocation) -> None:
            self.seen.append(invocation)

    spies: list[Spy] = []

    def make(inner):
        spies.append(Spy(inner))
        return spies[-1]

    client = (
        ChatClientBuilder(script({"calls": [call("add", a=2, b=2)]}, {"text": "ok"}))
        .use_function_invocation()
        .use(make)
        .build()
    )
    await client.get_response(user(), opts(add))
    [inv] = spies[0].seen
    assert (inv.call.name, inv.result, inv.error, inv.round) == ("add", "4", False, 1)
    assert inv.ms >= 0


async def test_no_tools_means_calls_are_returned_unanswered() -> None:
    model = script({"calls": [call("add", a=1, b=1)]}, strict=False)
    response = await loop(model).get_response(user(), None)
    assert response.function_calls[0].name == "add"


async def test_streaming_loop_yields_tool_results_and_final_text() -> None:
    model = script({"calls": [call("add", {"equals": "5"}, a=2, b=3)]}, {"text": "five"})
    updates = [u async for u in loop(model).get_streaming_response(user(), opts(add))]
    tool_updates = [u for u in updates if u.role == ChatRole.TOOL]
    assert tool_updates[0].contents[0].result == "5"  # type: ignore[union-attr]
    assert "".join(u.text for u in updates) == "five"


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="max_rounds must be >= 1"):
        FunctionInvocationOptions(max_rounds=0)
    with pytest.raises(ValueError, match="max_consecutive_errors"):
        FunctionInvocationOptions(max_consecutive_errors=-1)


async def test_errors_that_terminate_the_run_propagate_at_once() -> None:
    from loopkit import MCPServerError

    @tool
    def dead() -> str:
        """A tool whose server died."""
        raise MCPServerError("server 'ui' died")

    model = script({"calls": [call("dead")]}, {"text": "never"})
    with pytest.raises(MCPServerError):
        await loop(model, max_consecutive_errors=3).get_response(user(), opts(dead))
    assert model.position == 1


async def test_calls_needing_approval_run_only_when_approved() -> None:
    ran: list[int] = []

    @tool
    def commit(n: int) -> str:
        """Commit."""
        ran.append(n)
        return f"committed {n}"

    asked: list[dict] = []

    async def approver(c: FunctionCallContent) -> bool:
        asked.append(c.arguments)
        return c.arguments["n"] == 2

    refused = "Error: the call to commit was not approved."
    turns = [
        {"calls": [call("commit", {"contains": [refused], "error": True}, n=1)]} for _ in range(4)
    ]
    turns.append(
        {
            "calls": [
                call("commit", {"equals": "committed 2"}, n=2),
                call("add", {"equals": "3"}, a=1, b=2),
            ]
        }
    )
    turns.append({"text": "ok"})
    client = loop(
        script(*turns), approval_required={"commit"}, approver=approver, max_consecutive_errors=1
    )
    response = await client.get_response(user(), opts(commit, add))
    assert response.text == "ok"
    assert ran == [2]  # refused calls never ran; four refusals in a row are not "errors"
    assert asked == [{"n": 1}] * 4 + [{"n": 2}]  # add needs no approval


@pytest.mark.parametrize("stream", [False, True], ids=["get_response", "streamed"])
async def test_a_misspelt_approval_name_is_refused_before_the_model_is_asked(stream: bool) -> None:
    """``{"ad"}`` for the tool ``add`` would let ``add`` run without approval: the request is
    refused, naming the tools and the likely fix, and no model request is made."""
    model = script({"calls": [call("add", a=1, b=2)]}, {"text": "ok"})
    client = loop(model, approval_required={"ad"}, approver=lambda c: True)
    with pytest.raises(ValueError) as raised:
        if stream:
            [u async for u in client.get_streaming_response(user(), opts(add, boom))]
        else:
            await client.get_response(user(), opts(add, boom))
    assert str(raised.value) == (
        "approval_required names 'ad', which is not a tool of this run; the tools are: add, "
        "boom. Did you mean 'ad' -> 'add'? Fix the name in approval_required (or add the tool)."
    )
    assert model.position == 0
    # A request that offers no tools invokes none: nothing to approve, nothing to refuse.
    plain = loop(script({"text": "fine"}), approval_required={"ad"}, approver=lambda c: True)
    assert (await plain.get_response(user(), opts())).text == "fine"


def test_approval_needs_an_approver() -> None:
    with pytest.raises(ValueError, match="no approver is set"):
        FunctionInvocationOptions(approval_required=frozenset({"git_commit"}))


# -- pinned by mutation testing (nox -s mutate -- loop): each test kills survivors of a kind ----


class Recorded:
    """Replies in order and records the options of every request (FunctionChatClient's fn)."""

    def __init__(self, *replies: ChatResponse) -> None:
        self.replies = list(replies)
        self.options: list[ChatOptions | None] = []
        self.sent: list[list[ChatMessage]] = []

    def __call__(self, messages: list[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        self.options.append(options)
        self.sent.append(list(messages))
        return self.replies.pop(0)


def calls(*names: str, **extra: Any) -> ChatResponse:
    contents = [FunctionCallContent(call_id=f"c{i}-{n}", name=n, arguments={"a": 1, "b": 2})
                for i, n in enumerate(names)]  # fmt: skip
    return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=contents)], **extra)


def answer(text: str, **extra: Any) -> ChatResponse:
    return ChatResponse(messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)], **extra)


def usage(n: int) -> UsageDetails:
    return UsageDetails(input_tokens=n, output_tokens=1, cached_input_tokens=n // 10)


async def test_every_round_gets_the_callers_options() -> None:
    recorded = Recorded(calls("add"), calls("add"), answer("done"))
    options = opts(add, max_output_tokens=77)
    await loop(FunctionChatClient(recorded), max_rounds=2).get_response(user(), options)
    assert recorded.options[:2] == [options, options]
    final = recorded.options[2]
    assert final is not None and final.tool_mode is not None and final.tool_mode.kind == "none"
    assert (final.tools, final.max_output_tokens) == (options.tools, 77)


@pytest.mark.parametrize("max_rounds", [1, 5])
async def test_the_answer_carries_the_runs_usage_and_the_last_replys_ids(max_rounds: int) -> None:
    """Usage is summed over every request (the final one without tools included); the finish
    reason, model and response id are those of the last reply."""
    recorded = Recorded(
        calls(
            "add", usage=usage(10), model_id="m-1", response_id="r-1", finish_reason="tool_calls"
        ),
        answer("done", usage=usage(20), model_id="m-2", response_id="r-2", finish_reason="stop"),
    )
    response = await loop(FunctionChatClient(recorded), max_rounds=max_rounds).get_response(
        user(), opts(add)
    )
    assert response.usage == UsageDetails(input_tokens=30, output_tokens=2, cached_input_tokens=3)
    assert (response.finish_reason, response.model_id, response.response_id) == (
        "stop",
        "m-2",
        "r-2",
    )
    assert response.additional_properties.get("max_rounds_reached", False) is (max_rounds == 1)


def test_data_results_that_json_cannot_encode_become_text() -> None:
    assert tool_result_to_text({"when": datetime.date(2024, 1, 2)}) == '{"when":"2024-01-02"}'
    assert tool_result_to_text(decimal.Decimal("1.50")) == "1.50"
    assert tool_result_to_text(["ü"]) == '["ü"]'


async def test_two_calls_run_concurrently_and_listeners_see_their_round() -> None:
    running = peak = 0

    @tool
    async def slow(n: int) -> int:
        """Sleep a bit."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return n

    seen: list[ToolInvocation] = []

    class Spy(DelegatingChatClient):
        def on_tool_invoked(self, invocation: ToolInvocation) -> None:
            seen.append(invocation)

    turns = [{"calls": [call("slow", {"equals": str(i)}, n=i) for i in range(2)]}, {"text": "ok"}]
    client = (
        ChatClientBuilder(script(*turns))
        .use_function_invocation(FunctionInvocationOptions(allow_concurrent_invocation=True))
        .use(Spy)
        .build()
    )
    await client.get_response(user(), opts(slow))
    assert peak == 2
    assert [(i.result, i.round) for i in seen] == [("0", 1), ("1", 1)]


async def test_several_failures_beyond_the_limit_are_named_together() -> None:
    @tool
    def boom2() -> str:
        """Fails too."""
        raise ValueError("disk full")

    model = script({"calls": [call("boom"), call("boom2")]}, {"text": "never"})
    with pytest.raises(MaxConsecutiveErrorsError) as raised:
        await loop(model, max_consecutive_errors=0).get_response(user(), opts(boom, boom2))
    assert raised.value.tools == ["boom", "boom2"]
    assert [str(e) for e in raised.value.errors] == ["disk on fire", "disk full"]
    assert isinstance(raised.value.__cause__, ValueError)  # the last one
    assert "boom: RuntimeError: disk on fire; boom2: ValueError: disk full" in str(raised.value)


async def test_an_unknown_tool_is_told_every_available_tool() -> None:
    expected = 'Error: there is no tool named "nope". Available tools: add, boom, refuse.'
    model = script({"calls": [call("nope", {"equals": expected, "error": True})]}, {"text": "ok"})
    await loop(model).get_response(user(), opts(refuse, add, boom))


def bad_arguments() -> ChatResponse:
    bad = FunctionCallContent(
        call_id="c1", name="add", arguments={}, arguments_error="arguments are not valid JSON: '{'"
    )
    return ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[bad])])


async def test_arguments_that_do_not_parse_are_an_error_that_counts() -> None:
    recorded = Recorded(bad_arguments(), bad_arguments(), answer("never"))
    with pytest.raises(MaxConsecutiveErrorsError) as raised:
        await loop(FunctionChatClient(recorded), max_consecutive_errors=1).get_response(
            user(), opts(add)
        )
    cause = raised.value.__cause__
    assert isinstance(cause, ToolError) and str(cause) == "arguments are not valid JSON: '{'"
    [result] = recorded.sent[1][-1].function_results  # what the model got after round one
    assert (result.result, result.error) == ("Error: arguments are not valid JSON: '{'", True)


async def test_a_refused_call_is_told_exactly_what_to_do() -> None:
    expected = (
        "Error: the call to add was not approved. Do not retry it unchanged; continue without "
        "it or explain in your answer why it is needed."
    )
    model = script({"calls": [call("add", {"equals": expected, "error": True}, a=1, b=1)]},
                   {"text": "ok"})  # fmt: skip
    await loop(model, approval_required={"add"}, approver=lambda c: False).get_response(
        user(), opts(add)
    )


def test_the_missing_approver_error_says_what_to_pass() -> None:
    with pytest.raises(ValueError) as raised:
        FunctionInvocationOptions(approval_required=frozenset({"git_commit"}))
    assert str(raised.value) == (
        "approval_required names tools but no approver is set: pass approver=, a function "
        "(call) -> bool that asks a person or applies a policy"
    )


async def test_listeners_get_the_time_and_the_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopkit.middleware import function_invocation

    # A clock the test controls: the invocation took exactly 250 ms.
    clock = iter([10.0, 10.25])
    monkeypatch.setattr(
        function_invocation, "time", types.SimpleNamespace(perf_counter=lambda: next(clock))
    )
    seen: list[ToolInvocation] = []

    class Spy(DelegatingChatClient):
        def on_tool_invoked(self, invocation: ToolInvocation) -> None:
            seen.append(invocation)

    client = (
        ChatClientBuilder(script({"calls": [call("boom")]}, {"text": "ok"}))
        .use_function_invocation()
        .use(Spy)
        .build()
    )
    await client.get_response(user(), opts(boom))
    [invocation] = seen
    assert invocation.ms == 250.0
    assert isinstance(invocation.exception, RuntimeError)
    assert str(invocation.exception) == "disk on fire"


async def stream(client: FunctionInvokingChatClient, options: ChatOptions | None) -> list[Any]:
    return [u async for u in client.get_streaming_response(user(), options)]


async def test_streaming_without_options_returns_the_calls_unanswered() -> None:
    recorded = Recorded(calls("add"), answer("never"))
    updates = await stream(loop(FunctionChatClient(recorded)), None)
    assert recorded.options == [None]
    assert [c.name for u in updates for c in u.contents if isinstance(c, FunctionCallContent)] == [
        "add"
    ]


@pytest.mark.parametrize("final_request", [True, False])
async def test_streaming_stops_at_the_round_limit(final_request: bool) -> None:
    recorded = Recorded(calls("add"), calls("add"), answer("out of rounds"))
    options = opts(add)
    client = loop(
        FunctionChatClient(recorded), max_rounds=2, final_request_without_tools=final_request
    )
    updates = await stream(client, options)
    tool_results = [u for u in updates if u.role == ChatRole.TOOL]
    assert [u.contents[0].result for u in tool_results] == ["3", "3"]
    assert recorded.options[:2] == [options, options]
    if final_request:
        final = recorded.options[2]
        assert final is not None and final.tool_mode is not None
        assert final.tool_mode.kind == "none" and final.tools == options.tools
        assert updates[-1].text == "out of rounds"
    else:
        assert len(recorded.options) == 2 and recorded.replies == [answer("out of rounds")]


@pytest.mark.parametrize(
    ("terminate", "names", "requests", "results"),
    [
        (True, ["nope"], 1, []),
        (True, ["add"], 2, ["3"]),
        (False, ["nope"], 2, ['Error: there is no tool named "nope". Available tools: add.']),
    ],
)
async def test_streaming_unknown_calls(
    terminate: bool, names: list[str], requests: int, results: list[str]
) -> None:
    recorded = Recorded(calls(*names), answer("done"))
    client = loop(FunctionChatClient(recorded), terminate_on_unknown_calls=terminate)
    updates = await stream(client, opts(add))
    assert len(recorded.options) == requests
    assert [c.result for u in updates if u.role == ChatRole.TOOL for c in u.contents] == results


# -- issue 10: a sync approver off the event loop, per-run state, streaming boundaries ----------


async def test_a_sync_approver_runs_in_a_worker_thread_while_the_loop_keeps_ticking() -> None:
    """The approver sleeps 0.2 s (a person deciding); another task must tick meanwhile."""
    import time

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    seen: dict[str, int] = {}

    def approver(c: FunctionCallContent) -> bool:
        seen["before"] = ticks
        time.sleep(0.2)
        seen["after"] = ticks
        return True

    model = script({"calls": [call("add", {"equals": "3"}, a=1, b=2)]}, {"text": "ok"})
    task = asyncio.create_task(ticker())
    try:
        await asyncio.sleep(0.01)
        client = loop(model, approval_required={"add"}, approver=approver)
        assert (await client.get_response(user(), opts(add))).text == "ok"
    finally:
        task.cancel()
    assert seen["after"] > seen["before"]  # the event loop ran during the approval


async def test_an_async_callable_object_approver_is_awaited_on_the_loop() -> None:
    import threading

    threads: list[int] = []

    class Policy:
        async def __call__(self, c: FunctionCallContent) -> bool:
            threads.append(threading.get_ident())
            return False

    model = script(
        {"calls": [call("add", {"contains": ["not approved"]}, a=1, b=2)]}, {"text": "ok"}
    )
    await loop(model, approval_required={"add"}, approver=Policy()).get_response(user(), opts(add))
    assert threads == [threading.get_ident()]


async def test_a_bare_pipeline_opens_one_run_per_request() -> None:
    from loopkit.run_context import RunContext, RunEvent

    events: list[RunEvent] = []
    runs: list[RunContext] = []

    class Aware(DelegatingChatClient):
        def on_run_start(self, run: RunContext) -> None:
            runs.append(run)
            run.subscribe(events.append)

    model = script(
        {"calls": [call("add", a=1, b=2)], "usage": {"input_tokens": 5, "output_tokens": 1}},
        {"text": "3", "usage": {"input_tokens": 7, "output_tokens": 1}},
        {"text": "again", "usage": {"input_tokens": 2, "output_tokens": 1}},
    )
    client = ChatClientBuilder(model).use_function_invocation().use(Aware).build()
    await client.get_response(user(), opts(add))
    await client.get_response(user(), opts(add))
    assert len(runs) == 2 and runs[0].run_id != runs[1].run_id
    assert all(r.implicit for r in runs)
    assert (runs[0].rounds, runs[0].tool_calls, runs[0].usage.input_tokens) == (2, 1, 12)
    assert (runs[1].rounds, runs[1].usage.input_tokens) == (1, 2)
    assert [(e.run_id, e.type, e.data["status"]) for e in events] == [
        (runs[0].run_id, "run_end", "ok"),
        (runs[1].run_id, "run_end", "ok"),
    ]


async def test_inside_a_run_the_round_limit_counts_the_whole_run() -> None:
    from loopkit.run_context import run_scope

    recorded = Recorded(calls("add"), answer("one"), answer("final"))
    client = loop(FunctionChatClient(recorded), max_rounds=2)
    with run_scope() as run:
        first = await client.get_response(user(), opts(add))
        second = await client.get_response(user(), opts(add))  # the run's 2 rounds are spent
    assert first.text == "one" and first.additional_properties.get("max_rounds_reached") is None
    assert second.additional_properties["max_rounds_reached"] is True
    assert second.text == "final" and run.rounds == 3
    mode = recorded.options[2].tool_mode  # type: ignore[union-attr]
    assert mode is not None and mode.kind == "none"


async def test_each_complete_step_reaches_the_runs_message_hooks() -> None:
    from loopkit.run_context import run_scope

    steps: list[list[str]] = []

    async def hook(messages: list[ChatMessage]) -> None:
        steps.append([m.role.value for m in messages])

    model = script(
        {"calls": [call("add", a=1, b=2)]}, {"calls": [call("add", a=2, b=2)]}, {"text": "done"}
    )
    with run_scope() as run:
        run.on_messages(hook)
        await loop(model).get_response(user(), opts(add))
    assert steps == [["assistant", "tool"], ["assistant", "tool"], ["assistant"]]


def three_rounds() -> Any:
    return script(
        {"text": "First,", "calls": [call("add", {"equals": "3"}, a=1, b=2)]},
        {
            "calls": [
                call("add", {"equals": "7"}, a=3, b=4),
                call("add", {"equals": "11"}, a=5, b=6),
            ]
        },
        {"text": "3, 7 and 11."},
    )


async def test_the_fold_of_a_streamed_run_is_the_non_streamed_history() -> None:
    from loopkit import response_from_updates

    plain = await loop(three_rounds()).get_response(user(), opts(add))
    updates = [u async for u in loop(three_rounds()).get_streaming_response(user(), opts(add))]
    folded = response_from_updates(updates)
    assert folded.messages == plain.messages
    assert [m.role for m in folded.messages] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert folded.usage == plain.usage


async def test_on_the_wire_calls_come_before_their_results_and_results_before_the_next_text() -> (
    None
):
    updates = [u async for u in loop(three_rounds()).get_streaming_response(user(), opts(add))]
    kinds = [
        type(c).__name__ for u in updates for c in u.contents if type(c).__name__ != "UsageContent"
    ]
    assert kinds == [
        "TextContent",
        "FunctionCallContent",
        "FunctionResultContent",
        "FunctionCallContent",
        "FunctionCallContent",
        "FunctionResultContent",
        "FunctionResultContent",
        "TextContent",
    ]
    ids = [u.message_id for u in updates]
    assert all(ids) and len(set(ids)) == 5  # one id per message: 3 assistant, 2 tool


async def test_a_streamed_final_answer_drops_calls_it_cannot_answer() -> None:
    recorded = Recorded(calls("add"), ChatResponse(messages=[ChatMessage(role=ChatRole.ASSISTANT, contents=[
        *answer("out of rounds").messages[0].contents, *calls("add").messages[0].contents])]))  # fmt: skip
    updates = await stream(loop(FunctionChatClient(recorded), max_rounds=1), opts(add))
    from loopkit import response_from_updates

    folded = response_from_updates(updates)
    assert pairs_complete(folded.messages) and folded.text == "out of rounds"
