"""Middleware: each one a :class:`DelegatingChatClient` wrapping the next client.

Names are loaded on first use (as in :mod:`loopkit`): importing one middleware module, e.g. the
builder importing ``loopkit.middleware.delegating``, must not load the others' dependencies
(tenacity for retries; the run log renders its lines itself and needs no logging library).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "AllClientsFailedError",
    "CompactionChatClient",
    "CompactionOptions",
    "CompactionWarning",
    "DelegatingChatClient",
    "ExpectMode",
    "FallbackChatClient",
    "FunctionInvocationOptions",
    "FunctionInvokingChatClient",
    "OpenTelemetryChatClient",
    "RetryPolicy",
    "RetryingChatClient",
    "RunLog",
    "RunLogChatClient",
    "TokenBudgetChatClient",
    "TokenEstimator",
    "ToolDisclosure",
    "ToolDisclosureChatClient",
    "ToolInvocation",
    "ToolInvocationListener",
    "TranscriptRecorder",
    "UsageEstimatedWarning",
    "compact_schema",
    "cut_result",
    "estimate_tokens",
    "is_transient",
    "redact",
    "tool_result_to_text",
]

_EXPORTS: dict[str, str] = {
    "CompactionChatClient": "loopkit.middleware.compaction",
    "CompactionOptions": "loopkit.middleware.compaction",
    "CompactionWarning": "loopkit.middleware.compaction",
    "DelegatingChatClient": "loopkit.middleware.delegating",
    "AllClientsFailedError": "loopkit.middleware.fallback",
    "FallbackChatClient": "loopkit.middleware.fallback",
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
    "UsageEstimatedWarning": "loopkit.middleware.token_budget",
    "TokenEstimator": "loopkit.middleware.token_estimate",
    "estimate_tokens": "loopkit.middleware.token_estimate",
    "ToolDisclosure": "loopkit.middleware.tool_disclosure",
    "ToolDisclosureChatClient": "loopkit.middleware.tool_disclosure",
    "compact_schema": "loopkit.middleware.tool_disclosure",
    "TranscriptRecorder": "loopkit.middleware.transcript_recorder",
    "ExpectMode": "loopkit.middleware.transcript_recorder",
}

if TYPE_CHECKING:
    from loopkit.middleware.compaction import (
        CompactionChatClient,
        CompactionOptions,
        CompactionWarning,
    )
    from loopkit.middleware.delegating import DelegatingChatClient
    from loopkit.middleware.fallback import AllClientsFailedError, FallbackChatClient
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
    from loopkit.middleware.token_budget import TokenBudgetChatClient, UsageEstimatedWarning
    from loopkit.middleware.token_estimate import TokenEstimator, estimate_tokens
    from loopkit.middleware.tool_disclosure import (
        ToolDisclosure,
        ToolDisclosureChatClient,
        compact_schema,
    )
    from loopkit.middleware.transcript_recorder import ExpectMode, TranscriptRecorder
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
