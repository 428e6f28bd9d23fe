"""The protocols and data types every other part of loopkit builds on."""

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
