"""``python -m loopkit.demo CARD.md``: a model implements a Kanban card in the invoice app.

The model reads the card, changes the code, builds, verifies every acceptance criterion live
through the UI server, commits, and ends with ``RESULT: done`` or ``RESULT: failed: <reason>``.
Without an API key the scripted model plays the card's bundled transcript (every tool call is real).

Every setting and the card are checked before a headless desktop starts or anything is created.
Without a display the demo re-runs itself inside ``python -m loopkit_ui.session``; that child dies
with this process (``PR_SET_PDEATHSIG``: SIGTERM, so the run inside stops before it can commit and
marks its card Failed), even when this process is killed with SIGKILL.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rich.console import Console

    from loopkit.cards import Card, RunnerConfig

EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

_EPILOG = """\
examples:
  python -m loopkit.demo examples/cards/delete-asks-for-confirmation.md
  python -m loopkit.demo CARD.md --config examples/configs/claude.toml   (ANTHROPIC_API_KEY set)
  python -m loopkit.demo CARD.md --model openai/gpt-5                    (OPENAI_API_KEY set)

exit status: 0 the card is Done; 1 it is Failed (also when the run inside the headless desktop was
killed by a signal other than SIGINT, SIGTERM or SIGHUP); 2 bad input (card, config, arguments:
nothing is started or created, except that a card which was read but is not valid still gets
its log and is marked Failed); 130 interrupted (SIGINT, SIGTERM or SIGHUP).
Settings can also come from LOOPKIT_* environment variables (e.g. LOOPKIT_MODEL).
"""


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (exit status 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
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
    parser.add_argument(
        "--record-transcript",
        type=Path,
        metavar="PATH",
        help="record the model's turns into PATH, a transcript --transcript can replay",
    )
    parser.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="scripted model: check every tool result against the transcript's 'expect' "
        "(default on; --no-strict plays on whatever a tool answers). Beats the config.",
    )
    return parser.parse_args(argv)


def exit_status(status: int) -> int:
    """The demo's exit status for the status of the run inside the headless desktop.

    0, 1, 2 and 130 pass through; killed by SIGINT, SIGTERM or SIGHUP (negative, or 128+N as the
    session reports a signal) is 130, interrupted; anything else (SIGKILL, a crash) is 1, failed.
    """
    if status in (EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED):
        return status
    signum = -status if status < 0 else status - 128 if status > 128 else None
    if signum in _STOP_SIGNALS:
        return EXIT_INTERRUPTED
    return EXIT_FAILED


def _needs_headless_desktop(mode: str) -> bool:
    if os.environ.get("LOOPKIT_IN_HEADLESS_SESSION"):
        return False
    if mode == "always":
        return True
    return mode == "auto" and not os.environ.get("DISPLAY") and sys.platform.startswith("linux")


def _prctl() -> Callable[..., int] | None:
    """libc's prctl where PR_SET_PDEATHSIG can be used: Linux, from the main thread (the signal
    follows the *thread* that forked the child)."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _start_dying_with_us(
    command: list[str],
    env: dict[str, str],
    prctl: Callable[..., int],
    mask: set[int | signal.Signals],
) -> subprocess.Popen[bytes]:
    """Start ``command``; it gets SIGTERM when this process dies, even by SIGKILL, and the
    signal ``mask`` back before it execs."""
    parent = os.getpid()

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # we died before prctl took effect
            os._exit(1)

    return subprocess.Popen(command, env=env, preexec_fn=preexec)


