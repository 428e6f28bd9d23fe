"""The README's example, runnable without an API key.

python examples/library_quickstart.py               # a scripted model plays the model's side
python examples/library_quickstart.py anthropic/claude-sonnet-4-5   # a real model via litellm
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Annotated

from loopkit import (
    Agent,
    ChatClient,
    ChatClientBuilder,
    LiteLLMChatClient,
    Script,
    ScriptedChatClient,
    tool,
)


@tool
def get_weather(city: Annotated[str, "city name"]) -> str:
    """Current weather for a city."""
    return f"{city}: 18 °C, light rain"


@tool
def convert(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


# What a model would do: ask for the weather, convert, answer. Each result is checked (strict).
OFFLINE_MODEL = Script.model_validate(
    {
        "turns": [
            {
                "calls": [
                    {
                        "name": "get_weather",
                        "arguments": {"city": "Oslo"},
                        "expect": {"contains": "18 °C"},
                    }
                ]
            },
            {
                "calls": [
                    {"name": "convert", "arguments": {"celsius": 18}, "expect": {"equals": "64.4"}}
                ]
            },
            {"text": "Oslo: 64.4 °F with light rain."},
        ]
    }
)


async def main(model_name: str | None) -> str:
    model: ChatClient = (
        LiteLLMChatClient(model_name) if model_name else ScriptedChatClient(OFFLINE_MODEL)
    )
    log = Path(tempfile.gettempdir()) / "loopkit-quickstart.jsonl"
    agent = Agent(
        ChatClientBuilder(model).use_run_log(log),
        instructions="Answer in one sentence.",
        tools=[get_weather, convert],
        max_rounds=10,
    )
    result = await agent.run("Weather in Oslo, in Fahrenheit?")
    print(result.output)
    print(f"run log: {log}")
    return result.output


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
