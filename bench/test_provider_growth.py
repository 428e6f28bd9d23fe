"""Below the loop, as the history grows: a provider request and a scripted model's round at 10,
60, 300 and 1,000 rounds, each beside its baseline in the same run.

- ``LiteLLMChatClient.build_request``: everything the client does before handing a request to
  litellm (the messages in the wire format, the tools, the options, Anthropic cache
  breakpoints), once per round of a growing conversation (round ``i``: an assistant message
  with ``1 + i % 3`` calls, one tool message with their results, 15 tools offered). Beside it,
  the same client with its history cache cleared before each request: every message mapped on
  every request, which is what the client did before it kept them. Nothing goes over HTTP
  (litellm's own work is not loopkit's; tests/providers cover the wire).
- ``ScriptedChatClient`` (strict, every result checked, usage estimated) driven by the
  function-invocation loop for N rounds, beside the same client with the whole-history usage
  estimate and result lookup it had before (kept here as the baseline), and beside
  ``FunctionChatClient`` playing the same replies under the same loop (no checks, no estimate):
  the difference to the last is the scripted model's own cost a round.

Checked: every request's messages equal the plain mapping of the whole history (at the first
and the last round), and both models play the whole script with the right results. Median of
several runs; speed is printed, never asserted. Run:
``.venv/bin/python -m pytest bench/test_provider_growth.py -s -q``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from typing import Any

SIZES = (10, 60, 300, 1000)
TOOLS = 15


def _tools() -> list[Any]:
    from test_loop_overhead import prebuilt, tool_functions

    from loopkit import FunctionTool

    return prebuilt([FunctionTool(fn) for fn in tool_functions(False)])


def _conversation(rounds: int) -> list[Any]:
    """The messages a tool loop of ``rounds`` rounds has after each round (one list)."""
    from test_loop_overhead import calls_of_round

    from loopkit import (
        ChatMessage,
        ChatRole,
        FunctionCallContent,
        FunctionResultContent,
    )

    messages = [
        ChatMessage.from_text(ChatRole.SYSTEM, "You follow the script."),
        ChatMessage.from_text(ChatRole.USER, "Run the script."),
    ]
    for i in range(rounds):
        calls = calls_of_round(i)
        messages.append(
            ChatMessage(
                role=ChatRole.ASSISTANT,
                contents=[FunctionCallContent(call_id=c, name=n, arguments=a) for c, n, a in calls],
            )
        )
        results = [FunctionResultContent(call_id=c, result=f"{n}:{a['x']}") for c, n, a in calls]
        messages.append(ChatMessage(role=ChatRole.TOOL, contents=results))
    return messages


def _litellm_run(rounds: int, *, cached: bool) -> float:
    """Seconds for the ``rounds`` requests of a growing conversation, per request."""
    from loopkit import ChatOptions
    from loopkit.providers.litellm import LiteLLMChatClient
    from loopkit.providers.litellm_mapping import add_cache_breakpoints, to_openai_messages

    client = LiteLLMChatClient("anthropic/claude-sonnet-4-5", api_key="sk-bench-not-sent")
    options = ChatOptions(tools=_tools())
    history = _conversation(rounds)
    cache = client._wire_cache  # the baseline forgets it before each request
    ends = [2 + 2 * (i + 1) for i in range(rounds)]
    gc.collect()
    start = time.perf_counter()
    for end in ends:
        if not cached:
            cache.clear()
        request = client.build_request(history[:end], options)
    elapsed = time.perf_counter() - start
    expected = to_openai_messages(history)
    add_cache_breakpoints(expected, None)
    assert request["messages"] == expected, "the last request's messages differ"
    return elapsed / rounds


def _scripted_run(rounds: int, *, model_kind: str) -> float:
    """Seconds a round of a loop over a model playing ``rounds`` rounds: ``scripted`` (the
    ScriptedChatClient), ``before`` (the same with the whole-history estimate and result lookup
    it had before it was made linear) or ``function`` (FunctionChatClient, same replies)."""
    from test_loop_overhead import calls_of_round

    from loopkit import (
        ChatMessage,
        ChatOptions,
        ChatRole,
        FunctionChatClient,
        FunctionInvokingChatClient,
        FunctionResultContent,
        ScriptedChatClient,
    )
    from loopkit.middleware.function_invocation import FunctionInvocationOptions
    from loopkit.providers.scripted import Script

    turns: list[dict[str, Any]] = [
        {
            "calls": [
                {"name": n, "id": c, "arguments": a, "expect": {"equals": f"{n}:{a['x']}"}}
                for c, n, a in calls_of_round(i)
            ]
        }
        for i in range(rounds)
    ]
    turns.append({"text": "All done."})
    script = Script.model_validate({"turns": turns})
    model: Any
    if model_kind == "scripted":
        model = ScriptedChatClient(script)
    elif model_kind == "before":
        model = _whole_history_scripted(script)
    else:  # the same replies, made by the scripted model before the clock starts
        replies = iter(_replies(ScriptedChatClient(script), rounds))
        model = FunctionChatClient(lambda messages, options: next(replies))
    loop = FunctionInvokingChatClient(model, FunctionInvocationOptions(max_rounds=rounds + 10))
    options = ChatOptions(tools=_tools())
    prompt = [ChatMessage.from_text(ChatRole.USER, "Run the script.")]

    async def timed() -> tuple[float, Any]:
        gc.collect()
        start = time.perf_counter()
        response = await loop.get_response(prompt, options)
        return time.perf_counter() - start, response

    elapsed, response = asyncio.run(timed())
    results = [
        c.result
        for m in response.messages
        for c in m.contents
        if isinstance(c, FunctionResultContent)
    ]
    assert len(results) == sum(len(calls_of_round(i)) for i in range(rounds))
    assert response.text == "All done."
    return elapsed / rounds


def _whole_history_class() -> type:
    """ScriptedChatClient as it was before it was made linear: the usage estimate and the
    result lookup read the whole history on every request (the code of that version)."""
    import json

    from loopkit import ScriptedChatClient
    from loopkit.abstractions.content import FunctionResultContent, UsageDetails

    class WholeHistory(ScriptedChatClient):
        def _check_results(self, messages: Any, turn_no: int) -> None:
            if turn_no == 0 or not self.strict:
                return
            previous = self.script.turns[turn_no - 1]
            results: dict[str, FunctionResultContent] = {}
            for m in messages:
                for r in m.function_results:
                    results[r.call_id] = r
            for i, call in enumerate(previous.calls):
                result = results.get(call.id or f"call_{turn_no}_{i + 1}")
                assert result is not None and call.expect is not None
                assert not call.expect.problems(result)

        def _usage(self, turn: Any, messages: Any, options: Any) -> UsageDetails:
            sent = sum(
                len(getattr(c, "text", "") or getattr(c, "result", "") or "")
                + len(json.dumps(getattr(c, "arguments", {})))
                for m in messages
                for c in m.contents
            )
            tools = options.tools if options is not None else []
            sent += sum(
                len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools
            )
            out = len(turn.text) + sum(
                len(json.dumps(c.arguments)) + len(c.name) for c in turn.calls
            )
            return UsageDetails(input_tokens=max(1, sent // 4), output_tokens=max(1, out // 4))

    return WholeHistory


def _whole_history_scripted(script: Any) -> Any:
    return _whole_history_class()(script)


def _replies(played: Any, rounds: int) -> list[Any]:
    """The scripted model's answers, taken from a lenient copy fed nothing."""
    from loopkit import ChatMessage, ChatRole, ScriptedChatClient

    lenient = ScriptedChatClient(played.script, strict=False)
    prompt = [ChatMessage.from_text(ChatRole.USER, "x")]
    return [asyncio.run(lenient.get_response(prompt)) for _ in range(rounds + 1)]


