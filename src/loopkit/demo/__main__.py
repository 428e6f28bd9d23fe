"""``python -m loopkit.demo CARD.md``: a model implements a Kanban card in the invoice app.

The model reads the card, changes the code, builds, verifies every acceptance criterion live
through the UI server, commits, and ends with ``RESULT: done`` or ``RESULT: failed: <reason>``.
Without an API key the scripted model plays the card's bundled transcript (every tool call is real).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loopkit.config import ConfigError, RunnerConfig, load_config

if TYPE_CHECKING:
    from rich.console import Console

_EPILOG = """\
examples:
  python -m loopkit.demo examples/cards/delete-asks-for-confirmation.md
  python -m loopkit.demo CARD.md --config examples/configs/claude.toml   (ANTHROPIC_API_KEY set)
  python -m loopkit.demo CARD.md --model openai/gpt-5                    (OPENAI_API_KEY set)

exit status: 0 the card is Done, 1 it is Failed, 2 bad input (card, config, arguments).
Settings can also come from LOOPKIT_* environment variables (e.g. LOOPKIT_MODEL).
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m loopkit.demo",
        description="Let a model implement a Kanban card in the invoice app, verified live "
        "through its UI, and commit the change.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("card", type=Path, help="the card file (Markdown with front matter)")
    parser.add_argument("--config", type=Path, help="a TOML config file (see examples/configs/)")
    parser.add_argument(
        "--model",
        help="litellm model string, e.g. anthropic/claude-sonnet-4-5 or openai/gpt-5; "
        "'scripted' plays the bundled transcript (the default). Beats the config.",
    )
    parser.add_argument(
        "--max-rounds", type=int, help="model requests before the run stops (default 60)"
    )
    parser.add_argument("--max-tokens", type=int, help="token budget of the run (default 400,000)")
    parser.add_argument("--log", type=Path, help="the JSON-lines run log (default: run folder)")
    parser.add_argument(
        "--transcript", type=Path, help="scripted model: play this transcript instead"
    )
    return parser.parse_args(argv)


def _needs_headless_desktop(mode: str) -> bool:
    if os.environ.get("LOOPKIT_IN_HEADLESS_SESSION"):
        return False
    if mode == "always":
        return True
    return mode == "auto" and not os.environ.get("DISPLAY") and sys.platform.startswith("linux")


def _rerun_in_headless_desktop(argv: list[str]) -> int:
    # The desktop (Xvfb + D-Bus + AT-SPI) is loopkit_ui's; reach it as a command, not an import.
    env = {**os.environ, "LOOPKIT_IN_HEADLESS_SESSION": "1"}
    command = [sys.executable, "-m", "loopkit_ui.session", "--",
               sys.executable, "-m", "loopkit.demo", *argv]  # fmt: skip
    proc = subprocess.Popen(command, env=env)

    # Pass an interrupt on and wait: the run inside marks its card Failed and ends its log
    # before the desktop goes (subprocess.call would kill it at once).
    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    return proc.wait()


async def _run_until_interrupted(config: RunnerConfig, card: Path, console: Console) -> int:
    """Run the demo; the first SIGINT/SIGTERM cancels it cleanly, later ones are ignored (one
    Ctrl-C reaches this process twice under the headless desktop: from the terminal and
    forwarded)."""
    from loopkit.demo.run import run_demo

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    stopping = False

    def stop() -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            console.print("[red]interrupted:[/red] stopping the app and closing the run log")
            task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop)
    try:
        return await run_demo(config, card, console)
    except asyncio.CancelledError:
        return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)
    try:
        config = load_config(
            args.config,
            model=args.model,
            max_rounds=args.max_rounds,
            max_tokens=args.max_tokens,
            log=args.log,
            transcript=args.transcript,
        )
    except ConfigError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return 2
    if _needs_headless_desktop(config.headless):
        return _rerun_in_headless_desktop(argv)
    return asyncio.run(_run_until_interrupted(config, args.card, console))


if __name__ == "__main__":
    sys.exit(main())
