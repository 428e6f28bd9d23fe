"""loopkit: agent loops for Python.

Protocols (:class:`ChatClient`, :class:`Tool`), middleware that wraps a chat client (the
function-invocation loop, the run log, a token budget, retries) and interchangeable providers
(litellm for hosted and local models, MCP servers and Python functions for tools).

Names are loaded on first use, so ``import loopkit`` stays fast; everything below is public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # abstractions
    "ChatClient": "loopkit.abstractions.chat",
    "ChatOptions": "loopkit.abstractions.chat",
    "ChatResponse": "loopkit.abstractions.chat",
    "ChatResponseUpdate": "loopkit.abstractions.chat",
    "ToolMode": "loopkit.abstractions.chat",
    "response_from_updates": "loopkit.abstractions.chat",
    "ChatMessage": "loopkit.abstractions.content",
    "ChatRole": "loopkit.abstractions.content",
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
    "ResponseFormat": "loopkit.abstractions.response_format",
    # agents, runs and sessions
    "Agent": "loopkit.agents.agent",
    "AgentRunResult": "loopkit.agents.result",
    "AgentTool": "loopkit.agents.as_tool",
    "AgentEvent": "loopkit.agents.events",
    "TextDelta": "loopkit.agents.events",
    "ToolCallStarted": "loopkit.agents.events",
    "ToolResultReceived": "loopkit.agents.events",
    "RoundFinished": "loopkit.agents.events",
    "FinalResult": "loopkit.agents.events",
    "RunContext": "loopkit.run_context",
    "current_run": "loopkit.run_context",
    "run_scope": "loopkit.run_context",
    "Session": "loopkit.sessions.protocol",
    "InMemorySession": "loopkit.sessions.memory",
    # composition and middleware
    "ChatClientBuilder": "loopkit.builder",
    "DelegatingChatClient": "loopkit.middleware.delegating",
    "FunctionInvocationOptions": "loopkit.middleware.function_invocation",
    "FunctionInvokingChatClient": "loopkit.middleware.function_invocation",
    "ToolInvocation": "loopkit.middleware.function_invocation",
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
    "CardRunner": "loopkit.runner",
    "RunnerConfig": "loopkit.config",
    "load_config": "loopkit.config",
    "ScriptedChatClient": "loopkit.providers.scripted",
    "FunctionChatClient": "loopkit.providers.scripted",
    "Script": "loopkit.providers.scripted",
    # cards and results
    "Card": "loopkit.cards",
    "CardState": "loopkit.cards",
    "RunResult": "loopkit.result",
    "parse_result": "loopkit.result",
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
    "CardError": "loopkit.errors",
    "MCPServerError": "loopkit.errors",
    "ScriptDivergedError": "loopkit.errors",
    "MaxConsecutiveErrorsError": "loopkit.errors",
    "OutputValidationError": "loopkit.errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from loopkit.abstractions.chat import (
        ChatClient,
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
        ToolMode,
        response_from_updates,
    )
    from loopkit.abstractions.content import (
        ChatMessage,
        ChatRole,
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
    from loopkit.builder import ChatClientBuilder
    from loopkit.cards import Card, CardState
    from loopkit.child_env import child_environment
    from loopkit.config import RunnerConfig, load_config
    from loopkit.errors import (
        BudgetExceededError,
        CardError,
        LoopkitError,
        MaxConsecutiveErrorsError,
        MCPServerError,
        OutputValidationError,
        ProviderError,
        ScriptDivergedError,
    )
    from loopkit.mcp.client import MCPClient
    from loopkit.mcp.config import MCPServerConfig
    from loopkit.mcp.tools import MCPTool
    from loopkit.middleware.delegating import DelegatingChatClient
    from loopkit.middleware.function_invocation import (
        FunctionInvocationOptions,
        FunctionInvokingChatClient,
        ToolInvocation,
    )
    from loopkit.middleware.otel import OpenTelemetryChatClient
    from loopkit.middleware.retry import RetryingChatClient, RetryPolicy
    from loopkit.middleware.run_log import RunLog, RunLogChatClient
    from loopkit.middleware.token_budget import TokenBudgetChatClient
    from loopkit.providers.litellm import LiteLLMChatClient, start_background_import
    from loopkit.providers.scripted import FunctionChatClient, Script, ScriptedChatClient
    from loopkit.redacting_console import RedactingConsole
    from loopkit.redaction import RedactingStream, Redactor, is_secret_name
    from loopkit.result import RunResult, parse_result
    from loopkit.run_context import RunContext, current_run, run_scope
    from loopkit.runner import CardRunner
    from loopkit.sessions.memory import InMemorySession
    from loopkit.sessions.protocol import Session
