"""The A2A servers of ``bench/test_interop_bench.py``, each in a process of its own:
``python bench/interop_servers.py loopkit|fasta2a`` serves the same scripted agent (one tool
call, then the answer) on 127.0.0.1 at a free port and prints its URL.

- loopkit: ``to_a2a(Agent(FunctionChatClient(...)))`` (in-memory sessions).
- pydantic-ai: ``fasta2a.pydantic_ai.agent_to_a2a(Agent(FunctionModel(...)))``. fasta2a 2.1.1
  writes task timestamps without a timezone, which a2a-sdk 1.3's client refuses; here (and only
  here) its storage's clock is patched to write aware UTC times.
"""

from __future__ import annotations

import socket
import sys
from datetime import UTC, datetime
from typing import Any

import uvicorn

TOOL_RESULT = "Oslo: 18 C"
ANSWER = "It is 18 C in Oslo."


def lookup(city: str) -> str:
    """The weather in a city."""
    return TOOL_RESULT


def loopkit_app(url: str) -> Any:
    from loopkit import Agent, ChatMessage, FunctionCallContent, FunctionChatClient
    from loopkit.interop import to_a2a

    def model(messages: list[ChatMessage], options: Any) -> Any:
        if messages[-1].role == "user":
            call = FunctionCallContent(call_id="c1", name="lookup", arguments={"city": "Oslo"})
            return ChatMessage(role="assistant", contents=[call])
        return ANSWER

    agent = Agent(FunctionChatClient(model), name="weather", tools=[lookup])
    return to_a2a(agent, url=url)


def fasta2a_app(url: str) -> Any:
    import fasta2a.storage
    from fasta2a.pydantic_ai import agent_to_a2a
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    class AwareDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
            return datetime.now(tz or UTC)

    fasta2a.storage.datetime = AwareDatetime  # type: ignore[misc]

    def model(messages: list[Any], info: Any) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(ANSWER)])
        return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Oslo"}, tool_call_id="c1")])

    agent = Agent(FunctionModel(model), name="weather", tools=[lookup])
    return agent_to_a2a(agent, url=url)


def main() -> None:
    kind = sys.argv[1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = loopkit_app(url) if kind == "loopkit" else fasta2a_app(url)
    print(url, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
