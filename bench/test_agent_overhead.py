"""Agents per round, in one run: loopkit's ``Agent`` beside the raw loop it drives (issue 10: goal
<= 1.2x) and beside pydantic-ai's and Microsoft Agent Framework's agents doing the same work,
plain, streamed and with a session.

The same script everywhere: an instant scripted model (each framework's own kind, its replies
built before the clock starts) calls one async tool a round for N rounds (60 and 1,000), then
answers with text. The tool, ``tool_00(x)``, only formats a string, so what is measured is each
framework's own work around the model and the tool. The models and their replies come from the
peer harness of ``bench/test_loop_overhead.py``.

- loopkit: the raw loop, ``FunctionInvokingChatClient(model).get_response(...)``; then
  ``Agent(model, instructions=..., tools=[t])`` built once per run: ``run``, ``run_stream``
  (every event consumed), ``run`` with an ``InMemorySession`` and with an ``SQLiteSession`` in a
  file (WAL, ``synchronous=NORMAL``; a new session id per run in one file), both fresh, both
  appended to after every step (N + 1 appends).
- pydantic-ai (``pydantic-ai-slim``): ``Agent(FunctionModel(...), instructions=..., tools=[t])``:
  ``run``, ``run_stream_events`` (every event consumed), and ``run`` with a ``Conversation``
  loaded from and saved to an ``InMemoryConversationStore`` (saved once, after the run).
- Agent Framework (``agent-framework-core``; its ``ChatAgent`` is named ``Agent`` since 1.0):
  ``Agent(client, instructions=..., tools=[t])`` over a scripted ``BaseChatClient`` with the
  layers of its shipped clients (chat middleware, function invocation, telemetry not configured):
  ``run``, ``run(stream=True)`` (every update consumed), and ``run`` with an ``AgentSession``
  (its default in-memory history provider, which stores the run's messages at its end).

Each run is checked: N + 1 model requests, the N tool results in order, the final text, and for
a session the messages it holds afterwards. Each way runs once on a 20-round script to warm up,
then up to 9 (60 rounds) or 5 (1,000 rounds) times, interleaved; a way stops repeating once its
timed runs add up to 20 s (pydantic-ai at 1,000 rounds: one run each, about 40 s). The test at
1,000 rounds takes about three minutes. Speed is printed, never asserted.
Run: ``.venv/bin/python -m pytest bench/test_agent_overhead.py -s -q`` (or ``.venv/bin/nox -s
bench``).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from test_loop_overhead import (  # the peer harness (bench/ is on sys.path under pytest)
    Call,
    PydanticAIScript,
    af_client_class,
    af_replies,
    af_results,
    loopkit_replies,
    make_tool,
    prebuilt,
    pydantic_ai_results,
)

FINAL_TEXT = "All done."
PROMPT = "Run the script."
INSTRUCTIONS = "Follow the script."
TOOL = "tool_00"
GOAL = 1.2  # Agent.run / raw loop
STREAM_GOAL = 1.3  # Agent.run_stream / Agent.run (issue 25)
WARM_UP = 20  # rounds of the warm-up run
BUDGET_S = 20.0  # seconds of timed runs per way, after which it stops repeating
PAIRS = 5  # raw loop / Agent.run pairs per repetition


def script(rounds: int) -> list[list[Call]]:
    """One call of the same tool a round."""
    return [[(f"call_{i}", TOOL, {"x": i})] for i in range(rounds)]


@dataclass
class Outcome:
    seconds: float
    results: list[str]
    requests: int
    text: str
    #: Messages the session holds after the run (None: no session).
    stored: int | None = None
    #: Messages the run added (what a session should hold).
    added: int | None = None


@dataclass
class Bench:
    """What a repetition's runs share: a folder for SQLite files and a counter for ids."""

    folder: Path
    runs: int = 0

    def session_id(self) -> str:
        self.runs += 1
        return f"bench-{self.runs}"


