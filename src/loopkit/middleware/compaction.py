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
3. **Drop** (last resort, when no summary was made, ``summarize=False`` or the summariser
   failed, and the request would still exceed the limit: ``max_input_tokens``, else the
   trigger): the oldest steps are replaced by a note saying how many were removed.

A request that is still above the limit after all three (the parts compaction never touches
are that large) goes out as it is, and the ``compaction`` event (``over_limit``) and a
:class:`CompactionWarning` say why and what to change.

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
import warnings
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
from loopkit.middleware.compaction_options import (
    DEFAULT_SUMMARY_PROMPT,
    CompactionOptions,
    CompactionWarning,
)
from loopkit.middleware.compaction_summary import drop_note, summarise
from loopkit.middleware.conversation_steps import (
    describe_call,
    elide,
    head_end,
    pinned_cost,
    pinned_messages,
    result_stub,
    steps,
)
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.token_estimate import (
    MESSAGE_OVERHEAD,
    TokenEstimator,
    estimate_tokens,
)
from loopkit.run_context import RunContext, current_run

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "CompactionChatClient",
    "CompactionOptions",
    "CompactionWarning",
    "TokenEstimator",
    "describe_call",
    "estimate_tokens",
]

#: A provider figure this far from the estimate (either way) is not taken as the request's
#: real count (a test double reporting a fixed usage, a provider counting something else).
_MAX_SCALE = 5.0
#: The ``replacement`` of a plan that drops the oldest steps (a note costs what it costs).
_DROP = 0.0


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
    dropped_steps: int = 0  # steps dropped so far (drop_oldest), for the note in their place
    over_limit: bool = False  # the last request went out above the limit (reported once)
    warned: bool = False  # a CompactionWarning was given in this run

    def reset(self) -> None:
        """Forget the conversation (a new one started in this run); keep the calibration."""
        fresh = _RunState(scale=self.scale, warned=self.warned)
        for name in self.__slots__:
            setattr(self, name, getattr(fresh, name))


