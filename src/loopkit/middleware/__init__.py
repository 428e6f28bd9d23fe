"""Middleware: each one a :class:`DelegatingChatClient` wrapping the next client.

Names are loaded on first use (as in :mod:`loopkit`): importing one middleware module, e.g. the
builder importing ``loopkit.middleware.delegating``, must not load the others' dependencies
(structlog and rich for the run log, tenacity for retries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DelegatingChatClient",
    "FunctionInvocationOptions",
    "FunctionInvokingChatClient",
    "OpenTelemetryChatClient",
    "RetryPolicy",
    "RetryingChatClient",
    "RunLog",
    "RunLogChatClient",
    "TokenBudgetChatClient",
    "ToolInvocation",
    "ToolInvocationListener",
    "cut_result",
    "is_transient",
    "redact",
    "tool_result_to_text",
]

_EXPORTS: dict[str, str] = {
    "DelegatingChatClient": "loopkit.middleware.delegating",
    "FunctionInvocationOptions": "loopkit.middleware.function_invocation",
    "FunctionInvokingChatClient": "loopkit.middleware.function_invocation",
    "ToolInvocation": "loopkit.middleware.function_invocation",
    "ToolInvocationListener": "loopkit.middleware.function_invocation",
    "cut_result": "loopkit.middleware.function_invocation",
    "tool_result_to_text": "loopkit.middleware.function_invocation",
    "OpenTelemetryChatClient": "loopkit.middleware.otel",
    "RetryPolicy": "loopkit.middleware.retry",
    "RetryingChatClient": "loopkit.middleware.retry",
    "is_transient": "loopkit.middleware.retry",
    "RunLog": "loopkit.middleware.run_log",
    "RunLogChatClient": "loopkit.middleware.run_log",
    "redact": "loopkit.middleware.run_log",
    "TokenBudgetChatClient": "loopkit.middleware.token_budget",
}

if TYPE_CHECKING:
    from loopkit.middleware.delegating import DelegatingChatClient
    from loopkit.middleware.function_invocation import (
        FunctionInvocationOptions,
        FunctionInvokingChatClient,
        ToolInvocation,
        ToolInvocationListener,
        cut_result,
        tool_result_to_text,
    )
    from loopkit.middleware.otel import OpenTelemetryChatClient
    from loopkit.middleware.retry import RetryingChatClient, RetryPolicy, is_transient
    from loopkit.middleware.run_log import RunLog, RunLogChatClient, redact
    from loopkit.middleware.token_budget import TokenBudgetChatClient
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