def _median(fn: Any, n: int, repeats: int, **kwargs: Any) -> float:
    return statistics.median(fn(n, **kwargs) for _ in range(repeats))


def test_provider_growth() -> None:
    _litellm_run(10, cached=True)  # warm up (imports, schema caches)
    for kind in ("scripted", "before", "function"):
        _scripted_run(10, model_kind=kind)
    rows: dict[str, dict[int, float]] = {
        "LiteLLMChatClient.build_request": {},
        "  cache cleared each request (baseline)": {},
        "ScriptedChatClient under the loop": {},
        "  whole-history estimate, as before (baseline)": {},
        "  FunctionChatClient under the loop (no checks)": {},
    }
    for n in SIZES:
        repeats = 5 if n <= 60 else 3
        names = list(rows)
        rows[names[0]][n] = _median(_litellm_run, n, repeats, cached=True)
        rows[names[1]][n] = _median(_litellm_run, n, 1 if n > 300 else 3, cached=False)
        rows[names[2]][n] = _median(_scripted_run, n, repeats, model_kind="scripted")
        rows[names[3]][n] = _median(_scripted_run, n, 1 if n > 300 else 3, model_kind="before")
        rows[names[4]][n] = _median(_scripted_run, n, repeats, model_kind="function")
    print("\nBelow the loop as the history grows: ms per request / round, median")
    print(f"  {'':<48}" + "".join(f"{n:>10}" for n in SIZES) + f"{'1000/10':>9}")
    for name, cells in rows.items():
        line = "".join(f"{cells[n] * 1000:10.4f}" for n in SIZES)
        print(f"  {name:<48}{line}{cells[SIZES[-1]] / cells[SIZES[0]]:9.2f}")
    names = list(rows)
    ratio = "".join(f"{rows[names[0]][n] / rows[names[1]][n]:10.4f}" for n in SIZES)
    print(f"  {'build_request / baseline':<48}{ratio}")
    ratio = "".join(f"{rows[names[2]][n] / rows[names[3]][n]:10.4f}" for n in SIZES)
    print(f"  {'ScriptedChatClient / as before':<48}{ratio}")
    own = "".join(f"{(rows[names[2]][n] - rows[names[4]][n]) * 1000:10.4f}" for n in SIZES)
    print(f"  {'ScriptedChatClient own ms a round (- Function)':<48}{own}")
