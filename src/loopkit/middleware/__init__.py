"""Middleware: each one a :class:`DelegatingChatClient` wrapping the next client."""

from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import (
    FunctionInvocationOptions,
    FunctionInvokingChatClient,
    ToolInvocation,
    ToolInvocationListener,
    cut_result,
    tool_result_to_text,
)
from loopkit.middleware.retry import RetryingChatClient, RetryPolicy, is_transient
from loopkit.middleware.run_log import RunLog, RunLogChatClient, redact
from loopkit.middleware.token_budget import TokenBudgetChatClient

__all__ = [
    "DelegatingChatClient",
    "FunctionInvocationOptions",
    "FunctionInvokingChatClient",
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