@dataclass(slots=True)
class _Plan:
    elided: dict[tuple[int, int], _Elision]
    new_elided: int
    summary_end: int  # where the verbatim part resumes
    new_summary: bool  # the oldest steps up to summary_end are replaced (summary or drop note)
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
        _check_below_the_loop(inner)
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
        pinned = pinned_messages(messages, head)

        def plan_for(replacement: float | None) -> _Plan:
            # Keep the latest steps verbatim unless that alone would not fit: then only the last.
            args = (state, messages, head, groups, tools, opts.target_at / state.scale)
            plan = self._plan(*args, opts.keep_recent_steps, replacement, pinned)
            over = plan.units * state.scale > opts.limit_at
            if over and opts.keep_recent_steps > 1:
                plan = self._plan(*args, 1, replacement, pinned)
            return plan

        summary_units = opts.summary_max_tokens / state.scale + MESSAGE_OVERHEAD + 30
        plan = plan_for(summary_units if opts.summarize else None)
        summary, summary_text = state.summary, state.summary_text
        summary_error: str | None = None
        summary_usage: UsageDetails | None = None
        if plan.new_summary:
            try:
                summary, summary_text, summary_usage = await self._summarise(
                    state, messages, head, plan, options
                )
            except ProviderError as e:
                # The run goes on with what eliding (or dropping) achieves; the next
                # compaction tries again.
                from loopkit.providers.litellm_errors import redact

                summary_error = redact(str(e))[:600]
                plan = plan_for(None)
        dropped = 0
        if not plan.new_summary and opts.drop_oldest and plan.units * state.scale > opts.limit_at:
            # Eliding could not do it and no summary was made: the oldest steps go, a note in
            # their place (a model call-free summary).
            drop = plan_for(_DROP)
            if drop.new_summary:
                plan = drop
                dropped = sum(1 for _, end in groups if end <= plan.summary_end)
                state.dropped_steps += dropped
                summary = drop_note(state.dropped_steps, state.summary_text)
        if not plan.new_elided and not plan.new_summary:
            # Nothing left to compact (everything old is compacted already): look again only
            # after the conversation has grown by a quarter of the trigger-target gap (but
            # never let a request above the limit pass unlooked at).
            gap = max(1, (opts.trigger_at - opts.target_at) // 4)
            state.next_trigger = min(tokens_before + gap, max(opts.limit_at, opts.trigger_at))
            over = self._over_limit(state, tokens_before)
            if (summary_error is not None or over is not None) and run is not None:
                self._emit(run, tokens_before, tokens_before, plan, 0, 0, summary_error, None, over)
            return state.prefix_cost + (state.total - state.covered_cost) + tools
        old_end = state.summary_end if state.summary is not None else head
        replaced = 0
        if plan.new_summary:
            replaced = sum(i not in pinned for i in range(old_end, plan.summary_end))
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
            state.next_trigger = min(state.next_trigger, max(opts.limit_at, opts.trigger_at))
        state.compactions += 1
        over = self._over_limit(state, tokens_after)
        if run is not None:
            if summary_usage is not None:
                run.usage = run.usage + summary_usage
            summarised = 0 if dropped else replaced
            self._emit(
                run,
                tokens_before,
                tokens_after,
                plan,
                summarised,
                replaced if dropped else 0,
                summary_error,
                summary_usage,
                over,
            )
        return units

    def _over_limit(self, state: _RunState, tokens: int) -> str | None:
        """Why a request of ``tokens`` goes out above the limit, the first time in a row it
        does (a warning too, once a run); None when it fits or was reported already."""
        if tokens <= self.options.limit_at:
            state.over_limit = False
            return None
        if state.over_limit:
            return None
        state.over_limit = True
        reason = self.options.over_limit_reason(tokens)
        if not state.warned:
            state.warned = True
            warnings.warn(f"compaction: {reason}", CompactionWarning, stacklevel=4)
        return reason

    def _emit(
        self,
        run: RunContext,
        tokens_before: int,
        tokens_after: int,
        plan: _Plan,
        summarised: int,
        dropped: int,
        summary_error: str | None,
        summary_usage: UsageDetails | None,
        over_limit: str | None,
    ) -> None:
        strategy = "+".join(
            s
            for s, on in (
                ("elide", plan.new_elided),
                ("summary", plan.new_summary and not dropped),
                ("drop", dropped),
            )
            if on
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
        if dropped:
            data["dropped_messages"] = dropped
        if over_limit is not None:
            data["over_limit"] = over_limit
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
        replacement: float | None,
        pinned: frozenset[int],
    ) -> _Plan:
        """Which results to elide and how far to replace the oldest steps with one message of
        ``replacement`` units (a summary, a note for dropped steps; None: never), in estimate
        units (no model call)."""
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
        fixed = sum(costs[:head]) + tools + pinned_cost(pinned, costs, head, start)
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
        if total <= target or replacement is None or not movable:
            return plain
        # Replace the fewest oldest steps that, with the rest elided as far as allowed, reach
        # the target; then elide only as much as still needed.
        summary_units = self._drop_units(state) if replacement == _DROP else replacement
        most = [current[k] - sum(e.saving for _, e in candidates[k]) for k in range(len(movable))]
        rest = sum(current[len(movable) :])
        base = sum(costs[:head]) + tools + pinned_cost(pinned, costs, head, start)
        n = len(movable)
        tail = sum(most)
        for count in range(1, len(movable) + 1):
            tail -= most[count - 1]
            verbatim = pinned_cost(pinned, costs, start, movable[count - 1][1])
            if base + verbatim + summary_units + tail + rest <= target:
                n = count
                break
        end = movable[n - 1][1]
        with_summary = base + pinned_cost(pinned, costs, start, end) + summary_units
        new, total = elide_from(n, with_summary + sum(current[n:]))
        kept = {k: e for k, e in state.elided.items() if k[0] >= end}
        return _Plan({**kept, **new}, len(new), end, True, total)

    def _drop_units(self, state: _RunState) -> float:
        """What the note for dropped steps costs at most (an upper bound of its count)."""
        return float(self.estimator([drop_note(10**6, state.summary_text)]))

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
        part = [
            m
            for m in messages[max(head, state.summary_end) : plan.summary_end]
            if m.role != ChatRole.SYSTEM
        ]
        # The inner client answers with the run's model, as it does for the run's requests.
        model_id = options.model_id if self.summarizer is None and options is not None else None
        client = self.summarizer or self.inner
        return await summarise(client, self.options, state.summary_text or None, part, model_id)

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


def _check_below_the_loop(inner: ChatClient) -> None:
    """Compaction above the function-invocation loop would see only the first request of each
    run (the loop makes the others below it): refuse that order."""
    from loopkit.middleware.function_invocation import FunctionInvokingChatClient

    client: object = inner
    while client is not None:
        if isinstance(client, FunctionInvokingChatClient):
            raise ValueError(
                "CompactionChatClient wraps a function-invocation loop, so it would see only "
                "the first request of each run: put it below the loop (in a builder, "
                "use_compaction() after use_function_invocation(); with an Agent, in its model "
                "or middleware)"
            )
        client = getattr(client, "inner", None)


def _tool_message(result: FunctionResultContent) -> ChatMessage:
    return ChatMessage(role=ChatRole.TOOL, contents=[result])
