"""``CardRunner``: one card, one agent run, one RESULT.

The runner is a thin user of :class:`~loopkit.agents.Agent`: for each card it opens the tool
sources (MCP servers, local tools), builds an agent from the role's instructions, the sources'
tools and the limits (rounds, the token budget, output tokens per request) over the model, with
the run log as middleware and retries when given, runs it on the card, and maps every way the
run can end to a card state: ``Done`` only for a ``RESULT: done`` reached within the limits;
``Failed`` with a reason for everything else (a ``RESULT: failed``, a missing RESULT line, the
round limit, the token budget, a provider or tool-server failure, an interrupted run).

The run log gets the agent run's lines (``start``, ``round``, ``tool``, and run events such as
``retry``), each with the run's ``run_id``, and ends with the runner's own ``result`` line (the
RESULT, the card's new state, the run's totals) in the same run, in place of the agent's
``run_end``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AsyncExitStack, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from loopkit.abstractions.chat import ChatClient, ChatOptions
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.abstractions.tools import Tool
from loopkit.agents.agent import Agent
from loopkit.agents.result import AgentRunResult
from loopkit.builder import ChatClientBuilder
from loopkit.cards.card import Card, CardState
from loopkit.cards.criteria import criteria_section
from loopkit.cards.result import RunResult, cited_rules, parse_result
from loopkit.cards.verification import Verification
from loopkit.errors import BudgetExceededError, LoopkitError
from loopkit.mcp.config import MCPServerConfig
from loopkit.middleware.function_invocation import Approver
from loopkit.middleware.retry import RetryPolicy
from loopkit.middleware.run_log import RunLog, RunLogChatClient
from loopkit.middleware.tool_disclosure import ToolDisclosure
from loopkit.run_context import RunContext, RunEvent, run_scope

if TYPE_CHECKING:
    from loopkit.mcp.waiting_server import WaitingPythonServer


@runtime_checkable
class ToolSource(Protocol):
    """Something that provides tools for the length of a run: enter it, read ``tools``, exit it."""

    tools: list[Tool]

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> Any: ...


class MCPToolSource:
    """The tools of one MCP server as a :class:`ToolSource`."""

    def __init__(
        self, config: MCPServerConfig, *, prestarted: WaitingPythonServer | None = None
    ) -> None:
        self.config = config
        self.prestarted = prestarted  # a server started earlier for this command, if any
        self.tools: list[Tool] = []
        self._client: Any = None

    async def __aenter__(self) -> MCPToolSource:
        self._client = self.config.connect(prestarted=self.prestarted)
        await self._client.__aenter__()
        try:
            self.tools = list(await self._client.list_tools())
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.__aexit__(None, None, None)


@dataclass(slots=True)
class RunLimits:
    """The limits that end a run that does not stop on its own (the CardRunner article's)."""

    max_rounds: int = 60
    max_tokens: int = 400_000
    max_output_tokens: int = 4096

    def as_dict(self) -> dict[str, int]:
        """The limits as the run log's ``start`` line shows them."""
        return {
            "max_rounds": self.max_rounds,
            "max_tokens": self.max_tokens,
            "max_output_tokens": self.max_output_tokens,
        }


@dataclass(slots=True)
class CardRunOutcome:
    """What a card run produced."""

    result: RunResult
    card: Card | None
    #: The agent run's result (its messages, usage, rounds), when the run ended with an answer.
    run: AgentRunResult[str] | None = None
    #: The run's id, as in every line of the run log (None when the run never started: a tool
    #: source that could not be opened).
    run_id: str | None = None
    totals: dict[str, Any] = field(default_factory=dict)
    #: The run's evidence and replay, when its role verifies (:mod:`loopkit.cards.verification`).
    verification: Verification | None = None


CARD_PREFIX = "THE CARD\n--------\n"
#: Before a message from the user that comes with the card (``python -m loopkit.demo --message``).
MESSAGE_PREFIX = "\n\nA MESSAGE FROM THE USER\n-----------------------\n"


class CardRunner:
    """Runs one card with ``model`` and the tools of ``sources``, writing ``log``.

    ``model`` is the bare provider client. Each run is an :class:`~loopkit.agents.Agent` run
    (see :meth:`agent`): the agent's loop over the run log, the token budget and (when ``retry``
    is given) retries around the model; ``instructions`` are its system message and the card is
    the user's message (followed by ``message``, when given). ``disclosure``: offer the model
    only its core tools and ``load_tools`` for the rest
    (:class:`~loopkit.middleware.tool_disclosure.ToolDisclosure`); None offers every tool on
    every request.

    A role's settings: ``success_word`` is the word of a successful RESULT line (``done``, a
    tester's ``passed``); ``offered_rules`` are the numbers of the feedback rules put into the
    instructions, recorded in the ``start`` line with ``metadata`` (e.g. the role's name), and
    the ``result`` line records the rule numbers the final answer cites (``rules_cited``) and
    those it cites that were never offered (``rules_not_offered``).

    ``verification``: the role must prove its work (:class:`~loopkit.cards.verification.
    Verification`): ``record_evidence`` is offered, a ``RESULT: done`` is accepted only with
    fresh evidence for every criterion (answered once when it is missing) and a replay that
    passes. ``start_state`` is the card's state while the run runs (In Work; a test run's In
    Test), ``done_state`` its state after a success (Done; In Test when a test run follows),
    ``failed_state`` after a run that ends failed (Failed; In Work when a pipeline sends the
    tester's defects back to the developer). An interrupted run always leaves the card Failed.
    ``approval_required`` + ``approver``: calls to those tools wait for the approver's yes
    (:class:`~loopkit.durable.approval.DurableApprover` in a durable run: a person's).
    """

    def __init__(
        self,
        model: ChatClient,
        *,
        instructions: str,
        sources: Sequence[ToolSource],
        log: RunLog,
        limits: RunLimits | None = None,
        retry: RetryPolicy | None = None,
        model_name: str | None = None,
        sampling: dict[str, Any] | None = None,
        name: str = "card-runner",
        disclosure: ToolDisclosure | None = None,
        success_word: str = "done",
        offered_rules: Sequence[int] = (),
        metadata: dict[str, Any] | None = None,
        message: str | None = None,
        verification: Verification | None = None,
        start_state: CardState = CardState.IN_WORK,
        done_state: CardState = CardState.DONE,
        failed_state: CardState = CardState.FAILED,
        approval_required: Sequence[str] = (),
        approver: Approver | None = None,
    ) -> None:
        self.model = model
        self.instructions = instructions
        self.sources = list(sources)
        self.log = log
        self.limits = limits or RunLimits()
        self.retry = retry
        self.model_name = model_name
        self.sampling = sampling or {}
        self.name = name
        self.disclosure = disclosure
        self.success_word = success_word
        self.offered_rules = sorted(offered_rules)
        self.metadata = dict(metadata or {})
        self.message = message
        self.verification = verification
        self.start_state = start_state
        self.done_state = done_state
        self.failed_state = failed_state
        self.approval_required = tuple(approval_required)
        self.approver = approver

    def prompt(self, card: Card) -> str:
        """The user's message of a run: the card, its acceptance criteria by id (C1, C2, ...),
        then the message that came with it."""
        extra = f"{MESSAGE_PREFIX}{self.message.strip()}" if self.message else ""
        return CARD_PREFIX + card.text.rstrip("\n") + "\n" + criteria_section(card.criteria) + extra

    def run_metadata(self, card: Card) -> dict[str, Any]:
        """What the run log's ``start`` line records about the run."""
        data = {
            "card": card.title,
            "limits": self.limits.as_dict(),
            **self.metadata,
            "rules_offered": self.offered_rules,
        }
        if self.message:  # what came with the card (a tester's defects in a pipeline)
            data["message"] = self.message
        return data

    def result_details(self, answer: AgentRunResult[str] | None) -> dict[str, Any]:
        """What the ``result`` line records beside the RESULT: the rules the answer cites, and
        with a verification each criterion's verdict and the replay."""
        details = self.verification.report() if self.verification is not None else {}
        if answer is None:
            return details
        cited = cited_rules(answer.text)
        unknown = [n for n in cited if n not in self.offered_rules]
        return {"rules_cited": cited, "rules_not_offered": unknown, **details}

    def agent(self, tools: Sequence[Tool] = ()) -> Agent[str]:
        """The agent one run of this runner uses, with ``tools`` (the opened sources' tools).

        A new agent per run: its run-log client keeps the run it serves, so that the runner can
        write the run's ``result`` line in it after the run.
        """
        return self._agent(tools)[0]

    def _agent(self, tools: Sequence[Tool]) -> tuple[Agent[str], _CardRunLog]:
        logged: list[_CardRunLog] = []

        def run_log(inner: ChatClient) -> ChatClient:
            logged.append(_CardRunLog(inner, self.log))
            return logged[0]

        middleware: list[Any] = [run_log]
        if self.verification is not None:
            tools = [*tools, *self.verification.tools]
            middleware.append(self.verification.middleware)
        if self.disclosure is not None:
            # Below the run log: its start line lists every tool the run has, while each
            # request offers only the core and the loaded ones.
            tools = self.disclosure.tools(tools)
            middleware.append(self.disclosure.middleware)
        model: ChatClient | ChatClientBuilder = self.model
        if self.retry is not None:
            # Retries report themselves as run events: the run log writes them as `retry` lines.
            model = ChatClientBuilder(self.model).use_retries(self.retry)
        agent = Agent(
            model,
            instructions=self.instructions,
            tools=list(tools),
            name=self.name,
            middleware=middleware,
            max_rounds=self.limits.max_rounds,
            max_tokens=self.limits.max_tokens,
            max_output_tokens=self.limits.max_output_tokens,
            include_detailed_errors=True,
            options=ChatOptions(model_id=self.model_name, **self.sampling),
            approval_required=self.approval_required,
            approver=self.approver,
        )
        return agent, logged[0]

    async def _answer(self, card: Card, logs: list[_CardRunLog]) -> AgentRunResult[str]:
        """Open the tool sources, make the agent and run it on ``card``. The run's log goes into
        ``logs`` as soon as the agent exists, so a caller's error handling can still name the
        run when the agent run raises."""
        if self.verification is not None:
            self.verification.for_card(card)
        async with AsyncExitStack() as stack:
            tools: list[Tool] = []
            for source in self.sources:
                await stack.enter_async_context(source)
                tools.extend(source.tools)
            self._check_unique(tools)
            agent, logged = self._agent(tools)
            logs.append(logged)
            answer = await agent.run(self.prompt(card), metadata=self.run_metadata(card))
            if self.verification is not None:
                answer = await self._verified(agent, logged, answer, self.verification)
            return answer

    async def _verified(
        self,
        agent: Agent[str],
        logged: _CardRunLog,
        answer: AgentRunResult[str],
        verification: Verification,
    ) -> AgentRunResult[str]:
        """A ``RESULT: done`` checked: the evidence of every criterion (what is missing is
        answered once, in the same run), then the replay. ``verification.failure`` says why
        the done is refused; the answer returned is the model's last."""
        if not self._claims_done(answer):
            return answer
        run = logged.run
        assessment = verification.assess()
        if not assessment.ok:
            verification.feedback_given = True
            feedback = assessment.feedback()
            with run_scope(run) if run is not None else nullcontext():
                self.log.write(
                    "verification", status="not verified", reason=assessment.reason(),
                    criteria=assessment.as_data(), feedback=feedback,
                )  # fmt: skip
            answer = await self._continue(agent, run, answer, feedback)
            if not self._claims_done(answer):
                return answer
            assessment = verification.assess()
            if not assessment.ok:
                verification.failure = assessment.reason()
                return answer
        replay = await verification.replay()
        if replay is not None:
            with run_scope(run) if run is not None else nullcontext():
                self.log.write(
                    "verification", status="verified" if replay.passed else "replay failed",
                    line=replay.line(), **replay.model_dump(exclude_defaults=True),
                )  # fmt: skip
            if not replay.passed:
                verification.failure = replay.line()
        return answer

    def _claims_done(self, answer: AgentRunResult[str]) -> bool:
        return (
            parse_result(answer.text, self.success_word).done
            and not answer.max_rounds_reached
            and not answer.unknown_tools
        )

    @staticmethod
    async def _continue(
        agent: Agent[str], run: RunContext | None, answer: AgentRunResult[str], text: str
    ) -> AgentRunResult[str]:
        """The run goes on after its answer with a message from the runner (``text``): the
        agent's loop in the same run (its rounds, budget and log), the model's next answer."""
        ask = ChatMessage.from_text(ChatRole.USER, text)
        head = (
            [ChatMessage.from_text(ChatRole.SYSTEM, agent.instructions)]
            if agent.instructions
            else []
        )
        with run_scope(run) if run is not None else nullcontext():
            response = await agent.pipeline.get_response(
                [*head, *answer.all_messages, ask], agent.options
            )
        extra = response.additional_properties
        added = [ask, *response.messages]
        update: dict[str, Any] = {
            "output": response.text,
            "new_messages": [*answer.new_messages, *added],
            "all_messages": [*answer.all_messages, *added],
            "max_rounds_reached": bool(extra.get("max_rounds_reached", False)),
            "unknown_tools": list(extra.get("unknown_tools", ())),
        }
        if run is not None:
            update.update(rounds=run.rounds, tool_calls=run.tool_calls, usage=run.usage)
        return answer.model_copy(update=update)

    async def run(self, card: Card, *, write_state: bool = True) -> CardRunOutcome:
        """Run ``card``; its state becomes In Work, then Done or Failed (written to its file)."""
        if write_state and card.path is not None:
            card = card.save_state(self.start_state)
        answer: AgentRunResult[str] | None = None
        logs: list[_CardRunLog] = []
        try:
            answer = await self._answer(card, logs)
            result = self._judge(answer)
        except BudgetExceededError as e:
            result = self._failed(str(e))
        except asyncio.CancelledError:
            result = self._failed("the run was interrupted")
            self._finish(card, result, write_state, logs[0] if logs else None, interrupted=True)
            raise
        except (LoopkitError, OSError, ValueError) as e:
            result = self._failed(f"{type(e).__name__}: {e}")
        except Exception as e:  # a tool's exception after too many failing rounds, etc.
            result = self._failed(f"{type(e).__name__}: {e}")
        logged = logs[0] if logs else None
        card, totals = self._finish(card, result, write_state, logged, self.result_details(answer))
        run = logged.run if logged is not None else None
        return CardRunOutcome(
            result=result,
            card=card,
            run=answer,
            run_id=run.run_id if run is not None else None,
            totals=totals,
            verification=self.verification,
        )

    def _failed(self, reason: str) -> RunResult:
        return RunResult(status="failed", reason=reason, success_word=self.success_word)

    def _judge(self, answer: AgentRunResult[str]) -> RunResult:
        result = parse_result(answer.text, self.success_word)
        if answer.max_rounds_reached:
            said = result.line()
            return self._failed(
                f"round limit of {self.limits.max_rounds} reached (the model then said: {said!r})"
            )
        if answer.unknown_tools:
            names = ", ".join(answer.unknown_tools)
            return self._failed(f"the model called unknown tools: {names}")
        if result.done and self.verification is not None and self.verification.failure:
            return self._failed(self.verification.failure)
        return result

    def _finish(
        self,
        card: Card,
        result: RunResult,
        write_state: bool,
        logged: _CardRunLog | None,
        details: dict[str, Any] | None = None,
        *,
        interrupted: bool = False,
    ) -> tuple[Card, dict[str, Any]]:
        """The card's new state written, and the ``result`` line, in the run when it started."""
        run = logged.run if logged is not None else None
        state = self.ended_state(result, interrupted=interrupted)
        with run_scope(run) if run is not None else nullcontext():
            if write_state and card.path is not None:
                try:
                    card = card.save_state(state)
                except OSError as e:  # the log still records the result
                    self.log.error(f"could not write the card state: {e}")
            self.log.result(result.status, result.reason, card_state=state.value, **(details or {}))
            return card, self.log.totals()

    def ended_state(self, result: RunResult, *, interrupted: bool = False) -> CardState:
        """The card's state once a run ended with ``result``: ``done_state`` after a success,
        ``failed_state`` after a failure, Failed after an interruption."""
        if result.done:
            return self.done_state
        return CardState.FAILED if interrupted else self.failed_state

    @staticmethod
    def _check_unique(tools: list[Tool]) -> None:
        seen: set[str] = set()
        for t in tools:
            if t.name in seen:
                raise ValueError(
                    f"two tool sources both offer a tool named {t.name!r}; give one of them a "
                    "tool_prefix"
                )
            seen.add(t.name)


class _CardRunLog(RunLogChatClient):
    """The run log below a card run's loop: ``round`` and ``tool`` lines as usual, and the run's
    events as lines, except ``run_end``: a card run ends with the runner's ``result`` line (the
    RESULT and the card's state), written in the run it keeps here."""

    def __init__(self, inner: ChatClient, log: RunLog) -> None:
        super().__init__(inner, log)
        #: The run this client serves (one agent, one run: see :meth:`CardRunner.agent`).
        self.run: RunContext | None = None

    def on_run_start(self, run: RunContext) -> None:
        """Keep ``run`` and write its events (but ``run_end``) as lines of the log."""
        self.run = run
        run.subscribe(self._event)

    def _event(self, event: RunEvent) -> None:
        # Called by run.emit() inside the run, so the line is written in it (with its run_id).
        if event.type != "run_end":
            self.log.write(event.type, **event.data)
