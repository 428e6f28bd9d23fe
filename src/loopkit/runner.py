"""``CardRunner``: one card, one agent loop, one RESULT.

The runner composes the loop for a card (function invocation over a run log, a token budget and
retries), opens the tool sources (MCP servers, local tools), sends the system prompt and the card,
and maps every way a run can end to a card state: ``Done`` only for a ``RESULT: done`` reached
within the limits; ``Failed`` with a reason for everything else (a ``RESULT: failed``, a missing
RESULT line, the round limit, the token budget, a provider or tool-server failure).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.abstractions.tools import Tool
from loopkit.builder import ChatClientBuilder
from loopkit.cards import Card, CardState
from loopkit.errors import BudgetExceededError, LoopkitError, ProviderError
from loopkit.mcp.config import MCPServerConfig
from loopkit.middleware.function_invocation import FunctionInvocationOptions
from loopkit.middleware.retry import RetryPolicy
from loopkit.middleware.run_log import RunLog
from loopkit.result import RunResult, parse_result


@runtime_checkable
class ToolSource(Protocol):
    """Something that provides tools for the length of a run: enter it, read ``tools``, exit it."""

    tools: list[Tool]

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> Any: ...


class MCPToolSource:
    """The tools of one MCP server as a :class:`ToolSource`."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.tools: list[Tool] = []
        self._client: Any = None

    async def __aenter__(self) -> MCPToolSource:
        self._client = self.config.connect()
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


@dataclass(slots=True)
class CardRunOutcome:
    """What a card run produced."""

    result: RunResult
    card: Card | None
    response: ChatResponse | None = None
    totals: dict[str, Any] = field(default_factory=dict)


CARD_PREFIX = "THE CARD\n--------\n"


class CardRunner:
    """Runs one card with ``model`` and the tools of ``sources``, writing ``log``.

    ``model`` is the bare provider client; the runner adds the loop, the run log, the token
    budget and (when ``retry`` is given) retries around it.
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
    ) -> None:
        self.model = model
        self.instructions = instructions
        self.sources = list(sources)
        self.log = log
        self.limits = limits or RunLimits()
        self.retry = retry
        self.model_name = model_name
        self.sampling = sampling or {}

    def _client(self) -> ChatClient:
        builder = (
            ChatClientBuilder(self.model)
            .use_function_invocation(
                FunctionInvocationOptions(
                    max_rounds=self.limits.max_rounds, include_detailed_errors=True
                )
            )
            .use_run_log(self.log)
            .use_token_budget(self.limits.max_tokens)
        )
        if self.retry is not None:
            builder.use_retries(self.retry, on_retry=self._log_retry)
        return builder.build()

    def _log_retry(self, attempt: int, error: ProviderError, delay: float) -> None:
        """A ``retry`` line in the run log (the run log redacts it like every line)."""
        self.log.write(
            "retry",
            round=self.log.rounds + 1,
            attempt=attempt,
            wait_s=round(delay, 2),
            status_code=error.status_code,
            reason=str(error),
        )

    def messages(self, card: Card) -> list[ChatMessage]:
        """The conversation a run starts with: the instructions and the card."""
        return [
            ChatMessage.from_text(ChatRole.SYSTEM, self.instructions),
            ChatMessage.from_text(ChatRole.USER, CARD_PREFIX + card.text),
        ]

    async def run(self, card: Card, *, write_state: bool = True) -> CardRunOutcome:
        """Run ``card``; its state becomes In Work, then Done or Failed (written to its file)."""
        if write_state and card.path is not None:
            card = card.save_state(CardState.IN_WORK)
        response: ChatResponse | None = None
        try:
            async with AsyncExitStack() as stack:
                tools: list[Tool] = []
                for source in self.sources:
                    await stack.enter_async_context(source)
                    tools.extend(source.tools)
                self._check_unique(tools)
                self.log.start(
                    model=self.model_name,
                    tools=[t.name for t in tools],
                    limits={
                        "max_rounds": self.limits.max_rounds,
                        "max_tokens": self.limits.max_tokens,
                        "max_output_tokens": self.limits.max_output_tokens,
                    },
                    card=card.title,
                )
                options = ChatOptions(
                    tools=tools,
                    max_output_tokens=self.limits.max_output_tokens,
                    model_id=self.model_name,
                    **self.sampling,
                )
                response = await self._client().get_response(self.messages(card), options)
            result = self._judge(response)
        except BudgetExceededError as e:
            result = RunResult(status="failed", reason=str(e))
        except asyncio.CancelledError:
            result = RunResult(status="failed", reason="the run was interrupted")
            self._finish(card, result, write_state)
            raise
        except (LoopkitError, OSError, ValueError) as e:
            result = RunResult(status="failed", reason=f"{type(e).__name__}: {e}")
        except Exception as e:  # a tool's exception after too many failing rounds, etc.
            result = RunResult(status="failed", reason=f"{type(e).__name__}: {e}")
        card = self._finish(card, result, write_state)
        return CardRunOutcome(result=result, card=card, response=response, totals=self.log.totals())

    def _judge(self, response: ChatResponse) -> RunResult:
        result = parse_result(response.text)
        if response.additional_properties.get("max_rounds_reached"):
            said = result.line()
            return RunResult(
                status="failed",
                reason=f"round limit of {self.limits.max_rounds} reached (the model then said: "
                f"{said!r})",
            )
        if response.additional_properties.get("unknown_tools"):
            names = ", ".join(response.additional_properties["unknown_tools"])
            return RunResult(status="failed", reason=f"the model called unknown tools: {names}")
        return result

    def _finish(self, card: Card, result: RunResult, write_state: bool) -> Card:
        state = CardState.DONE if result.done else CardState.FAILED
        if write_state and card.path is not None:
            try:
                card = card.save_state(state)
            except OSError as e:  # the log still records the result
                self.log.error(f"could not write the card state: {e}")
        self.log.result(result.status, result.reason, card_state=state.value)
        return card

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
