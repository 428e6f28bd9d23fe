"""Chat about a run: the run's conversation as a stored session, and a model to ask.

A run's conversation is rebuilt from its run log (the card it was given, each round's text and
calls, each call's result as the model read it) and stored once in a
:class:`~loopkit.sessions.sqlite.SQLiteSession` (id ``run:<run id>`` by default, or the caller's,
e.g. a Slack thread). Each question is an :meth:`Agent.run_stream <loopkit.agents.Agent.run_stream>`
on that session: the model reads the whole run, then every earlier question and answer, and the
new turn is appended. The session lives in a file, so a restarted board (or bot) goes on with
the same conversation.

Without a model key the board answers with :class:`RunLogAnswerer`, an offline model that reads
the same context and answers from it (what happened at round N, how the run ended); it says so in
its answers. With a model string (``anthropic/...``, ``openai/...``) the question goes to that
model through litellm, the run's calls and results written out as text (the chat offers no
tools, and some providers refuse tool calls whose tools are not declared).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)

__all__ = [
    "CHAT_INSTRUCTIONS",
    "RunLogAnswerer",
    "as_plain_text",
    "chat_model",
    "conversation_from_log",
    "is_offline",
]

CHAT_INSTRUCTIONS = (
    "You are looking back at a finished or running agent run: the conversation so far is that "
    "run (the card it was given, your rounds, the tools you called and what they returned). "
    "Answer the user's questions about it precisely, citing round numbers and tool calls. "
    "Do not call tools."
)

_ROUND = re.compile(r"\b(?:step|round)\s*#?\s*(\d+)", re.IGNORECASE)


def conversation_from_log(card_prompt: str, log_path: Path) -> list[ChatMessage]:
    """The run's conversation from its run log: the card as the first user message, then for
    each round the assistant's text and calls, then the tool message with their results. A
    round whose calls have no results (the run stopped there) is left out: a stored session
    never holds a call without its result."""
    messages = [ChatMessage.from_text(ChatRole.USER, card_prompt)]
    pending: list[FunctionCallContent] = []
    results: list[FunctionResultContent] = []
    text = ""
    rounds = 0

    def close_round() -> None:
        if pending and len(results) == len(pending):
            contents: list[Any] = [TextContent(text=text)] if text else []
            messages.append(ChatMessage(role=ChatRole.ASSISTANT, contents=[*contents, *pending]))
            messages.append(ChatMessage(role=ChatRole.TOOL, contents=list(results)))
        elif not pending and text:
            messages.append(ChatMessage.from_text(ChatRole.ASSISTANT, text))

    try:
        raw_lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        raw_lines = []
    for raw in raw_lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or line.get("parent_run_id"):
            continue
        kind, data = line.get("type"), line.get("data") or {}
        if kind == "round":
            close_round()
            rounds += 1
            pending, results, text = [], [], str(data.get("text") or "")
            number = data.get("round", rounds)
            for i, name in enumerate(data.get("calls") or []):
                pending.append(
                    FunctionCallContent(call_id=f"r{number}c{i}", name=str(name), arguments={})
                )
        elif kind == "tool" and len(results) < len(pending):
            call = pending[len(results)]
            if isinstance(data.get("arguments"), dict):
                pending[len(results)] = call.model_copy(update={"arguments": data["arguments"]})
            results.append(
                FunctionResultContent(
                    call_id=call.call_id,
                    result=str(data.get("result", "")),
                    error=bool(data.get("error")),
                )
            )
        elif kind == "result":
            close_round()
            pending, results, text = [], [], ""
            status = data.get("status")
            note = f"[the run ended: {status}" + (
                f": {data['reason']}]" if data.get("reason") else "]"
            )
            messages.append(ChatMessage.from_text(ChatRole.ASSISTANT, note))
    close_round()
    return messages


def as_plain_text(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The same conversation with every call and result written out as text, user and
    assistant turns alternating: a hosted model asked about the run is not offered the run's
    tools, and some providers refuse tool calls in a history whose tools are not declared."""
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == ChatRole.TOOL:
            lines = [f"[result of {r.call_id}{' (error)' if r.error else ''}]\n{r.result}"
                     for r in m.function_results]  # fmt: skip
            role, text = ChatRole.USER, "\n".join(lines)
        elif m.function_calls:
            calls = [f"[call {c.call_id}] {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                     for c in m.function_calls]  # fmt: skip
            role, text = ChatRole.ASSISTANT, "\n".join([*([m.text] if m.text else []), *calls])
        else:
            role, text = m.role, m.text
        if out and out[-1].role == role:  # two turns of one side in a row: one turn
            text = f"{out[-1].text}\n\n{text}"
            out.pop()
        out.append(ChatMessage.from_text(role, text))
    return out


class RunLogAnswerer:
    """An offline model for the chat: it answers from the conversation it is sent (the run, then
    the questions), with no key and no network. "What happened at step 12?" describes round 12
    (its text, each call with its arguments and result); "did the build succeed?" gives every
    build's result, "which files changed?" the files written and the commit, "what failed?" the
    calls that failed and how the run ended; anything else gets the run's outline. Its answer
    streams word by word, as a real model's would."""

    model_id = "offline"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        text = self.answer(messages)
        return ChatResponse(
            messages=[ChatMessage.from_text(ChatRole.ASSISTANT, text)],
            model_id=self.model_id,
            finish_reason="stop",
        )

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        text = self.answer(messages)
        for piece in re.findall(r"\S+\s*|\s+", text):
            yield ChatResponseUpdate(
                role=ChatRole.ASSISTANT, contents=[TextContent(text=piece)], model_id="offline"
            )

    def answer(self, messages: Sequence[ChatMessage]) -> str:
        """The answer to the last user message, from the messages before it."""
        question = next((m.text for m in reversed(messages) if m.role == ChatRole.USER), "")
        rounds: list[tuple[ChatMessage, ChatMessage | None]] = []
        for i, m in enumerate(messages):
            if m.role == ChatRole.ASSISTANT and m.function_calls:
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                rounds.append((m, nxt if nxt is not None and nxt.role == ChatRole.TOOL else None))
        asked = _ROUND.search(question)
        prefix = "(offline answer from the run log; no model key is set) "
        if asked is not None:
            n = int(asked.group(1))
            if not 1 <= n <= len(rounds):
                return f"{prefix}The run has {len(rounds)} rounds with tool calls; there is no {n}."
            call_msg, result_msg = rounds[n - 1]
            parts = [f"{prefix}At round {n}"]
            if call_msg.text:
                parts.append(f" the model wrote: {call_msg.text.strip()[:300]!r}, and")
            parts.append(" it called:")
            results = {r.call_id: r for r in (result_msg.function_results if result_msg else [])}
            for call in call_msg.function_calls:
                got = results.get(call.call_id)
                shown = (got.result if got else "")[:200].replace("\n", " ")
                args = json.dumps(call.arguments, ensure_ascii=False)
                parts.append(f"\n- {call.name}({args}) → {shown}")
            return "".join(parts)
        ending = next(
            (m.text for m in reversed(messages) if m.text.startswith("[the run ended")), None
        )
        steps = _steps(rounds)
        for topic in _TOPICS:
            if topic.pattern.search(question):
                return prefix + topic.answer(steps, ending)
        calls = sum(len(m.function_calls) for m, _ in rounds)
        tools = sorted({c.name for m, _ in rounds for c in m.function_calls})
        return (
            f"{prefix}The run made {len(rounds)} rounds of tool calls ({calls} calls: "
            f"{', '.join(tools) or 'none'}). {ending or 'It has not ended yet.'} "
            "Ask about a round, e.g. 'what happened at step 3?'."
        )


@dataclass(frozen=True, slots=True)
class _Step:
    """One tool call of the run as the chat reads it: its round, name, arguments, result."""

    round: int
    name: str
    arguments: dict[str, Any]
    result: str
    error: bool

    def first_line(self, limit: int = 200) -> str:
        line = next((x.strip() for x in self.result.splitlines() if x.strip()), "(no output)")
        return line[:limit]


def _steps(rounds: list[tuple[ChatMessage, ChatMessage | None]]) -> list[_Step]:
    steps: list[_Step] = []
    for n, (call_msg, result_msg) in enumerate(rounds, start=1):
        results = {r.call_id: r for r in (result_msg.function_results if result_msg else [])}
        for call in call_msg.function_calls:
            got = results.get(call.call_id)
            result = str(got.result) if got is not None else ""
            failed = bool(got.error) if got is not None else False
            failed = failed or result.startswith("Error")
            steps.append(_Step(n, call.name, dict(call.arguments), result, failed))
    return steps


def _build_answer(steps: list[_Step], ending: str | None) -> str:
    builds = [s for s in steps if "build" in s.name]
    if not builds:
        return "The run did not build the app (no build call in its log)."
    last = builds[-1]
    ok = not last.error and not re.search(r"\b(fail|error)", last.result, re.IGNORECASE)
    lines = [
        f"{'Yes' if ok else 'No'}: the last build (round {last.round}, {last.name}) "
        f"{'succeeded' if ok else 'failed'}: {last.first_line()}"
    ]
    if len(builds) > 1:
        lines.append(f"All {len(builds)} builds:")
        lines += [f"- round {b.round}: {b.first_line(120)}" for b in builds]
    return "\n".join(lines)


_WRITES = ("edit_file", "write_file", "apply_patch", "create_file", "delete_file")


def _files_answer(steps: list[_Step], ending: str | None) -> str:
    changed: dict[str, list[int]] = {}
    for s in steps:
        path = s.arguments.get("path")
        if s.name in _WRITES and isinstance(path, str) and not s.error:
            at = changed.setdefault(path, [])
            if s.round not in at:
                at.append(s.round)
    commits = [s for s in steps if "commit" in s.name and not s.error]
    lines: list[str] = []
    if changed:
        lines.append(f"The run changed {len(changed)} file{'s' * (len(changed) != 1)}:")
        for path, at in changed.items():
            lines.append(f"- {path} (round{'s' * (len(at) > 1)} {', '.join(map(str, at))})")
    else:
        lines.append("The run wrote no file with the file tools.")
    for c in commits:
        lines.append(f"Commit at round {c.round}: {c.result.strip()[:600]}")
    if not commits:
        lines.append("It made no commit.")
    return "\n".join(lines)


def _failure_answer(steps: list[_Step], ending: str | None) -> str:
    failed = [s for s in steps if s.error]
    lines: list[str] = []
    if failed:
        first = failed[0]
        lines.append(
            f"The first failing step is round {first.round}: {first.name}"
            f"({json.dumps(first.arguments, ensure_ascii=False)[:200]}) → {first.first_line()}"
        )
        if len(failed) > 1:
            lines.append(f"{len(failed)} calls failed in all:")
            lines += [f"- round {s.round}: {s.name} → {s.first_line(120)}" for s in failed]
    else:
        lines.append("No tool call failed.")
    lines.append(ending or "The run has not ended yet.")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Topic:
    pattern: re.Pattern[str]
    answer: Any


_TOPICS = (
    _Topic(re.compile(r"\bbuil(d|t)", re.IGNORECASE), _build_answer),
    _Topic(
        re.compile(r"\b(files?|changed?|changes|edit(ed|s)?|diff|commit(ted)?|wrote)\b", re.I),
        _files_answer,
    ),
    _Topic(re.compile(r"\b(fail\w*|error\w*|wrong|broke\w*|went wrong)\b", re.I), _failure_answer),
)


def is_offline(model: str) -> bool:
    """Whether ``model`` names the offline answerer."""
    return model in ("offline", "scripted")


def chat_model(model: str, *, api_base: str | None = None) -> ChatClient:
    """The chat's model: ``offline``/``scripted`` → :class:`RunLogAnswerer`, else a litellm
    model string."""
    if is_offline(model):
        return RunLogAnswerer()
    from loopkit.providers.litellm import LiteLLMChatClient

    return LiteLLMChatClient(model, api_base=api_base)
