"""The protocols and data types every other part of loopkit builds on.

Names are loaded on first use (as in :mod:`loopkit`): importing ``loopkit.abstractions.tools``
for ``@tool`` must not load the pydantic content models of ``chat`` and ``content``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatRole",
    "Content",
    "DataContent",
    "FinishReason",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionTool",
    "TextContent",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolMode",
    "UsageContent",
    "UsageDetails",
    "parse_docstring",
    "response_from_updates",
    "tool",
]

_EXPORTS: dict[str, str] = {
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
    "parse_docstring": "loopkit.abstractions.tools",
    "tool": "loopkit.abstractions.tools",
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
    from loopkit.abstractions.tools import (
        FunctionTool,
        Tool,
        ToolArgumentsError,
        ToolError,
        parse_docstring,
        tool,
    )
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
