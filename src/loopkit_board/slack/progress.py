"""A run's progress for its Slack thread: the new lines of its run log, told briefly.

The run log (JSON lines, written and flushed as the run goes, see docs/run-log.md) is read from
where the last read stopped; a line still being written is left for the next read. Each post
lists the new tool calls (name, arguments, a short result) and the model's messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LogFollower", "format_events", "result_line"]

#: A tool's arguments and result are cut to this many characters in a post.
SHORT = 120
#: Slack shows up to 40,000 characters of a message; a post stays well below.
MAX_POST = 3500


@dataclass
class LogFollower:
    """Reads a run log's complete new lines; ``offset`` is where the next read starts (keep it
    to go on after a restart)."""

    path: Path
    offset: int = 0

    def read_new(self) -> list[dict[str, Any]]:
        """The events written since the last read (none when the log is not there yet)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        events: list[dict[str, Any]] = []
        for line in chunk[: end + 1].splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not ours to judge: the board shows the log as it is
            if isinstance(event, dict):
                events.append(event)
        return events


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def format_events(events: list[dict[str, Any]]) -> str | None:
    """One post for these events: each round's message and each tool call (None: nothing
    worth a post)."""
    lines: list[str] = []
    for event in events:
        data = event.get("data") or {}
        kind = event.get("type")
        if kind == "round":
            text = str(data.get("text") or "").strip()
            if text:
                lines.append(f"*round {data.get('round')}*: {_short(text)}")
        elif kind == "tool":
            mark = ":x:" if data.get("error") else "•"
            args = _short(data.get("arguments") or {})
            lines.append(f"{mark} `{data.get('name')}` {args} → {_short(data.get('result', ''))}")
        elif kind in ("interrupted", "resumed", "cancelled"):
            lines.append(f"_{kind}_: {_short(data.get('reason') or data)}")
    if not lines:
        return None
    post = "\n".join(lines)
    if len(post) > MAX_POST:
        post = post[:MAX_POST] + "\n… (more in the run log)"
    return post


def result_line(
    state: str, reason: str | None, rounds: int, tokens: int, commit: str | None
) -> str:
    """The run's last post: its result, rounds, tokens and commit."""
    head = {"done": ":white_check_mark: RESULT: done", "cancelled": ":no_entry: cancelled"}.get(
        state, f":x: RESULT: failed: {reason or state}"
    )
    tail = f"{rounds} rounds, {tokens:,} tokens"
    if commit:
        tail += f", commit {commit}"
    return f"{head} ({tail})"
