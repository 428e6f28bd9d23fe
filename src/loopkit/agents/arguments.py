"""What an :class:`~loopkit.agents.Agent` accepts, checked when it is given: a wrong type, a
misspelt keyword or a name from another framework is refused at once with what was expected,
never later as an ``AttributeError`` deep in a run."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopkit._checks import check_unknown_keywords
from loopkit.abstractions.chat import ChatClient
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.abstractions.tools import FunctionTool, Tool
from loopkit.builder import ChatClientBuilder

if TYPE_CHECKING:
    from loopkit.sessions.protocol import Session

__all__ = [
    "Prompt",
    "as_messages",
    "as_tools",
    "check_history",
    "check_metadata",
    "check_middleware",
    "check_session",
    "check_settings",
    "check_tools_argument",
    "model_client",
    "run_arguments",
    "unique_tools",
]

#: What a run starts from: a user's text, one message, or several.
Prompt = str | ChatMessage | Sequence[ChatMessage]

#: What other agent frameworks call a setting, and what to write instead.
_OTHER_NAMES = {
    "system_prompt": "use instructions= (the system message)",
    "model_settings": "use options=ChatOptions(...) (sampling, provider settings)",
    "toolsets": "use tools= (an MCP server's tools: `await MCPClient(...).tools()`)",
    "retries": "use max_consecutive_errors= (tool failures in a row) or output_retries=",
    "deps_type": "loopkit has no dependency injection; let tool functions close over what "
    "they need, or pass run metadata=",
    "instrument": "pass ChatClientBuilder(model).use_opentelemetry() as the model",
    "usage_limits": "use max_tokens= and max_rounds=",
    "end_strategy": "the loop always answers every call of a round",
    "model": "pass the model first, positionally: Agent('openai/gpt-5', ...)",
}
#: Run keywords of other frameworks.
_OTHER_RUN_NAMES = {
    "message_history": "use history= (earlier messages) or session= (a stored conversation)",
    "deps": "loopkit has no dependency injection; let tools close over what they need, or "
    "pass metadata=",
    "usage_limits": "set max_tokens= and max_rounds= on the Agent",
    "model_settings": "set options= on the Agent",
    "conversation": "use session= (InMemorySession, SQLiteSession, SQLAlchemySession)",
    "conversation_id": "use session=InMemorySession('<id>') (or a stored session)",
    "toolsets": "use tools=",
}
#: pydantic-ai's model strings (``openai:gpt-5``) by their provider prefix.
_PYDANTIC_AI_PREFIX = re.compile(
    r"^(openai|anthropic|google-gla|google-vertex|gemini|groq|mistral|cohere|bedrock|deepseek|"
    r"ollama|openrouter|grok|xai|huggingface|azure|test|heroku|cerebras|together|fireworks):"
    r"([^/]+)$"
)


def check_settings(call: str, unknown: Mapping[str, Any], accepted: Sequence[str]) -> None:
    """Refuse keyword arguments ``call`` does not take: another framework's name gets its
    loopkit equivalent, a typo the closest setting."""
    if not unknown:
        return
    names = _OTHER_NAMES if call == "Agent()" else _OTHER_RUN_NAMES
    for name in unknown:
        if name in names:
            raise TypeError(f"{call} takes no {name}= argument: {names[name]}")
    check_unknown_keywords(call, unknown, accepted)


def model_client(model: object) -> ChatClient | ChatClientBuilder:
    """The agent's model: a chat client or builder as given, a model string as a
    ``LiteLLMChatClient``; anything else is refused with what was expected."""
    if isinstance(model, ChatClientBuilder):
        return model
    if isinstance(model, str):
        name = model.strip()
        if not name:
            raise ValueError(
                "model is an empty string; give a litellm model string such as "
                "'openai/gpt-5' or 'anthropic/claude-sonnet-4-5', or a chat client"
            )
        other = _PYDANTIC_AI_PREFIX.match(name)
        if other:
            raise ValueError(
                f"model {model!r} is written as pydantic-ai writes it; loopkit's model strings "
                f"are litellm's, with a slash: '{other.group(1)}/{other.group(2)}'"
            )
        # The provider module loads no litellm (that happens at the first request).
        from loopkit.providers.litellm import LiteLLMChatClient

        return LiteLLMChatClient(name)
    if isinstance(model, type):
        raise TypeError(
            f"model is the class {model.__name__}, not a client: create one, e.g. "
            f"{model.__name__}(...)"
        )
    if isinstance(model, ChatClient):
        return model
    raise TypeError(
        "model must be a model string such as 'openai/gpt-5', a chat client (e.g. "
        "LiteLLMChatClient('anthropic/claude-sonnet-4-5'), an object with get_response and "
        f"get_streaming_response) or a ChatClientBuilder; got {_shown(model)}"
    )


def check_tools_argument(tools: object) -> None:
    """``tools`` must be a list (or other sequence) of tools, not one tool."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise TypeError(
            "tools must be a list of tools or functions, e.g. tools=[add]; got "
            f"{_shown(tools)}" + (" (wrap it in a list)" if callable(tools) else "")
        )


