"""``CompactionChatClient``: keeps a long run's requests under the model's context window.

Placed below the function-invocation loop, it sees every round's request. When the estimated
input of a request would exceed a trigger, it forwards a compacted conversation instead (the
caller's list is never changed):

1. **Elide** old tool results: the body of a result older than the last ``keep_recent_steps``
   steps becomes a stub that says what was there and how to get it again (the tool, its
   arguments, the original size), oldest first, only as many as needed to reach the target.
2. **Summarise** (if still over): the oldest steps are replaced by one message written by a
   model ("Summary of the earlier conversation ..."); the system message(s), the task (the
   first user message) and the latest steps stay verbatim.

A step is an assistant message with its calls together with the tool message(s) answering them;
the conversation is cut only between steps, so a call never loses its result.

Prompt caches are prefix caches, so compaction happens in large, rare jumps: from above the
trigger down to a lower target (a low-water mark), and between two compactions the compacted
prefix is forwarded unchanged with the new messages appended verbatim. What was compacted is
remembered per run (:meth:`RunContext.state_for`), never on the instance: two concurrent runs
through one client are independent. Each compaction is reported as a ``compaction`` run event.

Token counts: the provider's reported input tokens of the previous request calibrate a
character-based estimate (about four characters a token, replaceable with ``estimator=``), so
the trigger follows what the provider really counts.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    UsageContent,
    UsageDetails,
)
from loopkit.errors import ProviderError
from loopkit.middleware.conversation_steps import (
    describe_call,
    elide,
    head_end,
    result_stub,
    steps,
    transcript,
)
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.token_estimate import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    TokenEstimator,
    estimate_tokens,
)
from loopkit.run_context import RunContext, current_run

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "CompactionChatClient",
    "CompactionOptions",
    "TokenEstimator",
    "describe_call",
    "estimate_tokens",
]

#: A provider figure this far from the estimate (either way) is not taken as the request's
#: real count (a test double reporting a fixed usage, a provider counting something else).
_MAX_SCALE = 5.0
#: In the transcript given to the summariser, each tool result is cut to this many characters
#: (then, if the transcript is still too long, to the second figure).
_TRANSCRIPT_RESULT_CHARS = (1000, 200)

DEFAULT_SUMMARY_PROMPT = (
    "You condense the working history of an AI agent so that it can continue its task with "
    "less context. Below is the older part of its conversation (and possibly an earlier "
    "summary). Write a summary that the agent will read instead of it: what it did and found "
    "(files, names, values, decisions, errors and how they were resolved), what is still to "
    "be done, and every instruction or constraint the user gave. Keep names, paths and numbers "
    "exact. Do not invent anything and do not address the user. Plain text, as short as "
    "completeness allows."
)


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """When and how far :class:`CompactionChatClient` compacts.

    Give the model's input window as ``max_input_tokens`` (compaction starts above ``trigger``
    of it and goes down to ``target`` of it), or explicit ``trigger_tokens`` (and optionally
    ``target_tokens``, default five eighths of the trigger).
    """

    #: The model's context window for input, in tokens (None: give ``trigger_tokens``).
    max_input_tokens: int | None = None
    #: Compact before a request estimated above this fraction of ``max_input_tokens``.
    trigger: float = 0.8
    #: ...down to this fraction (the low-water mark: a large jump now, none for a while).
    target: float = 0.5
    #: Explicit trigger in tokens (overrides ``trigger``).
    trigger_tokens: int | None = None
    #: Explicit target in tokens (overrides ``target``).
    target_tokens: int | None = None
    #: The latest steps (assistant message with its calls + their results) kept verbatim.
    keep_recent_steps: int = 4
    #: Results shorter than this many characters are not worth a stub and stay.
    min_elide_chars: int = 400
    #: Summarise the oldest steps with a model when eliding is not enough (False: never call
    #: a model; the conversation may then stay above the target).
    summarize: bool = True
    #: ``max_output_tokens`` of the summary request (also what the plan reserves for it).
    summary_max_tokens: int = 1000
    #: The summariser's instructions.
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT

    def __post_init__(self) -> None:
        if self.max_input_tokens is None and self.trigger_tokens is None:
            raise ValueError(
                "compaction needs max_input_tokens (the model's input window, e.g. 200000) or "
                "trigger_tokens (compact above this many input tokens); got neither"
            )
        for name in ("max_input_tokens", "trigger_tokens", "target_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive number of tokens, got {value!r}")
        if not 0 < self.target < self.trigger <= 1:
            raise ValueError(
                f"expected 0 < target < trigger <= 1 (fractions of max_input_tokens), got "
                f"target={self.target!r}, trigger={self.trigger!r}"
            )
        if self.target_at >= self.trigger_at:
            raise ValueError(
                f"target_tokens ({self.target_at:,}) must be below trigger_tokens "
                f"({self.trigger_at:,})"
            )
        if self.max_input_tokens is not None and self.trigger_at > self.max_input_tokens:
            raise ValueError(
                f"trigger_tokens ({self.trigger_at:,}) must not exceed max_input_tokens "
                f"({self.max_input_tokens:,})"
            )
        if self.keep_recent_steps < 1:
            raise ValueError(f"keep_recent_steps must be >= 1, got {self.keep_recent_steps}")
        if self.min_elide_chars < 0:
            raise ValueError(f"min_elide_chars must be >= 0, got {self.min_elide_chars}")
        if self.summary_max_tokens < 16:
            raise ValueError(f"summary_max_tokens must be >= 16, got {self.summary_max_tokens}")

    @property
    def trigger_at(self) -> int:
        """The trigger in tokens."""
        if self.trigger_tokens is not None:
            return self.trigger_tokens
        assert self.max_input_tokens is not None  # checked in __post_init__
        return int(self.max_input_tokens * self.trigger)

    @property
    def target_at(self) -> int:
        """The target (low-water mark) in tokens."""
        if self.target_tokens is not None:
            return self.target_tokens
        if self.max_input_tokens is not None and self.trigger_tokens is None:
            return int(self.max_input_tokens * self.target)
        return int(self.trigger_at * self.target / self.trigger)


@dataclass(slots=True)
class _Elision:
    stub: str
    saving: int  # estimate units


@dataclass(slots=True)
class _RunState:
    """What one run's conversation looks like to this middleware (see the module docstring)."""

    seen: list[ChatMessage] = field(default_factory=list)  # the caller's messages so far
    costs: list[int] = field(default_factory=list)  # estimate of each
    total: int = 0
    prefix: list[ChatMessage] = field(default_factory=list)  # forwarded form of seen[:covered]
    covered: int = 0
    covered_cost: int = 0
    prefix_cost: int = 0
    elided: dict[tuple[int, int], _Elision] = field(default_factory=dict)  # (message, content)
    summary: ChatMessage | None = None
    summary_text: str = ""  # what the summariser wrote (the message adds a header)
    summary_end: int = 0  # seen[head:summary_end] are summarised
    next_trigger: int | None = None
    tools_key: tuple[int, int] | None = None
    tools_cost: int = 0
    sent_units: int | None = None  # estimate of the last request forwarded
    scale: float = 1.0  # provider tokens per estimate unit, from the last reported usage
    compactions: int = 0

    def reset(self) -> None:
        """Forget the conversation (a new one started in this run); keep the calibration."""
        fresh = _RunState(scale=self.scale)
        for name in self.__slots__:
            setattr(self, name, getattr(fresh, name))