Runner = Callable[[int, Bench], Awaitable[Outcome]]
T = TypeVar("T")


async def clocked(work: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    """Seconds ``work()`` took, counted from the call (what a framework does before it returns
    its awaitable counts too), and its value."""
    start = time.perf_counter()
    value = await work()
    return time.perf_counter() - start, value


# --- loopkit ----------------------------------------------------------------------------------


def _loopkit_results(messages: list[Any]) -> list[str]:
    from loopkit import FunctionResultContent

    return [c.result for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


class LoopkitScript:
    """loopkit's scripted model for the agent rows: the replies of ``loopkit_model`` played in
    order, plain (the prebuilt ``ChatResponse``) or streamed (the prebuilt updates of that
    reply, one a message, as a provider that streams whole messages yields them). Both are
    built before the clock starts, as every framework's replies here are; ``.calls`` counts
    requests."""

    def __init__(self, rounds: list[list[Call]], final_text: str) -> None:
        from loopkit import ChatResponseUpdate

        self.replies = loopkit_replies(rounds, final_text)
        self.updates = [
            [ChatResponseUpdate(role=m.role, contents=list(m.contents)) for m in r.messages]
            for r in self.replies
        ]
        self.calls = 0

    async def get_response(self, messages: Any, options: Any = None) -> Any:
        reply = self.replies[self.calls]
        self.calls += 1
        return reply

    async def get_streaming_response(self, messages: Any, options: Any = None) -> Any:
        updates = self.updates[self.calls]
        self.calls += 1
        for update in updates:
            yield update


async def loopkit_raw_loop(rounds: int, bench: Bench) -> Outcome:
    from loopkit import (
        ChatMessage,
        ChatOptions,
        ChatRole,
        FunctionInvocationOptions,
        FunctionInvokingChatClient,
        FunctionTool,
    )

    model = LoopkitScript(script(rounds), FINAL_TEXT)
    loop = FunctionInvokingChatClient(model, FunctionInvocationOptions(max_rounds=rounds + 10))
    options = ChatOptions(tools=prebuilt([FunctionTool(make_tool(TOOL, sync=False))]))
    messages = [ChatMessage.from_text(ChatRole.USER, PROMPT)]
    elapsed, response = await clocked(lambda: loop.get_response(messages, options))
    return Outcome(elapsed, _loopkit_results(response.messages), model.calls, response.text)


def _loopkit_agent(rounds: int) -> tuple[Any, Any]:
    from loopkit import Agent, FunctionTool

    model = LoopkitScript(script(rounds), FINAL_TEXT)
    tools = prebuilt([FunctionTool(make_tool(TOOL, sync=False))])
    return model, Agent(model, instructions=INSTRUCTIONS, tools=tools, max_rounds=rounds + 10)


async def loopkit_run(rounds: int, bench: Bench) -> Outcome:
    model, agent = _loopkit_agent(rounds)
    elapsed, result = await clocked(lambda: agent.run(PROMPT))
    return Outcome(elapsed, _loopkit_results(result.new_messages), model.calls, result.output)


async def loopkit_run_stream(rounds: int, bench: Bench) -> Outcome:
    from loopkit import FinalResult

    model, agent = _loopkit_agent(rounds)

    async def consume() -> Any:
        final = None
        async for event in agent.run_stream(PROMPT):
            if isinstance(event, FinalResult):
                final = event.result
        assert final is not None, "no FinalResult event"
        return final

    elapsed, result = await clocked(consume)
    return Outcome(elapsed, _loopkit_results(result.new_messages), model.calls, result.output)


async def _loopkit_with(session: Any, rounds: int) -> Outcome:
    model, agent = _loopkit_agent(rounds)
    elapsed, result = await clocked(lambda: agent.run(PROMPT, session=session))
    stored = await session.get_messages()
    assert stored == result.new_messages, "the session does not hold what the run added"
    return Outcome(
        elapsed,
        _loopkit_results(result.new_messages),
        model.calls,
        result.output,
        stored=len(stored),
        added=len(result.new_messages),
    )


async def loopkit_in_memory_session(rounds: int, bench: Bench) -> Outcome:
    from loopkit import InMemorySession

    return await _loopkit_with(InMemorySession(bench.session_id()), rounds)


async def loopkit_sqlite_session(rounds: int, bench: Bench) -> Outcome:
    from loopkit import SQLiteSession

    async with SQLiteSession(bench.folder / "sessions.db", bench.session_id()) as session:
        return await _loopkit_with(session, rounds)


# --- pydantic-ai ------------------------------------------------------------------------------


def _pydantic_ai_agent(rounds: int) -> tuple[PydanticAIScript, Any, dict[str, Any]]:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.usage import UsageLimits

    model = PydanticAIScript(script(rounds), FINAL_TEXT)
    agent = Agent(
        model.model(),
        instructions=INSTRUCTIONS,
        tools=[Tool(make_tool(TOOL, sync=False), takes_ctx=False)],
    )
    # The default request limit (50) is below the script's N + 1 requests.
    limits = {"usage_limits": UsageLimits(request_limit=rounds + 10, tool_calls_limit=None)}
    return model, agent, limits


async def pydantic_ai_run(rounds: int, bench: Bench) -> Outcome:
    model, agent, limits = _pydantic_ai_agent(rounds)
    elapsed, result = await clocked(lambda: agent.run(PROMPT, **limits))
    return Outcome(
        elapsed, pydantic_ai_results(result.all_messages()), model.requests, str(result.output)
    )


async def pydantic_ai_run_stream(rounds: int, bench: Bench) -> Outcome:
    from pydantic_ai import AgentRunResultEvent

    model, agent, limits = _pydantic_ai_agent(rounds)

    async def consume() -> Any:
        final = None
        async with agent.run_stream_events(PROMPT, **limits) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    final = event.result
        assert final is not None, "no AgentRunResultEvent"
        return final

    elapsed, result = await clocked(consume)
    return Outcome(
        elapsed, pydantic_ai_results(result.all_messages()), model.requests, str(result.output)
    )


async def pydantic_ai_conversation_store(rounds: int, bench: Bench) -> Outcome:
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import InMemoryConversationStore

    model, agent, limits = _pydantic_ai_agent(rounds)
    store = InMemoryConversationStore()
    conversation_id = bench.session_id()

    async def run_and_save() -> Any:
        loaded = await store.load(conversation_id)
        conversation = loaded or Conversation(conversation_id=conversation_id)
        done = await agent.run(PROMPT, conversation=conversation, **limits)
        await store.save(done)
        return done

    elapsed, result = await clocked(run_and_save)
    loaded = await store.load(conversation_id)
    assert loaded is not None
    return Outcome(
        elapsed,
        pydantic_ai_results(result.all_messages()),
        model.requests,
        str(result.output),
        stored=len(loaded.messages),
        added=len(result.new_messages()),
    )


# --- Microsoft Agent Framework ----------------------------------------------------------------


def _af_agent(rounds: int) -> tuple[Any, Any]:
    from agent_framework import Agent, tool

    client = af_client_class(full_stack=True)(
        replies=af_replies(script(rounds), FINAL_TEXT),
        function_invocation_configuration={"max_iterations": rounds + 10},
    )
    agent = Agent(client, INSTRUCTIONS, tools=[tool(make_tool(TOOL, sync=False))])
    return client, agent


async def af_run(rounds: int, bench: Bench) -> Outcome:
    client, agent = _af_agent(rounds)
    elapsed, response = await clocked(lambda: agent.run(PROMPT))
    return Outcome(elapsed, af_results(response.messages), client.requests, response.text)


async def af_run_stream(rounds: int, bench: Bench) -> Outcome:
    client, agent = _af_agent(rounds)

    async def consume() -> Any:
        stream = agent.run(PROMPT, stream=True)
        async for _update in stream:
            pass
        return await stream.get_final_response()

    elapsed, response = await clocked(consume)
    return Outcome(elapsed, af_results(response.messages), client.requests, response.text)


async def af_session(rounds: int, bench: Bench) -> Outcome:
    client, agent = _af_agent(rounds)
    session = agent.create_session(session_id=bench.session_id())
    elapsed, response = await clocked(lambda: agent.run(PROMPT, session=session))
    stored = [m for provider in session.state.values() for m in provider.get("messages", [])]
    return Outcome(
        elapsed,
        af_results(response.messages),
        client.requests,
        response.text,
        stored=len(stored),
        added=len(response.messages) + 1,  # its messages and the user's input
    )


# --- the benchmark ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Way:
    framework: str
    kind: str  # "loop", "run", "stream", "session", "sqlite": rows of a kind are compared
    label: str
    run: Runner


WAYS = [
    Way("loopkit", "loop", "raw loop (FunctionInvokingChatClient)", loopkit_raw_loop),
    Way("loopkit", "run", "Agent.run", loopkit_run),
    Way("loopkit", "stream", "Agent.run_stream", loopkit_run_stream),
    Way("loopkit", "session", "Agent.run + InMemorySession", loopkit_in_memory_session),
    Way("loopkit", "sqlite", "Agent.run + SQLiteSession (file)", loopkit_sqlite_session),
    Way("pydantic-ai", "run", "Agent.run", pydantic_ai_run),
    Way("pydantic-ai", "stream", "Agent.run_stream_events", pydantic_ai_run_stream),
    Way(
        "pydantic-ai",
        "session",
        "Agent.run + InMemoryConversationStore",
        pydantic_ai_conversation_store,
    ),
    Way("agent-framework", "run", "Agent.run", af_run),
    Way("agent-framework", "stream", "Agent.run(stream=True)", af_run_stream),
    Way("agent-framework", "session", "Agent.run + AgentSession", af_session),
]


def _check(way: Way, rounds: int, outcome: Outcome) -> None:
    """A broken benchmark must fail: every framework really played the whole script."""
    name = f"{way.framework} {way.label}"
    assert outcome.requests == rounds + 1, f"{name}: {outcome.requests} model requests"
    expected = [f"{TOOL}:{i}" for i in range(rounds)]
    assert outcome.results == expected, f"{name}: wrong tool results"
    assert outcome.text == FINAL_TEXT, f"{name}: final text {outcome.text!r}"
    # user + (assistant with a call + tool result) a round + the final answer
    if outcome.stored is not None:
        assert outcome.stored == outcome.added == 2 * rounds + 2, (
            f"{name}: the session holds {outcome.stored} messages, the run added {outcome.added}"
        )


async def measure(rounds: int, repeats: int, ways: list[Way]) -> dict[Way, list[float]]:
    """Each way once on a short script to warm up (imports, schemas, caches), then ``repeats``
    times on the full one, interleaved; a way whose timed runs have taken BUDGET_S seconds
    stops early (pydantic-ai at 1,000 rounds: one run takes about 45 s). loopkit's raw loop,
    ``Agent.run`` and ``Agent.run_stream`` (milliseconds a run, and what the 1.2x and 1.3x
    goals compare) run PAIRS times in turn per repetition, so their ratios rest on many runs
    close in time."""
    times: dict[Way, list[float]] = {way: [] for way in ways}
    loop, agent, stream = (
        next((w for w in ways if w.framework == "loopkit" and w.kind == kind), None)
        for kind in ("loop", "run", "stream")
    )
    pair = [w for w in (loop, agent, stream) if w is not None]
    if loop is None or agent is None:
        pair = []

    async def timed(way: Way) -> None:
        gc.collect()
        outcome = await way.run(rounds, bench)
        _check(way, rounds, outcome)
        times[way].append(outcome.seconds)

    with tempfile.TemporaryDirectory(prefix="loopkit-agent-bench-") as folder:
        bench = Bench(Path(folder))
        for way in ways:
            _check(way, WARM_UP, await way.run(WARM_UP, bench))
        for _ in range(repeats):
            for way in ways:
                if way in pair:
                    if way is pair[0]:
                        for _ in range(PAIRS):
                            for each in pair:
                                await timed(each)
                elif sum(times[way]) < BUDGET_S:
                    await timed(way)
    return times


def report(rounds: int, repeats: int, times: dict[Way, list[float]]) -> dict[Way, float]:
    per_round = {way: statistics.median(t) / rounds * 1000 for way, t in times.items()}
    loopkit = {way.kind: per_round[way] for way in times if way.framework == "loopkit"}
    print(
        f"\nAgents: {rounds} rounds, one tool call a round, median of up to {repeats} runs "
        "(ms per round; 'x loopkit': this row / loopkit's row of the same kind)"
    )
    print(
        f"  {'framework':<16} {'way':<38} {'runs':>4} {'ms/round':>9} {'min':>8} {'max':>8} "
        f"{'x loopkit':>10}"
    )
    for way, t in times.items():
        lo, hi = min(t) / rounds * 1000, max(t) / rounds * 1000
        mine = per_round[way]
        ratio = f"{mine / loopkit[way.kind]:10.2f}" if way.kind in loopkit else ""
        print(
            f"  {way.framework:<16} {way.label:<38} {len(t):4d} {mine:9.4f} {lo:8.4f} {hi:8.4f} "
            f"{ratio}"
        )
    run, loop = loopkit.get("run"), loopkit.get("loop")
    if run is not None and loop is not None:
        # Also paired: each Agent.run over the raw loop run just before it, so a change in the
        # machine's load between repetitions cancels out.
        by_kind = {way.kind: t for way, t in times.items() if way.framework == "loopkit"}
        pairs = zip(by_kind["run"], by_kind["loop"], strict=True)
        paired = statistics.median([a / r for a, r in pairs])
        fastest = min(by_kind["run"]) / min(by_kind["loop"])
        print(
            f"  loopkit Agent.run / raw loop = {run / loop:.3f} (medians), {paired:.3f} "
            f"(median of paired runs), {fastest:.3f} (fastest runs)  (goal <= {GOAL})"
        )
    stream = loopkit.get("stream")
    if run is not None and stream is not None:
        by_kind = {way.kind: t for way, t in times.items() if way.framework == "loopkit"}
        if len(by_kind["stream"]) == len(by_kind["run"]):  # run in turn: paired
            pairs = zip(by_kind["stream"], by_kind["run"], strict=True)
            paired = f", {statistics.median([s / r for s, r in pairs]):.3f} (median of paired runs)"
        else:
            paired = ""
        fastest = min(by_kind["stream"]) / min(by_kind["run"])
        print(
            f"  loopkit Agent.run_stream / Agent.run = {stream / run:.3f} (medians){paired}, "
            f"{fastest:.3f} (fastest runs)  (goal <= {STREAM_GOAL})"
        )
    for kind in ("run", "stream", "session"):
        for way in times:
            if way.framework != "loopkit" and way.kind == kind and kind in loopkit:
                print(
                    f"  loopkit / {way.framework} {way.label}: "
                    f"{loopkit[kind] / per_round[way]:.3g} "
                    f"({per_round[way] / loopkit[kind]:.1f}x faster)"
                )
    return per_round


# At 1,000 rounds pydantic-ai's cost per round grows with the history (about 40 ms a round
# here): its rows get one run each (BUDGET_S), and the test about three minutes.
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("rounds", "repeats"), [(60, 9), (1000, 5)], ids=["60", "1000"])
def test_agents_per_round(rounds: int, repeats: int) -> None:
    times = asyncio.run(measure(rounds, repeats, WAYS))
    report(rounds, repeats, times)