def check_middleware(middleware: object) -> None:
    """Each middleware must be a factory ``client -> client`` or an async function."""
    if isinstance(middleware, str | bytes) or not isinstance(middleware, Sequence):
        raise TypeError(
            f"middleware must be a list of factories (client -> client), got {_shown(middleware)}"
        )
    for i, m in enumerate(middleware):
        if isinstance(m, ChatClient) and not isinstance(m, type):
            raise TypeError(
                f"middleware[{i}] is a built {type(m).__name__}, not a factory: give its class "
                f"or `lambda inner: {type(m).__name__}(inner, ...)` (the agent builds the "
                "chain below its loop), or pass the model as a ChatClientBuilder"
            )
        if not callable(m):
            raise TypeError(
                f"middleware[{i}] must be a factory client -> client or an async function "
                f"(messages, options, next_client); got {_shown(m)}"
            )


def check_session(session: object) -> Session | None:
    """``session`` must be a :class:`~loopkit.sessions.Session` (what the agent uses of one:
    ``session_id``, ``get_messages``, ``add_messages``), or None."""
    if session is None:
        return None
    if isinstance(session, type):
        raise TypeError(
            f"session is the class {session.__name__}, not a session: create one, e.g. "
            f"{session.__name__}('user-42')"
        )
    missing = [
        name
        for name in ("session_id", "get_messages", "add_messages")
        if not hasattr(session, name)
    ]
    if missing:
        hint = ""
        if isinstance(session, str):
            hint = (
                f" To keep a conversation under the id {session!r}, pass "
                f"session=InMemorySession({session!r}) or SQLiteSession('chats.db', {session!r})."
            )
        raise TypeError(
            f"session must be a Session (InMemorySession, SQLiteSession, SQLAlchemySession or "
            f"your own store), got {_shown(session)}, which has no {', '.join(missing)}.{hint}"
        )
    return session  # type: ignore[return-value]


def check_history(history: object) -> list[ChatMessage] | None:
    """``history`` must be a list of messages (a result's ``all_messages``), or None."""
    if history is None:
        return None
    if isinstance(history, str | bytes) or not isinstance(history, Sequence):
        raise TypeError(
            "history must be a list of ChatMessages (e.g. an earlier result.all_messages), got "
            f"{_shown(history)}"
        )
    for i, m in enumerate(history):
        if not isinstance(m, ChatMessage):
            raise TypeError(
                f"history[{i}] is {_shown(m)}, not a ChatMessage; pass an earlier "
                "result.all_messages, or ChatMessage.from_text(role, text) for each message"
            )
    return list(history)


def check_metadata(metadata: object) -> None:
    """``metadata`` must be a dict (JSON values), or None."""
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {_shown(metadata)}")


def check_callable(name: str, value: object, expected: str) -> None:
    """``value`` must be callable (or None)."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")


def _shown(value: object) -> str:
    """A value as an error message names it: its type, and the value when short."""
    kind = type(value).__name__
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return f"the {kind} {text if len(text) <= 60 else text[:57] + '...'}"
    return f"a {kind}"


def run_arguments(
    session: object, history: object, tools: object, metadata: object
) -> tuple[Session | None, list[ChatMessage] | None]:
    """A run's arguments, checked before anything starts."""
    check_tools_argument(tools)
    check_metadata(metadata)
    return check_session(session), check_history(history)


def as_messages(prompt: Prompt) -> list[ChatMessage]:
    if isinstance(prompt, str):
        return [ChatMessage.from_text(ChatRole.USER, prompt)]
    if isinstance(prompt, ChatMessage):
        return [prompt]
    messages: list[ChatMessage] = []
    for m in prompt if isinstance(prompt, Sequence) else [None]:
        if not isinstance(m, ChatMessage):
            raise TypeError(
                "the prompt must be a string, a ChatMessage or a list of ChatMessages; got "
                f"{type(prompt).__name__}"
                + (f" holding a {type(m).__name__}" if m is not None else "")
            )
        messages.append(m)
    if not messages:
        raise ValueError("the prompt is an empty list of messages: give the model something")
    return messages


def as_tools(tools: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
    found: list[Tool] = []
    for t in tools:
        if isinstance(t, Tool):
            found.append(t)
        elif callable(t):
            found.append(FunctionTool(t))
        elif isinstance(t, str):
            raise TypeError(
                f"a tool must be a Tool or a function, got the string {t!r}: pass the function "
                f"(or Tool) itself, tools=[{t}]"
            )
        else:
            raise TypeError(f"a tool must be a Tool or a function, got {t!r}")
    return unique_tools(found)


def unique_tools(tools: list[Tool]) -> list[Tool]:
    seen: set[str] = set()
    for t in tools:
        if t.name in seen:
            raise ValueError(f"two tools are named {t.name!r}; tool names must be unique")
        seen.add(t.name)
    return tools
