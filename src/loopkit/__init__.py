"""loopkit: agent loops for Python.

Protocols (:class:`ChatClient`, :class:`Tool`), middleware that wraps a chat client (the
function-invocation loop, the run log, a token budget, retries) and interchangeable providers
(litellm for hosted and local models, MCP servers and Python functions for tools).

Names are loaded on first use, so ``import loopkit`` stays fast; everything in ``__all__`` is
public API. Type checkers read the ``TYPE_CHECKING`` imports below (``mypy --strict`` sees every
name with its type); at run time ``__getattr__`` imports a name's module when it is first used.
Three lists must agree, and ``tests/typing/test_exports.py`` checks that they do: ``__all__``,
``_EXPORTS`` (name -> module) and the ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentRunResult",
    "AgentStream",
    "AgentTool",
    "AllClientsFailedError",
    "BudgetExceededError",
    "Card",
    "CardError",
    "CardRunner",
    "CardState",
    "ChatClient",
    "ChatClientBuilder",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatRole",
    "CompactionChatClient",
    "CompactionOptions",
    "Content",
    "DataContent",
    "DelegatingChatClient",
    "FallbackChatClient",
    "FinalResult",
    "FinishReason",
    "FunctionCallContent",
    "FunctionChatClient",
    "FunctionInvocationOptions",
    "FunctionInvokingChatClient",
    "FunctionResultContent",
    "FunctionTool",
    "InMemorySession",
    "IncompleteStepError",
    "LiteLLMChatClient",
    "LoopkitError",
    "MCPClient",
    "MCPServerConfig",
    "MCPServerError",
    "MCPTool",
    "MaxConsecutiveErrorsError",
    "OpenTelemetryChatClient",
    "OutputValidationError",
    "ProviderError",
    "RedactingConsole",
    "RedactingStream",
    "Redactor",
    "ResponseFormat",
    "RetryPolicy",
    "RetryingChatClient",
    "RoundFinished",
    "RunAware",
    "RunContext",
    "RunEvent",
    "RunLog",
    "RunLogChatClient",
    "RunResult",
    "RunnerConfig",
    "SQLAlchemySession",
    "SQLiteSession",
    "Script",
    "ScriptDivergedError",
    "ScriptedChatClient",
    "Session",
    "SessionStoreError",
    "TextContent",
    "TextDelta",
    "TokenBudgetChatClient",
    "Tool",
    "ToolArgumentsError",
    "ToolCallStarted",
    "ToolError",
    "ToolInvocation",
    "ToolInvocationListener",
    "ToolMode",
    "ToolResultReceived",
    "TranscriptRecorder",
    "UnknownToolError",
    "UsageContent",
    "UsageDetails",
    "child_environment",
    "current_run",
    "is_secret_name",
    "load_config",
    "parse_result",
    "response_from_updates",
    "run_scope",
    "start_background_import",
    "tool",
]

_EXPORTS: dict[str, str] = {
    # abstractions
    "ChatClient": "loopkit.abstractions.chat",
    "ChatOptions": "loopkit.abstractions.chat",
    "ChatResponse": "loopkit.abstractions.chat",
    "ChatResponseUpdate": "loopkit.abstractions.chat",
    "FinishReason": "loopkit.abstractions.chat",
    "ToolMode": "loopkit.abstractions.chat",
    "response_from_updates": "loopkit.abstractions.chat",
    "ChatMessage": "loopkit.abstractions.content",
    "ChatRole": "loopkit.abstractions.content",
    "Content": "loopkit.abstractions.content",
    "DataContent": "loopkit.abstractions.content",
    "FunctionCallContent": "loopkit.abstractions.content",
    "FunctionResultContent": "loopkit.abstractions.content",
    "TextContent": "loopkit.abstractions.content",
    "UsageContent": "loopkit.abstractions.content",
    "UsageDetails": "loopkit.abstractions.content",
    "FunctionTool": "loopkit.abstractions.tools",
    "Tool": "loopkit.abstractions.tools",
    "ToolArgumentsError": "loopkit.abstractions.tools",
    "ToolError": "loopkit.abstractions.tools",
    "tool": "loopkit.abstractions.tools",
    # runs and sessions
    "RunAware": "loopkit.run_context",
    "RunContext": "loopkit.run_context",
    "RunEvent": "loopkit.run_context",
    "current_run": "loopkit.run_context",
    "run_scope": "loopkit.run_context",
    "InMemorySession": "loopkit.sessions.memory",
    "Session": "loopkit.sessions.protocol",
    # composition and middleware
    "ChatClientBuilder": "loopkit.builder",
    "DelegatingChatClient": "loopkit.middleware.delegating",
    "FunctionInvocationOptions": "loopkit.middleware.function_invocation",
    "FunctionInvokingChatClient": "loopkit.middleware.function_invocation",
    "ToolInvocation": "loopkit.middleware.function_invocation",
    "ToolInvocationListener": "loopkit.middleware.function_invocation",
    "RetryPolicy": "loopkit.middleware.retry",
    "RetryingChatClient": "loopkit.middleware.retry",
    "OpenTelemetryChatClient": "loopkit.middleware.otel",
    "RunLog": "loopkit.middleware.run_log",
    "RunLogChatClient": "loopkit.middleware.run_log",
    "TokenBudgetChatClient": "loopkit.middleware.token_budget",
    # providers
    "LiteLLMChatClient": "loopkit.providers.litellm",
    "start_background_import": "loopkit.providers.litellm",
    "MCPClient": "loopkit.mcp.client",
    "MCPServerConfig": "loopkit.mcp.config",
    "MCPTool": "loopkit.mcp.tools",
    "ScriptedChatClient": "loopkit.providers.scripted",
    "FunctionChatClient": "loopkit.providers.scripted",
    "Script": "loopkit.providers.scripted",
    # the card runner (loopkit.cards: the application, not the library)
    "CardRunner": "loopkit.cards.runner",
    "RunnerConfig": "loopkit.cards.config",
    "load_config": "loopkit.cards.config",
    "Card": "loopkit.cards.card",
    "CardState": "loopkit.cards.card",
    "RunResult": "loopkit.cards.result",
    "parse_result": "loopkit.cards.result",
    # secrets
    "Redactor": "loopkit.redaction",
    "RedactingStream": "loopkit.redaction",
    "is_secret_name": "loopkit.redaction",
    "RedactingConsole": "loopkit.redacting_console",
    "child_environment": "loopkit.child_env",
    # errors
    "LoopkitError": "loopkit.errors",
    "ProviderError": "loopkit.errors",
    "BudgetExceededError": "loopkit.errors",
    "MaxConsecutiveErrorsError": "loopkit.errors",
    "UnknownToolError": "loopkit.errors",
    "CardError": "loopkit.errors",
    "MCPServerError": "loopkit.errors",
    "ScriptDivergedError": "loopkit.errors",
    "CompactionChatClient": "loopkit.middleware.compaction",
    "CompactionOptions": "loopkit.middleware.compaction",
    "AllClientsFailedError": "loopkit.middleware.fallback",
    "FallbackChatClient": "loopkit.middleware.fallback",
    "OutputValidationError": "loopkit.errors",
    "ResponseFormat": "loopkit.abstractions.response_format",
    "Agent": "loopkit.agents.agent",
    "AgentRunResult": "loopkit.agents.result",
    "AgentStream": "loopkit.agents.stream",
    "AgentTool": "loopkit.agents.as_tool",
    "AgentEvent": "loopkit.agents.events",
    "TextDelta": "loopkit.agents.events",
    "ToolCallStarted": "loopkit.agents.events",
    "ToolResultReceived": "loopkit.agents.events",
    "RoundFinished": "loopkit.agents.events",
    "FinalResult": "loopkit.agents.events",
    "SQLiteSession": "loopkit.sessions",
    "SQLAlchemySession": "loopkit.sessions",
    "SessionStoreError": "loopkit.sessions",
    "IncompleteStepError": "loopkit.sessions",
    "TranscriptRecorder": "loopkit.middleware.transcript_recorder",
}

if TYPE_CHECKING:
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
        FinishReason,
        ToolMode,
        response_from_updates,
    )
    from loopkit.abstractions.content import (
        ChatMessage,
        ChatRole,
        Content,
        DataContent,
        FunctionCallContent,
        FunctionResultContent,
        TextContent,
        UsageContent,
        UsageDetails,
    )
    from loopkit.abstractions.response_format import ResponseFormat
    from loopkit.abstractions.tools import FunctionTool, Tool, ToolArgumentsError, ToolError, tool
    from loopkit.agents.agent import Agent
    from loopkit.agents.as_tool import AgentTool
    from loopkit.agents.events import (
        AgentEvent,
        FinalResult,
        RoundFinished,
        TextDelta,
        ToolCallStarted,
        ToolResultReceived,
    )
    from loopkit.agents.result import AgentRunResult
    from loopkit.agents.stream import AgentStream
    from loopkit.builder import ChatClientBuilder
    from loopkit.cards.card import Card, CardState
    from loopkit.cards.config import RunnerConfig, load_config
    from loopkit.cards.result import RunResult, parse_result
    from loopkit.cards.runner import CardRunner
    from loopkit.child_env import child_environment
    from loopkit.errors import (
        BudgetExceededError,
        CardError,
        LoopkitError,
        MaxConsecutiveErrorsError,
        MCPServerError,
        OutputValidationError,
        ProviderError,
        ScriptDivergedError,
        UnknownToolError,
    )
    from loopkit.mcp.client import MCPClient
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.tools import MCPTool
    from loopkit.middleware.compaction import CompactionChatClient, CompactionOptions
    from loopkit.middleware.delegating import DelegatingChatClient
    from loopkit.middleware.fallback import AllClientsFailedError, FallbackChatClient
    from loopkit.middleware.function_invocation import (
        FunctionInvocationOptions,
        FunctionInvokingChatClient,
        ToolInvocation,
        ToolInvocationListener,
    )
    from loopkit.middleware.otel import OpenTelemetryChatClient
    from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
    from loopkit.middleware.run_log import RunLog, RunLogChatClient
    from loopkit.middleware.token_budget import TokenBudgetChatClient
    from loopkit.middleware.transcript_recorder import TranscriptRecorder
    from loopkit.providers.litellm import LiteLLMChatClient, start_background_import
    from loopkit.providers.scripted import FunctionChatClient, Script, ScriptedChatClient
    from loopkit.redacting_console import RedactingConsole
    from loopkit.redaction import RedactingStream, Redactor, is_secret_name
    from loopkit.run_context import RunAware, RunContext, RunEvent, current_run, run_scope
    from loopkit.sessions import (
        IncompleteStepError,
        SessionStoreError,
        SQLAlchemySession,
        SQLiteSession,
    )
    from loopkit.sessions.memory import InMemorySession
    from loopkit.sessions.protocol import Session
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