def _rerun_in_headless_desktop(argv: list[str], config: RunnerConfig, card_path: Path) -> int:
    # The desktop (Xvfb + D-Bus + AT-SPI) is loopkit_ui's; reach it as a command, not an import.
    env = {**os.environ, "LOOPKIT_IN_HEADLESS_SESSION": "1"}
    command = [sys.executable, "-m", "loopkit_ui.session", "--",
               sys.executable, "-m", "loopkit.demo", *argv]  # fmt: skip
    proc: subprocess.Popen[bytes] | None = None

    # Pass an interrupt on and wait: the run inside marks its card Failed and ends its log
    # before the desktop goes (subprocess.call would kill it at once).
    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc is None:  # not started yet: stop here, as before
            raise KeyboardInterrupt
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    for signum in _STOP_SIGNALS:
        signal.signal(signum, forward)
    prctl = _prctl()
    if prctl is None:
        proc = subprocess.Popen(command, env=env)
    else:
        # Held while the child is forked (a handler run inside the fork's hooks would lose its
        # exception) and until ``proc`` is set, then passed on by ``forward``.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(_STOP_SIGNALS))
        try:
            proc = _start_dying_with_us(command, env, prctl, mask)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    status = proc.wait()
    if status not in (EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED):
        _mark_failed_after_a_killed_run(config, card_path, status)
    return exit_status(status)


def _mark_failed_after_a_killed_run(config: RunnerConfig, card_path: Path, status: int) -> None:
    """The run inside died without finishing (SIGKILL, a crash): a card it left In Work is
    marked Failed, so the card never stays In Work for a run that is gone."""
    from loopkit.cards import Card, CardState
    from loopkit.errors import CardError

    how = f"status {status}"
    signum = -status if status < 0 else status - 128 if status > 128 else None
    with contextlib.suppress(ValueError):
        how = f"killed by {signal.Signals(signum or 0).name}"
    note = ""
    try:
        card = Card.load(card_path, max_bytes=config.max_card_bytes)
        if card.state is CardState.IN_WORK:
            card.save_state(CardState.FAILED)
            note = "; the card is marked Failed"
    except (CardError, OSError):
        pass
    print(f"error: the run ended abnormally ({how}){note}", file=sys.stderr)


async def _run_until_interrupted(config: RunnerConfig, card: Card, console: Console) -> int:
    """Run the demo; the first SIGINT/SIGTERM/SIGHUP cancels it cleanly, later ones are ignored
    (one Ctrl-C reaches this process twice under the headless desktop: from the terminal and
    forwarded)."""
    import asyncio

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

    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, stop)
    try:
        return await run_demo(config, card, console)
    except asyncio.CancelledError:
        return EXIT_INTERRUPTED


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (see the epilog)."""
    # First of all: SIGTERM and SIGHUP end the checks as Ctrl-C does, without a traceback.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _main(argv: list[str]) -> int:
    args = parse_args(argv)
    import asyncio

    from loopkit.cards import Card, ConfigError, load_config
    from loopkit.demo.run import (
        check_log_destination,
        check_settings,
        read_card,
        refuse_invalid_card,
    )
    from loopkit.demo.workspace import WorkspaceError
    from loopkit.errors import CardError
    from loopkit.redacting_console import RedactingConsole

    console = RedactingConsole(highlight=False)  # no secret reaches the screen
    try:
        config = load_config(
            args.config,
            model=args.model,
            max_rounds=args.max_rounds,
            max_tokens=args.max_tokens,
            log=args.log,
            transcript=args.transcript,
            strict=args.strict,
            record_transcript=args.record_transcript,
        )
        text = read_card(config, args.card)
        check_log_destination(config)
        try:
            card = Card.parse(text, args.card)
        except CardError as e:  # read but not valid: its own log, marked Failed (documented)
            return refuse_invalid_card(config, args.card, e, console)
        check_settings(config, args.card)
    except (ConfigError, CardError, WorkspaceError) as e:
        message = str(e).replace("\n", " ")
        print(f"error: {message}", file=sys.stderr)  # one line; nothing started or created
        return EXIT_BAD_INPUT
    if _needs_headless_desktop(config.headless):
        return _rerun_in_headless_desktop(argv, config, args.card)
    return asyncio.run(_run_until_interrupted(config, card, console))


if __name__ == "__main__":
    sys.exit(main())
