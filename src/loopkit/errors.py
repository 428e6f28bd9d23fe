"""The exceptions loopkit raises, so callers can tell a provider outage from a bad request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BudgetExceededError",
    "CardError",
    "KeepsFieldsWhenPickled",
    "LoopkitError",
    "MCPServerError",
    "MaxConsecutiveErrorsError",
    "OutputValidationError",
    "ProviderError",
    "ScriptDivergedError",
    "UnknownToolError",
    "describe_error",
    "describe_validation_error",
]


def _restore_error(cls: type[BaseException], args: tuple[Any, ...], fields: dict[str, Any]) -> Any:
    """An exception read back from a pickle: made without calling ``__init__`` (whose
    signature is the class's own), then given its ``args`` and fields."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(fields)
    return error


class KeepsFieldsWhenPickled:
    """A mixin for exception classes: pickling keeps the message (``args``) and every field,
    whatever ``__init__`` takes. (Python's own pickling calls ``cls(*args)``, which fails for
    an ``__init__`` with keyword-only or other arguments than the message; a failed durable run's
    error is stored pickled and read back.) Put it before the exception base:
    ``class MyError(KeepsFieldsWhenPickled, ValueError)``."""

    def __reduce__(self) -> tuple[Any, ...]:
        error: Any = self
        return (_restore_error, (type(self), error.args, dict(error.__dict__)))


class LoopkitError(KeepsFieldsWhenPickled, Exception):
    """Base class of every error loopkit raises on purpose (each one pickles with its fields)."""


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
    """Tools failed in too many rounds in a row; the last tool exception is the ``__cause__``.

    ``tools`` names the tools that failed in the last round, ``round`` is that round (counted
    in the run), ``errors`` holds that round's exceptions in call order.
    """

    def __init__(
        self, message: str, *, tools: Sequence[str], round: int, errors: Sequence[BaseException]
    ) -> None:
        super().__init__(message)
        self.tools = list(tools)
        self.round = round
        self.errors = list(errors)


class OutputValidationError(LoopkitError):
    """The model's final answer did not validate as the agent's output type, after the retries.

    ``output_type`` is the type's name, ``errors`` the validation errors of the last answer
    (one line), ``text`` that answer and ``attempts`` the answers tried.
    """

    def __init__(
        self, message: str, *, output_type: str, errors: str, text: str, attempts: int
    ) -> None:
        super().__init__(message)
        self.output_type = output_type
        self.errors = errors
        self.text = text
        self.attempts = attempts


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


def describe_error(error: BaseException) -> str:
    """``Type: message`` for a log line or a tool result, even when ``str(error)`` raises."""
    try:
        text = str(error)
    except Exception:
        text = "<message could not be read>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
