"""Small builders for core tests."""

from __future__ import annotations

from typing import Any

from loopkit import ChatMessage, ChatOptions, ChatRole
from loopkit.providers.scripted import Script, ScriptedChatClient


def script(*turns: dict[str, Any], strict: bool = True) -> ScriptedChatClient:
    return ScriptedChatClient(Script.model_validate({"turns": list(turns)}), strict=strict)


def call(name: str, expect: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments}
    if expect is not None:
        c["expect"] = expect
    return c


def user(text: str = "go") -> list[ChatMessage]:
    return [ChatMessage.from_text(ChatRole.USER, text)]


def opts(*tools: Any, **kw: Any) -> ChatOptions:
    return ChatOptions(tools=list(tools), **kw)
