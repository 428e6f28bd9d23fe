"""The demo's console output through RedactingConsole: live line, summary, RESULT reason."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from loopkit.demo.progress import LiveProgress, summary_table
from loopkit.redacting_console import RedactingConsole
from loopkit.redaction import RedactingStream
from tests.secret_corpus import LATE, all_secrets, leaks, plant_environment, planted_text


def _show_a_run(console: Console, text: str) -> None:
    """What the demo prints: a first line, the live progress, an error line, the summary."""
    console.print(f"card run with {text}")
    with LiveProgress(console, max_rounds=60) as progress:
        progress.on_event(
            {
                "type": "round",
                "data": {"round": 1, "input_tokens": 5, "output_tokens": 1, "calls": [text]},
            }
        )
        progress.on_event({"type": "tool", "data": {"name": text, "error": True, "ms": 3.0}})
    console.print(f"[red]error:[/red] {text}")
    console.print(
        summary_table(
            status="failed",
            reason=text,
            totals={"rounds": 1, "seconds": 1.0},
            card_state="Failed",
            commit=text,
            log_path="/tmp/run.jsonl",
            repo="/tmp/repo",
        )
    )


@pytest.mark.parametrize("width", [40, 200])
def test_demo_console_shows_no_secret(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    plant_environment(monkeypatch)
    out = io.StringIO()
    console = RedactingConsole(file=out, width=width, force_terminal=True, highlight=False)
    monkeypatch.setenv(*LATE)  # after the console was made
    _show_a_run(console, planted_text())
    leaked = leaks(out.getvalue())
    print(f"console (width {width}): secrets tried {len(all_secrets())}, leaked {len(leaked)}")
    assert leaked == []
    assert "RESULT: failed:" in out.getvalue()


def test_a_stream_filter_alone_misses_secrets_rich_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the console redacts before layout: a folded table cell splits a key in pieces."""
    plant_environment(monkeypatch)
    out = io.StringIO()
    console = Console(file=RedactingStream(out), width=40, force_terminal=True, highlight=False)
    _show_a_run(console, planted_text())
    assert leaks(out.getvalue()) != []


def test_console_output_otherwise_unchanged() -> None:
    plain, redacting = io.StringIO(), io.StringIO()
    for console in (
        Console(file=plain, width=60, force_terminal=True),
        RedactingConsole(file=redacting, width=60, force_terminal=True),
    ):
        console.print(summary_table(status="done", reason=None, totals={}, card_state="Done",
                                    commit="abc123 card: fix", log_path="l", repo="r"))  # fmt: skip
        console.print("[bold]bold[/bold] text")
    assert redacting.getvalue() == plain.getvalue()


def test_a_retry_is_shown_with_its_reason_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry event (written by the card runner) shows on the console, where the live line is
    not redrawn too (a log file), with its wait and status, redacted."""
    plant_environment(monkeypatch)
    out = io.StringIO()
    console = RedactingConsole(file=out, width=200, force_terminal=False, highlight=False)
    monkeypatch.setenv(*LATE)  # after the console was made
    with LiveProgress(console, max_rounds=60) as progress:
        progress.on_event(
            {
                "type": "retry",
                "data": {
                    "round": 3,
                    "attempt": 1,
                    "wait_s": 2.5,
                    "status_code": 429,
                    "reason": f"rate limited ({planted_text()})",
                },
            }
        )
    shown = out.getvalue()
    assert "retry 1 in 2.5 s (HTTP 429): rate limited" in shown
    assert leaks(shown) == []
