"""Questions in a run's thread: the thread's session (persisted in SQLite) holds the run's
context and every question and answer, so a later message resumes it with everything before,
also after the bot restarted.

The first question seeds the session with the card and the run as its log has it (each round's
message, each tool call with its arguments and result, the result line); the model answers with
that and the thread's earlier questions and answers before it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopkit.abstractions.chat import ChatClient
from loopkit.abstractions.content import ChatMessage
from loopkit.agents.agent import Agent
from loopkit.sessions.sqlite import SQLiteSession
from loopkit_board.slack.progress import LogFollower
from loopkit_board.slack.runs import RunStatus

__all__ = ["INSTRUCTIONS", "ThreadChat", "run_context"]

INSTRUCTIONS = (
    "You answer questions about a card run of loopkit (a model implementing a Kanban card in a "
    "desktop app) in a Slack thread. The run's card and its log are in the conversation. Answer "
    "briefly and precisely; quote rounds and tool calls by their numbers."
)
#: A tool result is cut to this many characters in the context (the log keeps up to 4,000).
RESULT_CHARS = 1500


def run_context(card: Path, status: RunStatus | None, log_path: Path | None) -> str:
    """The run as one message: the card, its rounds and tool calls, its result so far."""
    try:
        card_text = card.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        card_text = f"(the card file {card} cannot be read: {e.strerror})"
    parts = [f"The card ({card.name}):\n{card_text.strip()}", "The run's log:"]
    events = LogFollower(log_path).read_new() if log_path is not None else []
    for event in events:
        data: dict[str, Any] = event.get("data") or {}
        kind = event.get("type")
        if kind == "round":
            calls = ", ".join(data.get("calls") or []) or "none"
            parts.append(f"round {data.get('round')}: text {data.get('text')!r}; calls: {calls}")
        elif kind == "tool":
            result = str(data.get("result", ""))[:RESULT_CHARS]
            arguments = json.dumps(data.get("arguments") or {}, ensure_ascii=False)
            parts.append(f"  tool {data.get('name')} {arguments} -> {result}")
        elif kind == "result":
            parts.append(f"result: {json.dumps(data, ensure_ascii=False)}")
    if status is not None:
        parts.append(
            f"The run {status.run_id} is {status.state}"
            + (f" ({status.reason})" if status.reason else "")
            + f"; {status.rounds} rounds, {status.tokens} tokens"
            + (f", commit {status.commit}" if status.commit else "")
        )
    return "\n".join(parts)


class ThreadChat:
    """Answers questions in threads; ``model`` makes the chat client (called once, lazily)."""

    def __init__(self, sessions_path: Path, model: Callable[[], ChatClient]) -> None:
        self.sessions_path = sessions_path
        self._model_factory = model
        self._model: ChatClient | None = None

    def _agent(self) -> Agent[str]:
        if self._model is None:
            self._model = self._model_factory()
        return Agent(self._model, instructions=INSTRUCTIONS, max_rounds=4)

    async def answer(self, session_id: str, question: str, context: Callable[[], str]) -> str:
        """The answer to ``question`` in the session ``session_id``; ``context`` gives the
        run's context the first time (a new session)."""
        async with SQLiteSession(self.sessions_path, session_id) as session:
            if not await session.get_messages(limit=1):
                await session.add_messages([ChatMessage.from_text("user", context())])
            result = await self._agent().run(question, session=session)
        return result.output