@dataclass(slots=True)
class _Plan:
    elided: dict[tuple[int, int], _Elision]
    new_elided: int
    summary_end: int  # where the verbatim part resumes
    new_summary: bool
    units: float


class CompactionChatClient(DelegatingChatClient):
    """Compacts each request's conversation when it would exceed the trigger (see module).

    ``summarizer`` writes the summaries (default: the inner client, so the token budget and the
    run log below see those requests too). ``estimator`` replaces the character-based token
    estimate. Outside a run (no :func:`~loopkit.run_context.current_run`), each request is
    compacted on its own, without memory.
    """

    def __init__(
        self,
        inner: ChatClient,
        options: CompactionOptions,
        *,
        summarizer: ChatClient | None = None,
        estimator: TokenEstimator | None = None,
    ) -> None:
        super().__init__(inner)
        if not isinstance(options, CompactionOptions):
            raise TypeError(
                "options must be a CompactionOptions, e.g. CompactionOptions(max_input_tokens="
                f"200_000); got {type(options).__name__}"
            )
        self.options = options
        self.summarizer = summarizer
        self.estimator: TokenEstimator = estimator or estimate_tokens

    # -- ChatClient ---------------------------------------------------------------------------
    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        run = current_run()
        state = run.state_for(self, _RunState) if run is not None else _RunState()
        forwarded = await self._prepare(state, run, messages, options)
        response = await self.inner.get_response(forwarded, options)
        self._observe(state, response.usage)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        run = current_run()
        state = run.state_for(self, _RunState) if run is not None else _RunState()
        forwarded = await self._prepare(state, run, messages, options)
        usage: UsageDetails | None = None
        async for update in self.inner.get_streaming_response(forwarded, options):
            for c in update.contents:
                if isinstance(c, UsageContent):
                    usage = c.usage if usage is None else usage + c.usage
            yield update
        self._observe(state, usage)

    # -- per request --------------------------------------------------------------------------
    def _observe(self, state: _RunState, usage: UsageDetails | None) -> None:
        """Calibrate the estimate with what the provider counted for the request just sent."""
        if usage is None or usage.input_tokens <= 0 or not state.sent_units:
            return
        scale = usage.input_tokens / state.sent_units
        if 1 / _MAX_SCALE <= scale <= _MAX_SCALE:
            state.scale = scale

    def _sync(self, state: _RunState, messages: Sequence[ChatMessage]) -> None:
        """Extend the state with the messages added since the last request. Within a run each
        request's conversation extends the previous one (the loop appends); if it does not (its
        first or last known message is not the same object), the state starts over."""
        n = len(state.seen)
        if n and (
            len(messages) < n
            or messages[0] is not state.seen[0]
            or messages[n - 1] is not state.seen[n - 1]
            or (state.covered and messages[state.covered - 1] is not state.seen[state.covered - 1])
        ):
            state.reset()
        for message in messages[len(state.seen) :]:
            cost = self.estimator([message])
            state.seen.append(message)
            state.costs.append(cost)
            state.total += cost

    def _tools(self, state: _RunState, options: ChatOptions | None) -> int:
        if options is None or not options.tools:
            return 0
        key = (id(options.tools), len(options.tools))
        if key != state.tools_key:
            state.tools_key, state.tools_cost = key, self.estimator([], options)
        return state.tools_cost

    async def _prepare(
        self,
        state: _RunState,
        run: RunContext | None,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
    ) -> Sequence[ChatMessage]:
        self._sync(state, messages)
        tools = self._tools(state, options)
        units = state.prefix_cost + (state.total - state.covered_cost) + tools
        tokens = round(units * state.scale)
        trigger = state.next_trigger or self.options.trigger_at
        if tokens > trigger:
            units = await self._compact(state, run, messages, tools, tokens, options)
        state.sent_units = units
        if not state.covered:
            return messages
        return [*state.prefix, *messages[state.covered :]]

    # -- compaction ---------------------------------------------------------------------------
    async def _compact(
        self,
        state: _RunState,
        run: RunContext | None,
        messages: Sequence[ChatMessage],
        tools: int,
        tokens_before: int,
        options: ChatOptions | None,
    ) -> int:
        opts = self.options
        head = head_end(messages)
        groups = steps(messages, max(head, state.summary_end))
        target = opts.target_at / state.scale
        keep = opts.keep_recent_steps
        pinned = _pinned(messages, head)
        plan = self._plan(
            state, messages, head, groups, tools, target, keep, opts.summarize, pinned
        )
        window = opts.max_input_tokens
        if window is not None and plan.units * state.scale > window and keep > 1:
            # Keeping the latest steps verbatim would not fit at all: keep only the last one.
            keep = 1
            plan = self._plan(
                state, messages, head, groups, tools, target, keep, opts.summarize, pinned
            )
        summary, summary_text = state.summary, state.summary_text
        summary_error: str | None = None
        summary_usage: UsageDetails | None = None
        if plan.new_summary:
            try:
                summary, summary_text, summary_usage = await self._summarise(
                    state, messages, head, plan, options
                )
            except ProviderError as e:
                # The run goes on with what eliding achieves; the next compaction tries again.
                from loopkit.providers.litellm_errors import redact

                summary_error = redact(str(e))[:600]
                plan = self._plan(state, messages, head, groups, tools, target, keep, False, pinned)
        if not plan.new_elided and not plan.new_summary:
            # Nothing left to compact (everything old is compacted already): look again only
            # after the conversation has grown by a quarter of the trigger-target gap.
            state.next_trigger = tokens_before + max(1, (opts.trigger_at - opts.target_at) // 4)
            if summary_error is not None and run is not None:
                self._emit(run, tokens_before, tokens_before, plan, 0, summary_error, None)
            return state.prefix_cost + (state.total - state.covered_cost) + tools
        old_end = state.summary_end if state.summary is not None else head
        summarised = 0
        if plan.new_summary:
            summarised = sum(i not in pinned for i in range(old_end, plan.summary_end))
        self._install(state, messages, head, plan, summary, pinned)
        state.summary_text = summary_text
        units = state.prefix_cost + tools
        tokens_after = round(units * state.scale)
        gap = opts.trigger_at - opts.target_at
        if tokens_after <= opts.target_at:
            state.next_trigger = opts.trigger_at
        else:
            # Could not reach the target: wait for the same growth before the next jump.
            state.next_trigger = max(opts.trigger_at, tokens_after + gap)
            if window is not None:
                state.next_trigger = min(state.next_trigger, window)
        state.compactions += 1
        if run is not None:
            if summary_usage is not None:
                run.usage = run.usage + summary_usage
            self._emit(
                run, tokens_before, tokens_after, plan, summarised, summary_error, summary_usage
            )
        return units

    def _emit(
        self,
        run: RunContext,
        tokens_before: int,
        tokens_after: int,
        plan: _Plan,
        summarised: int,
        summary_error: str | None,
        summary_usage: UsageDetails | None,
    ) -> None:
        strategy = "+".join(
            s for s, on in (("elide", plan.new_elided), ("summary", plan.new_summary)) if on
        )
        data: dict[str, Any] = {
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "elided_results": plan.new_elided,
            "summarised_messages": summarised,
            "strategy": strategy or "none",
            "trigger_tokens": self.options.trigger_at,
            "target_tokens": self.options.target_at,
        }
        if summary_usage is not None:
            data["summary_input_tokens"] = summary_usage.input_tokens
            data["summary_output_tokens"] = summary_usage.output_tokens
        if summary_error is not None:
            data["summary_error"] = summary_error
        run.emit("compaction", **data)

    def _plan(
        self,
        state: _RunState,
        messages: Sequence[ChatMessage],
        head: int,
        groups: list[tuple[int, int]],
        tools: int,
        target: float,
        keep: int,
        summarize: bool,
        pinned: frozenset[int],
    ) -> _Plan:
        """Which results to elide and how far to summarise, in estimate units (no model call)."""
        opts = self.options
        costs = state.costs
        start = max(head, state.summary_end)
        movable = groups[: max(0, len(groups) - keep)]
        old_saving = [0] * len(groups)
        starts = [s for s, _ in groups]
        for (i, _), e in state.elided.items():
            k = bisect.bisect_right(starts, i) - 1
            if k >= 0:
                old_saving[k] += e.saving
        current = [sum(costs[s:e]) - old_saving[k] for k, (s, e) in enumerate(groups)]
        fixed = sum(costs[:head]) + tools + _pinned_cost(pinned, costs, head, start)
        if state.summary is not None:
            fixed += self.estimator([state.summary])
        candidates = [self._eligible(messages, g, state.elided) for g in movable]

        def elide_from(first: int, total: float) -> tuple[dict[tuple[int, int], _Elision], float]:
            new: dict[tuple[int, int], _Elision] = {}
            for found in candidates[first:]:
                for key, elision in found:
                    if total <= target:
                        return new, total
                    new[key] = elision
                    total -= elision.saving
            return new, total

        new, total = elide_from(0, fixed + sum(current))
        plain = _Plan({**state.elided, **new}, len(new), state.summary_end, False, total)
        if total <= target or not summarize or not movable:
            return plain
        # Summarise the fewest oldest steps that, with the rest elided as far as allowed,
        # reach the target; then elide only as much as still needed.
        summary_units = opts.summary_max_tokens / state.scale + MESSAGE_OVERHEAD + 30
        most = [current[k] - sum(e.saving for _, e in candidates[k]) for k in range(len(movable))]
        rest = sum(current[len(movable) :])
        base = sum(costs[:head]) + tools + _pinned_cost(pinned, costs, head, start)
        n = len(movable)
        tail = sum(most)
        for count in range(1, len(movable) + 1):
            tail -= most[count - 1]
            verbatim = _pinned_cost(pinned, costs, start, movable[count - 1][1])
            if base + verbatim + summary_units + tail + rest <= target:
                n = count
                break
        end = movable[n - 1][1]
        with_summary = base + _pinned_cost(pinned, costs, start, end) + summary_units
        new, total = elide_from(n, with_summary + sum(current[n:]))
        kept = {k: e for k, e in state.elided.items() if k[0] >= end}
        return _Plan({**kept, **new}, len(new), end, True, total)

    def _eligible(
        self,
        messages: Sequence[ChatMessage],
        group: tuple[int, int],
        elided: dict[tuple[int, int], _Elision],
    ) -> list[tuple[tuple[int, int], _Elision]]:
        """The results of one step worth eliding, in order, with their stubs and savings."""
        calls = {
            c.call_id: c
            for m in messages[group[0] : group[1]]
            for c in m.contents
            if isinstance(c, FunctionCallContent)
        }
        found = []
        for i in range(*group):
            for j, c in enumerate(messages[i].contents):
                if (
                    not isinstance(c, FunctionResultContent)
                    or (i, j) in elided
                    or len(c.result) < self.options.min_elide_chars
                ):
                    continue
                stub = result_stub(calls.get(c.call_id), c)
                saving = self.estimator([_tool_message(c)]) - self.estimator(
                    [_tool_message(c.model_copy(update={"result": stub}))]
                )
                if saving > 0:
                    found.append(((i, j), _Elision(stub, saving)))
        return found

    async def _summarise(
        self,
        state: _RunState,
        messages: Sequence[ChatMessage],
        head: int,
        plan: _Plan,
        options: ChatOptions | None,
    ) -> tuple[ChatMessage, str, UsageDetails | None]:
        opts = self.options
        previous = state.summary_text or None
        part = [
            m
            for m in messages[max(head, state.summary_end) : plan.summary_end]
            if m.role != ChatRole.SYSTEM
        ]
        # The summariser's request must fit its window too: about the target's size at most.
        limit = opts.target_at * CHARS_PER_TOKEN
        history = transcript(previous, part, _TRANSCRIPT_RESULT_CHARS[0])
        if len(history) > limit:
            history = transcript(previous, part, _TRANSCRIPT_RESULT_CHARS[1])
        if len(history) > limit:
            # Cut the oldest messages, never the earlier summary: it holds all that came before.
            earlier = transcript(previous, [], 0)[: limit // 2]
            rest = transcript(None, part, _TRANSCRIPT_RESULT_CHARS[1])
            room = max(0, limit - len(earlier))
            history = (earlier + "\n\n" if earlier else "") + (
                "[the beginning is omitted]\n" + rest[-room:]
            )
        request = [
            ChatMessage.from_text(ChatRole.SYSTEM, opts.summary_prompt),
            ChatMessage.from_text(ChatRole.USER, history),
        ]
        summary_options = ChatOptions(max_output_tokens=opts.summary_max_tokens)
        if self.summarizer is None and options is not None and options.model_id:
            # The inner client answers with the run's model, as it does for the run's requests.
            summary_options.model_id = options.model_id
        client = self.summarizer or self.inner
        response = await client.get_response(request, summary_options)
        text = response.text.strip()
        if not text:
            raise ProviderError(
                "the summariser answered with no text", retryable=False, provider="compaction"
            )
        message = ChatMessage.from_text(
            ChatRole.USER,
            "Summary of the earlier conversation (condensed to save space; the task above and "
            f"the latest steps are verbatim):\n{text}",
        )
        return message, text, response.usage

    def _install(
        self,
        state: _RunState,
        messages: Sequence[ChatMessage],
        head: int,
        plan: _Plan,
        summary: ChatMessage | None,
        pinned: frozenset[int],
    ) -> None:
        """Build the compacted prefix the next requests of this run start with."""
        prefix: list[ChatMessage] = list(messages[:head])
        cost = sum(state.costs[:head])
        if summary is not None:
            for i in range(head, plan.summary_end):
                if i in pinned:
                    prefix.append(messages[i])
                    cost += state.costs[i]
            prefix.append(summary)
            cost += self.estimator([summary])
        by_message: dict[int, dict[int, str]] = {}
        for (i, j), e in plan.elided.items():
            by_message.setdefault(i, {})[j] = e.stub
        for i in range(max(head, plan.summary_end), len(messages)):
            stubs = by_message.get(i)
            if stubs is None:
                prefix.append(messages[i])
                cost += state.costs[i]
                continue
            elided = elide(messages[i], stubs)
            prefix.append(elided)
            cost += self.estimator([elided])
        state.prefix, state.prefix_cost = prefix, cost
        state.covered, state.covered_cost = len(messages), state.total
        state.elided, state.summary, state.summary_end = plan.elided, summary, plan.summary_end

    def __repr__(self) -> str:
        return f"CompactionChatClient({self.inner!r}, trigger_tokens={self.options.trigger_at})"


def _tool_message(result: FunctionResultContent) -> ChatMessage:
    return ChatMessage(role=ChatRole.TOOL, contents=[result])


def _pinned(messages: Sequence[ChatMessage], head: int) -> frozenset[int]:
    """The messages after the head that stay verbatim even in a summarised range (placed before
    the summary): system messages, and the latest user message (the current request of a
    continued session)."""
    pinned = {i for i in range(head, len(messages)) if messages[i].role == ChatRole.SYSTEM}
    last_user = next(
        (i for i in range(len(messages) - 1, head - 1, -1) if messages[i].role == ChatRole.USER),
        None,
    )
    if last_user is not None:
        pinned.add(last_user)
    return frozenset(pinned)


def _pinned_cost(pinned: frozenset[int], costs: list[int], start: int, end: int) -> int:
    return sum(costs[i] for i in pinned if start <= i < end)
