"""The chat about a run, for :class:`~loopkit_board.service.BoardService`: the session a run's
conversation is stored in (in the data folder), a question asked on it, and its history (see
:mod:`loopkit_board.chat` for the conversation rebuilt from the run log and the models that
answer). The service checks the question and finds the run before it asks here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.content import ChatMessage, ChatRole

if TYPE_CHECKING:
    from loopkit.cards.durable import PreparedRun

__all__ = ["CHATS_FILE", "ask", "chat_history"]

#: The file of the chat sessions, in the data folder.
CHATS_FILE = "chats.sqlite"


def _session(data_dir: Path, run_id: str, session_id: str | None) -> Any:
    from loopkit.sessions.sqlite import SQLiteSession

    return SQLiteSession(data_dir / CHATS_FILE, session_id or f"run:{run_id}")


async def ask(
    data_dir: Path,
    run_id: str,
    prepared: PreparedRun,
    question: str,
    *,
    chat_model: str,
    api_base: str | None,
    session_id: str | None = None,
) -> AsyncIterator[str]:
    """Ask ``question`` about run ``run_id`` (``prepared``: what its start recorded), with
    ``chat_model`` (see
    :meth:`BoardService.ask <loopkit_board.service.BoardService.ask>`)."""
    from loopkit.agents import Agent, TextDelta
    from loopkit.cards.runner import CARD_PREFIX
    from loopkit_board.chat import (
        CHAT_INSTRUCTIONS,
        as_plain_text,
        conversation_from_log,
        is_offline,
    )
    from loopkit_board.chat import (
        chat_model as chat_model_for,
    )

    agent = Agent(
        chat_model_for(chat_model, api_base=api_base),
        instructions=CHAT_INSTRUCTIONS,
        max_rounds=1,
    )
    run_text = conversation_from_log(CARD_PREFIX + prepared.card_text, Path(prepared.log_path))
    async with _session(data_dir, run_id, session_id) as session:
        meta = await session.get_metadata()
        taken = int(meta.get("run_messages", 0))
        if len(run_text) > taken:
            # The run's messages the chat has not seen: all of it the first time, then what
            # the run did since the last question (a run asked about while it runs).
            new = run_text[taken:]
            if taken:
                note = "[the run went on since the last question:]"
                new = [ChatMessage.from_text(ChatRole.USER, note), *new]
            if not is_offline(chat_model):
                new = as_plain_text(new)
            stored = len(await session.get_messages())
            await session.add_messages(new)
            parts = [*meta.get("run_parts", []), [stored, stored + len(new)]]
            await session.set_metadata(
                {"run_id": run_id, "run_messages": len(run_text), "run_parts": parts}
            )
        async for event in agent.run_stream(question, session=session):
            if isinstance(event, TextDelta):
                yield event.text


async def chat_history(
    data_dir: Path, run_id: str, session_id: str | None = None
) -> list[ChatMessage]:
    """See :meth:`BoardService.chat_history <loopkit_board.service.BoardService.chat_history>`."""
    async with _session(data_dir, run_id, session_id) as session:
        meta = await session.get_metadata()
        messages: list[ChatMessage] = await session.get_messages()
    run_own = {i for start, end in meta.get("run_parts", []) for i in range(start, end)}
    return [m for i, m in enumerate(messages) if i not in run_own]
