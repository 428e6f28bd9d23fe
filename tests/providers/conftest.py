"""Fixtures for the litellm provider tests: fake model servers on 127.0.0.1 and clients aimed at them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from loopkit.providers.litellm import LiteLLMChatClient
from tests.fakes.fake_llm_server import FakeLLMServer, WireFormat

#: A dummy key: no model API keys exist on the build machines, the fake server accepts anything.
DUMMY_KEY = "sk-loopkit-test-0123456789abcdef"

MODELS: dict[WireFormat, str] = {
    "openai": "openai/gpt-test",
    "anthropic": "anthropic/claude-sonnet-4-5",
}


@dataclass
class Wire:
    """A running fake server and a factory for clients pointed at it."""

    format: WireFormat
    server: FakeLLMServer

    @property
    def model(self) -> str:
        return MODELS[self.format]

    def client(self, **kwargs: Any) -> LiteLLMChatClient:
        kwargs.setdefault("api_key", DUMMY_KEY)
        return LiteLLMChatClient(self.model, api_base=self.server.api_base, **kwargs)


@pytest.fixture(params=["openai", "anthropic"])
def wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    """Each test runs once against each wire format."""
    with FakeLLMServer(request.param) as server:
        yield Wire(request.param, server)


@pytest.fixture
def openai_wire() -> Iterator[Wire]:
    with FakeLLMServer.openai() as server:
        yield Wire("openai", server)


@pytest.fixture
def anthropic_wire() -> Iterator[Wire]:
    with FakeLLMServer.anthropic() as server:
        yield Wire("anthropic", server)


@pytest.fixture
def recorded_sleep() -> tuple[list[float], Callable[[float], Any]]:
    """A sleep for RetryingChatClient that records the waits instead of waiting."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return waits, sleep
