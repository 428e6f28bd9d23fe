"""Model providers. ``LiteLLMChatClient`` is imported lazily: litellm takes seconds to import."""

from typing import TYPE_CHECKING

from loopkit.providers.scripted import (
    FunctionChatClient,
    ResultMatch,
    Script,
    ScriptedCall,
    ScriptedChatClient,
    ScriptedTurn,
)

__all__ = [
    "FunctionChatClient",
    "LiteLLMChatClient",
    "ResultMatch",
    "Script",
    "ScriptedCall",
    "ScriptedChatClient",
    "ScriptedTurn",
]

#: Names loaded on first use (the others above are imported with the package).
_EXPORTS: dict[str, str] = {"LiteLLMChatClient": "loopkit.providers.litellm"}

if TYPE_CHECKING:
    from loopkit.providers.litellm import LiteLLMChatClient
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
