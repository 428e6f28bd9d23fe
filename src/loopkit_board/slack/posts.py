"""What the bot writes in a run's thread: the progress (new tool calls and the model's
messages), the result line, and the files (the run's HTML report and its GIFs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopkit.cards.durable import CardRunRecord
    from loopkit_board.feed import RunEvent
    from loopkit_board.service import BoardService

__all__ = ["PROBE_KINDS", "format_events", "place", "result_line", "run_files"]

#: Events a run's feed makes from probing the queue, not from its log (not posted as progress,
#: and not counted: their numbering differs from one follower to the next).
PROBE_KINDS = frozenset({"queued", "state", "end"})
#: A tool's arguments and result are cut to this many characters in a post.
SHORT = 120
#: Slack shows up to 40,000 characters of a message; a post stays well below.
MAX_POST = 3500


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def format_events(events: list[RunEvent]) -> str | None:
    """One post for these events: each round's message and each tool call (None: nothing
    worth a post)."""
    lines: list[str] = []
    for event in events:
        data = event.data
        if event.kind == "round":
            text = str(data.get("text") or "").strip()
            if text:
                lines.append(f"*round {data.get('round')}*: {_short(text)}")
        elif event.kind == "tool":
            mark = ":x:" if data.get("error") else "•"
            args = _short(data.get("arguments") or {})
            lines.append(f"{mark} `{data.get('name')}` {args} → {_short(data.get('result', ''))}")
        elif event.kind in ("interrupted", "resumed", "cancelled", "error"):
            lines.append(f"_{event.kind}_: {_short(data.get('reason') or data)}")
    if not lines:
        return None
    post = "\n".join(lines)
    if len(post) > MAX_POST:
        post = post[:MAX_POST] + "\n… (more in the run's report)"
    return post


def place(state: str, position: int | None) -> str:
    """Where a run is: its queue place, or its state."""
    if position is not None:
        ahead = position - 1
        return f"queued, position {position} ({ahead} run{'s' * (ahead != 1)} before it)"
    if state in ("done", "failed", "cancelled"):
        return f"already {state}"
    return f"{state} on a worker"


def result_line(record: CardRunRecord | None, state: str, reason: str | None) -> str:
    """The run's last post: its result, rounds, tokens and commit."""
    head = {"done": ":white_check_mark: RESULT: done", "cancelled": ":no_entry: cancelled"}.get(
        state, f":x: RESULT: failed: {reason or state}"
    )
    if record is None:
        return head
    tail = f"{record.rounds} rounds, {record.tokens:,} tokens"
    if record.commit:
        tail += f", commit {record.commit}"
    return f"{head} ({tail})"


async def run_files(service: BoardService, run_id: str) -> list[Path]:
    """The run's HTML report (the board's, self-contained) and its GIFs; a run whose test
    scripts made no GIF gets one of its screenshots, in the order taken."""
    import asyncio

    files: list[Path] = []
    report = await service.report(run_id)
    if report is not None:
        files.append(report)
    details = await service.run_details(run_id)
    folder = details.artifacts.folder if details is not None else None
    if folder is None or details is None:
        return files
    images = [folder / name for name in details.artifacts.images]
    gifs = [p for p in images if p.suffix == ".gif"]
    shots = sorted((p for p in images if p.suffix == ".png"), key=lambda p: p.stat().st_mtime)
    if not gifs and shots:
        try:
            from loopkit_ui.scripts.report import write_gif
        except ImportError:  # pillow (the ui extra) is missing: the report still goes
            return files
        gifs = [await asyncio.to_thread(write_gif, shots, folder / "run.gif")]
    return files + gifs
