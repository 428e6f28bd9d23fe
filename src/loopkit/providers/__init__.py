"""Model providers. ``LiteLLMChatClient`` is imported lazily: litellm takes seconds to import."""

from typing import TYPE_CHECKING, Any

from loopkit.providers.scripted import (
    FunctionChatClient,
    ResultMatch,
    Script,
    ScriptedCall,
    ScriptedChatClient,
    ScriptedTurn,
)

if TYPE_CHECKING:
    from loopkit.providers.litellm import LiteLLMChatClient

__all__ = [
    "FunctionChatClient",
    "LiteLLMChatClient",
    "ResultMatch",
    "Script",
    "ScriptedCall",
    "ScriptedChatClient",
    "ScriptedTurn",
]


def __getattr__(name: str) -> Any:
    if name == "LiteLLMChatClient":
        from loopkit.providers.litellm import LiteLLMChatClient

        return LiteLLMChatClient
    raise AttributeError(f"module 'loopkit.providers' has no attribute {name!r}")
