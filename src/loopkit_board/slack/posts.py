"""What the bot writes in a run's thread: the progress (new tool calls and the model's
messages), the result line, and the files (the run's HTML report and its GIFs)."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit_board.artifacts import open_run_file, read_run_file, write_run_file

if TYPE_CHECKING:
    from loopkit.cards.durable import CardRunRecord
    from loopkit_board.feed import RunEvent
    from loopkit_board.service import BoardService

__all__ = [
    "MAX_UPLOAD_BYTES",
    "PROBE_KINDS",
    "RunFile",
    "format_events",
    "place",
    "result_line",
    "run_files",
]

#: Events a run's feed makes from probing the queue, not from its log (not posted as progress,
#: and not counted: their numbering differs from one follower to the next).
PROBE_KINDS = frozenset({"queued", "state", "files", "end"})
#: A tool's arguments and result are cut to this many characters in a post.
SHORT = 120
#: Slack shows up to 40,000 characters of a message; a post stays well below.
MAX_POST = 3500
#: A run's file is uploaded up to this size (a bigger one is left on the board).
MAX_UPLOAD_BYTES = 50_000_000


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
        elif event.kind == "approval_requested":
            args = _short(data.get("arguments") or {})
            n = data.get("number")
            lines.append(
                f":raising_hand: *approval {n}*: the run waits to call `{data.get('name')}` "
                f"{args}. Reply `approve {n}` or `deny {n}` (a note may follow) in this thread."
            )
        elif event.kind == "approval":
            said = "approved" if data.get("approved") else "refused"
            lines.append(f"approval {data.get('number')} {said} by {data.get('by')}")
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


@dataclass(frozen=True, slots=True)
class RunFile:
    """A file to upload to a run's thread: its name and its bytes (read once, checked)."""

    name: str
    data: bytes


async def run_files(service: BoardService, run_id: str) -> list[RunFile]:
    """The run's HTML report (the board's, self-contained) and its GIFs; a run whose test
    scripts made no GIF gets one of its screenshots, in the order taken. Every file is read as
    the board serves it (:func:`~loopkit_board.artifacts.read_run_file`: a regular file with one
    link, no symlink on the way, never in ``repo/``), so a link the run's code planted uploads
    nothing."""
    report = await service.report(run_id)
    details = await service.run_details(run_id)
    folder = details.artifacts.folder if details is not None else None
    if folder is None or details is None:
        return []
    return await asyncio.to_thread(_collect, folder, details.artifacts.images, report)


def _collect(folder: Path, images: list[str], report: Path | None) -> list[RunFile]:
    files: list[RunFile] = []
    if report is not None:
        data = read_run_file(report.parent, report.name, max_bytes=MAX_UPLOAD_BYTES)
        if data is not None:
            files.append(RunFile(report.name, data))
    gifs = [name for name in images if name.endswith(".gif")]
    shots = [name for name in images if name.endswith(".png")]
    if not gifs and shots:
        made = _gif_of(folder, shots)
        if made is not None:
            gifs = [made]
    for name in gifs:
        data = read_run_file(folder, name, max_bytes=MAX_UPLOAD_BYTES)
        if data is not None:
            files.append(RunFile(Path(name).name, data))
    return files


def _gif_of(folder: Path, shots: list[str]) -> str | None:
    """``run.gif`` in the run folder made from its screenshots (in the order taken); None
    without pillow (the ui extra) or without a screenshot that can be read."""
    try:
        from loopkit_ui.scripts.report import write_gif
    except ImportError:  # pillow (the ui extra) is missing: the report still goes
        return None
    with tempfile.TemporaryDirectory(prefix="loopkit-gif-") as private:
        taken: list[tuple[int, Path]] = []
        for i, name in enumerate(shots):
            fd = open_run_file(folder, name)
            if fd is None:
                continue
            with os.fdopen(fd, "rb") as f:
                when = os.fstat(f.fileno()).st_mtime_ns
                data = f.read(MAX_UPLOAD_BYTES + 1)
            if len(data) <= MAX_UPLOAD_BYTES:
                copy = Path(private) / f"{i}.png"
                copy.write_bytes(data)
                taken.append((when, copy))
        if not taken:
            return None
        try:
            gif = write_gif([p for _, p in sorted(taken)], Path(private) / "run.gif")
        except (OSError, ValueError, SyntaxError):  # not images after all (PIL's SyntaxError)
            return None
        write_run_file(folder, "run.gif", gif.read_bytes())
    return "run.gif"
