"""A run's link to its trace in a trace viewer: the viewer's URL (``{trace_id}`` in it) and the
trace id the run log's ``trace`` line names (docs/observability.md).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["check_tracing_url", "trace_id_in_log", "trace_url"]


def check_tracing_url(tracing_url: str) -> None:
    """:class:`ValueError` unless ``tracing_url`` is a viewer's http(s) URL with ``{trace_id}``."""
    if not (tracing_url.startswith(("http://", "https://")) and "{trace_id}" in tracing_url):
        raise ValueError(
            f"tracing_url {tracing_url!r}: expected a trace viewer's http(s) URL with "
            "{trace_id} in it, e.g. http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/"
            "{trace_id}"
        )


def trace_url(tracing_url: str, log: Path) -> str | None:
    """The page of the trace the run log ``log`` names, in the viewer of ``tracing_url``."""
    trace_id = trace_id_in_log(log)
    return None if trace_id is None else tracing_url.replace("{trace_id}", trace_id)


def trace_id_in_log(path: Path, max_lines: int = 200) -> str | None:
    """The trace id a run log's ``trace`` line names (written at the run's first request,
    near the top), or None."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines):
                if number >= max_lines:
                    break
                if '"trace"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                data = entry.get("data") if entry.get("type") == "trace" else None
                trace_id = data.get("trace_id") if isinstance(data, dict) else None
                if isinstance(trace_id, str) and len(trace_id) == 32 and trace_id.isalnum():
                    return trace_id
    except OSError:
        return None
    return None
