"""The exceptions loopkit raises, so callers can tell a provider outage from a bad request."""

from __future__ import annotations


class LoopkitError(Exception):
    """Base class of every error loopkit raises on purpose."""


class ProviderError(LoopkitError):
    """A model provider failed to answer.

    ``retryable`` is True for transient failures (rate limit, overload, timeout, 5xx, connection
    loss); the retry middleware retries only those. ``retry_after`` is the provider's Retry-After
    hint in seconds, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after
        self.provider = provider


class BudgetExceededError(LoopkitError):
    """The token budget is spent; the next model request was refused."""

    def __init__(self, message: str, *, used: int, budget: int) -> None:
        super().__init__(message)
        self.used = used
        self.budget = budget


class MaxConsecutiveErrorsError(LoopkitError):
    """Tools failed in too many rounds in a row; the last tool exception is the ``__cause__``."""


class UnknownToolError(LoopkitError):
    """The model called a tool that does not exist and the loop was told to terminate on that."""


class ScriptDivergedError(LoopkitError):
    """A scripted model received something other than what its script expects."""


class MCPServerError(LoopkitError):
    """An MCP server could not be started, died, or did not answer in time.

    It ends the run at once (``terminates_run``): no answer of the model can revive the server.
    """

    terminates_run = True


class CardError(LoopkitError):
    """A card file could not be read or does not have the expected shape."""


def describe_validation_error(error: Exception) -> str:
    """A pydantic ``ValidationError`` as one line: ``where: what; where: what``."""
    errors = getattr(error, "errors", None)
    if errors is None:
        return str(error)
    parts = []
    for err in errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
