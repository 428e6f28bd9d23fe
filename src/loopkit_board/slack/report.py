"""The files a run's thread gets at its end: the run's HTML reports and GIFs.

A run that ran UI test scripts (the script runner) already has ``report.html`` and ``run.gif``
files in its folder: those are sent. A run that has none gets them made here from what it left:
a GIF of its screenshots (the UI server's PNGs in the run's ``ui`` folder, in the order taken)
and an HTML report of its log (each round's message, each tool call with its arguments and
result, the result line). Nothing from the run's scratch repository is sent.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from loopkit_board.slack.progress import LogFollower
from loopkit_board.slack.runs import RunStatus

__all__ = ["run_files", "write_run_report"]


def _found(run_dir: Path, pattern: str) -> list[Path]:
    return sorted(
        (p for p in run_dir.rglob(pattern) if p.relative_to(run_dir).parts[0] != "repo"),
        key=lambda p: (p.stat().st_mtime, str(p)),
    )


def write_run_report(log_path: Path, status: RunStatus, path: Path) -> Path:
    """An HTML page of the run's log (self-contained, every value escaped)."""
    rows: list[str] = []
    events: list[dict[str, Any]] = LogFollower(log_path).read_new()
    for event in events:
        data: dict[str, Any] = event.get("data") or {}
        kind = str(event.get("type"))
        if kind == "round":
            detail = f"{escape(str(data.get('text') or ''))}"
            tokens = f"{data.get('input_tokens', 0)} in, {data.get('output_tokens', 0)} out"
            detail += f" <small>({escape(tokens)})</small>"
            name = f"round {escape(str(data.get('round')))}"
        elif kind == "tool":
            arguments = json.dumps(data.get("arguments") or {}, ensure_ascii=False)
            detail = (
                f"<code>{escape(arguments)}</code><pre>{escape(str(data.get('result', '')))}</pre>"
            )
            name = f"{'✗ ' if data.get('error') else ''}{escape(str(data.get('name')))}"
        else:
            detail = f"<code>{escape(json.dumps(data, ensure_ascii=False))}</code>"
            name = escape(kind)
        rows.append(
            f"<tr><td>{escape(str(event.get('time', '')))}</td><td>{name}</td>"
            f"<td>{detail}</td></tr>"
        )
    summary = f"{status.state}" + (f": {status.reason}" if status.reason else "")
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Run {escape(status.run_id)}</title><style>"
        "body{font-family:sans-serif}td{vertical-align:top;border-top:1px solid #ddd;padding:4px}"
        "pre{white-space:pre-wrap;max-height:12em;overflow:auto;margin:0}</style></head><body>"
        f"<h1>Run {escape(status.run_id)}</h1><p>{escape(summary)}; {status.rounds} rounds, "
        f"{status.tokens} tokens{', commit ' + escape(status.commit) if status.commit else ''}"
        f"</p><table>{''.join(rows)}</table></body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


def run_files(run_dir: Path, log_path: Path, status: RunStatus) -> list[Path]:
    """The run's reports and GIFs, made from its log and screenshots when it has none."""
    reports = _found(run_dir, "report.html")
    gifs = _found(run_dir, "*.gif")
    if not reports:
        reports = [write_run_report(log_path, status, run_dir / "report.html")]
    if not gifs:
        shots = _found(run_dir / "ui", "*.png") if (run_dir / "ui").is_dir() else []
        if shots:
            try:
                from loopkit_ui.scripts.report import write_gif
            except ImportError:  # pillow (the ui extra) missing: the report still goes
                return reports
            gifs = [write_gif(shots, run_dir / "run.gif")]
    return reports + gifs
