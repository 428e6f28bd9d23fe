"""A run's HTML report: one self-contained file (screenshots inline), written in its run folder.

The board links it from the run page and the Slack bot uploads it at a run's end. It holds the
result line, the run's numbers, the timeline from the run log (each round's text and calls,
each tool call with its arguments and a short result), the screenshots and GIFs (as data URIs,
up to :data:`MAX_INLINE_BYTES` in all) and the commit's diff.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from loopkit_board.artifacts import read_run_file, run_artifacts, write_run_file
from loopkit_board.feed import log_events

if TYPE_CHECKING:
    from loopkit.cards.durable import CardRunRecord, PreparedRun

__all__ = ["MAX_INLINE_BYTES", "REPORT_FILE", "timeline_lines", "write_report"]

#: The report's file name in the run folder.
REPORT_FILE = "board-report.html"
#: Images are inlined up to this many bytes in all (the rest are left out, named).
MAX_INLINE_BYTES = 8_000_000

_jinja = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)


def timeline_lines(log_path: Path) -> list[dict[str, str]]:
    """The run log as one readable line an event (``kind``, ``line``)."""
    lines: list[dict[str, str]] = []
    try:
        raw_lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return lines
    for raw in raw_lines:
        try:
            made = log_events(json.loads(raw))
        except (ValueError, AttributeError):
            continue
        if made is None:
            continue
        kind, d = made
        if kind == "round":
            calls = ", ".join(d.get("calls") or [])
            text = f"round {d.get('round')} · {d.get('input_tokens')} in / "
            text += f"{d.get('output_tokens')} out tokens"
            text += (f" · calls {calls}" if calls else "") + (
                f"\n{d['text']}" if d.get("text") else ""
            )
        elif kind == "tool":
            args = json.dumps(d.get("arguments"), ensure_ascii=False)
            text = f"{d.get('name')}({args}) {d.get('ms')} ms{' ERROR' if d.get('error') else ''}"
            text += f"\n→ {d.get('result')}"
        elif kind == "result":
            text = f"result: {d.get('status')}" + (f" ({d['reason']})" if d.get("reason") else "")
        else:
            text = f"{kind}: {json.dumps(d, ensure_ascii=False)[:300]}"
        lines.append({"kind": kind, "line": text})
    return lines


def write_report(
    record: CardRunRecord, prepared: PreparedRun, *, shown: Callable[[object], str] = str
) -> Path:
    """Write (again) the run's report in its run folder and return its path; ``shown`` writes
    the paths in the card's name, the reason and the timeline (the board's
    :class:`~loopkit_board.shown_paths.PathShortener`: no server folder in the report)."""
    folder = Path(prepared.run_dir)
    artifacts = run_artifacts(folder, base=prepared.base)
    images: list[tuple[str, str]] = []
    budget = MAX_INLINE_BYTES
    for name in artifacts.images:
        data = read_run_file(folder, name, max_bytes=budget)  # no link, no hard link
        if data is None:
            continue
        budget -= len(data)
        media = mimetypes.guess_type(name)[0] or "image/png"
        images.append((name, f"data:{media};base64,{base64.b64encode(data).decode()}"))
    values: dict[str, Any] = {
        "r": record,
        "events": timeline_lines(Path(prepared.log_path)),
        "images": images,
        "diff": artifacts.diff,
        "shown": shown,
    }
    html = _jinja.get_template("report.html").render(**values)
    return write_run_file(folder, REPORT_FILE, html.encode("utf-8"))
