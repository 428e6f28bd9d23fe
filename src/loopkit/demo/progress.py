"""What a demo run shows on screen: one live line while it runs, a summary at the end."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text


class LiveProgress:
    """One line, redrawn on every run-log event: round, tokens so far, the current tool."""

    def __init__(self, console: Console, max_rounds: int) -> None:
        self.console = console
        self.max_rounds = max_rounds
        self.round = 0
        self.tokens = 0
        self.tool = "waiting for the model"
        self.started = time.monotonic()
        #: One line per finished child run (an agent used as a tool), for the summary.
        self.subagents: list[str] = []
        self._children: dict[str, dict[str, Any]] = {}
        self._live = Live(self._render(), console=console, refresh_per_second=8, transient=True)

    def _render(self) -> Text:
        seconds = time.monotonic() - self.started
        return Text.assemble(
            ("● ", "cyan"),
            (f"round {self.round}/{self.max_rounds}", "bold"),
            f"  tokens {self.tokens:,}  ",
            (f"{seconds:5.1f}s  ", "dim"),
            (self.tool, "yellow"),
        )

    def on_event(self, event: dict[str, Any]) -> None:
        data = event["data"]
        kind = event["type"]
        if kind == "child_run":
            self._children[data["child_run_id"]] = data
        elif kind == "run_end" and event.get("parent_run_id"):
            self._child_ended(event["run_id"], data)
        if event.get("parent_run_id") and kind in ("round", "tool"):
            # A subagent's child run (an agent used as a tool): its rounds and tokens are its
            # own, not the main run's; the line says what it is doing.
            what = ", ".join(data["calls"]) or "answered" if kind == "round" else data["name"]
            self.tool = f"subagent: {what}"
        elif kind == "round":
            self.round = data["round"]
            self.tokens += data["input_tokens"] + data["output_tokens"]
            calls = data["calls"]
            self.tool = ("calling " + ", ".join(calls)) if calls else "model answered"
        elif kind == "tool":
            mark = "✗" if data["error"] else "✓"
            self.tool = f"{mark} {data['name']} ({data['ms']:.0f} ms)"
            if not self.console.is_terminal:
                return
        elif kind == "retry":
            # A transient provider error: say so on the line, and above it where the line is
            # not redrawn (a log file, CI), so a slow run is not mistaken for a hung one.
            status = f"HTTP {data['status_code']}" if data.get("status_code") else "no answer"
            self.tool = f"↻ retry {data['attempt']} in {data['wait_s']:.1f} s ({status})"
            if not self.console.is_terminal:
                self.console.print(f"{self.tool}: {data['reason']}", markup=False, highlight=False)
                return
        self._live.update(self._render())

    def _child_ended(self, run_id: str, data: dict[str, Any]) -> None:
        started = self._children.get(run_id, {})
        totals = data.get("totals", {})
        tokens = totals.get("input_tokens", 0) + totals.get("output_tokens", 0)
        name = started.get("name", "subagent")
        tool = f" ({started['tool']})" if started.get("tool") else ""
        ended = "" if data.get("status") == "ok" else f", ended: {data.get('error') or 'error'}"
        self.subagents.append(
            f"{name}{tool}: {totals.get('rounds', 0)} rounds, {totals.get('tool_calls', 0)} tool "
            f"calls, {tokens:,} tokens{ended}; run {run_id}"
        )

    def __enter__(self) -> LiveProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)


def summary_table(
    *,
    status: str,
    reason: str | None,
    totals: dict[str, Any],
    card_state: str,
    commit: str | None,
    log_path: str,
    repo: str,
    subagents: Sequence[str] = (),
    verification: str | None = None,
) -> Table:
    """The end-of-run summary: the result first, then the figures and where things are;
    ``subagents``: a line per child run (its own figures, not in the run's); ``verification``:
    how the acceptance criteria were proven (``verified by replay: ...``)."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    style = "red" if status == "failed" else "green"  # "done", or a role's word ("passed")
    table.add_row("result", Text(f"RESULT: {status}" + (f": {reason}" if reason else ""), style))
    table.add_row("card", Text(card_state))
    if verification:
        table.add_row("verified", Text(verification))
    table.add_row("rounds", str(totals.get("rounds", 0)))
    table.add_row(
        "tool calls",
        f"{totals.get('tool_calls', 0)} ({totals.get('tool_errors', 0)} answered with an error)",
    )
    table.add_row(
        "tokens",
        f"input {totals.get('input_tokens', 0):,} (cached {totals.get('cached_input_tokens', 0):,})"
        f", output {totals.get('output_tokens', 0):,}",
    )
    table.add_row("seconds", f"{totals.get('seconds', 0):.1f}")
    for line in subagents:
        table.add_row("subagent", Text(line))
    # Text, not markup: a commit subject or a path may contain brackets.
    table.add_row("commit", Text(commit or "none"))
    table.add_row("repository", Text(repo))
    table.add_row("run log", Text(log_path))
    return table
