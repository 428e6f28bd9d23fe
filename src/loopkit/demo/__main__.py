"""``python -m loopkit.demo CARD.md``: a model implements a Kanban card in the invoice app.

The model reads the card, changes the code, builds, verifies every acceptance criterion live
through the UI server, commits, and ends with ``RESULT: done`` or ``RESULT: failed: <reason>``.
Without an API key the scripted model plays the card's bundled transcript (every tool call is real).

Every setting and the card are checked before a headless desktop starts or anything is created;
only the UI server is started first, waiting without a display or any file until the run tells
it its command line (:mod:`loopkit.demo.waiting_ui`), and ended on bad input.
Without a display the demo starts a headless desktop itself and goes on in a child forked on it
(``loopkit_ui.session_fork``; where a fork cannot be used it re-runs itself inside ``python -m
loopkit_ui.session``); that child dies with this process (``PR_SET_PDEATHSIG``: SIGTERM, so the run
inside stops before it can commit and marks its card Failed), even when this process is killed
with SIGKILL.
"""

from __future__ import annotations

import os
import sys


def _one_line_for_an_interrupt(kind: type[BaseException], error: BaseException, tb: object) -> None:
    # A Ctrl-C that lands before the handlers below are in place (or anywhere nothing catches
    # it) is one line, not a traceback; Python still exits as interrupted (130).
    if issubclass(kind, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
    else:
        sys.__excepthook__(kind, error, tb)  # type: ignore[arg-type]


sys.excepthook = _one_line_for_an_interrupt


def _interrupt_where_it_cannot_unwind(unraisable: sys.UnraisableHookArgs) -> None:
    # A stop signal that lands inside a callback Python cannot propagate from (an import lock's
    # weakref callback, a __del__) would be printed as "Exception ignored" and then lost, so the
    # run would go on. Only the synchronous start-up raises KeyboardInterrupt (the event loop
    # handles the signals itself), and nothing there needs unwinding: one line and 130.
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        sys.stderr.flush()
        os.write(2, b"interrupted\n")
        os._exit(130)
    sys.__unraisablehook__(unraisable)


sys.unraisablehook = _interrupt_where_it_cannot_unwind

import signal  # noqa: E402


def _interrupted_while_starting(_signum: int, _frame: object) -> None:
    # Before main() takes over (the imports below take a while under load): nothing has been
    # started or created yet, so one line and 130, not a KeyboardInterrupt traceback.
    os.write(2, b"interrupted\n")
    os._exit(130)


for _signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_signum, _interrupted_while_starting)

import argparse  # noqa: E402  (after the signal handlers, on purpose)
import contextlib  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from types import FrameType  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from loopkit.demo.desktop import STOP_SIGNALS as _STOP_SIGNALS  # noqa: E402
from loopkit.demo.desktop import needs_headless_desktop as _needs_headless_desktop  # noqa: E402
from loopkit.demo.desktop import (  # noqa: E402
    run_forked_in_headless_desktop,
    run_in_headless_desktop,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from rich.console import Console

    from loopkit.cards import Card, RunnerConfig
    from loopkit.cards.roles import Role
    from loopkit.mcp.waiting_server import WaitingPythonServer

from loopkit.command_line import (  # noqa: E402
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    OneLineParser,
    exit_without_final_collection,
    positive_int,
)
from loopkit.command_line import EXIT_OK as EXIT_DONE  # noqa: E402

_EPILOG = """\
examples:
  python -m loopkit.demo examples/cards/delete-asks-for-confirmation.md
  python -m loopkit.demo --role document --repo runs/<run>/repo CARD.md
                                               document the feature in the develop run's repository
  python -m loopkit.demo CARD.md --config examples/configs/claude.toml   (ANTHROPIC_API_KEY set)
  python -m loopkit.demo CARD.md --model openai/gpt-5                    (OPENAI_API_KEY set)
  python -m loopkit.demo CARD.md --then test   develop, then test in the same repository on a fresh
                                               app; Done only when the test passes (docs/cards.md;
                                               also with --durable, or --record-transcript PATH)
  python -m loopkit.demo CARD.md --durable     a run that survives being killed (the durable extra)
  python -m loopkit.demo --resume              list the interrupted durable runs
  python -m loopkit.demo --resume ID           resume one (or: --resume all)

exit status: 0 the card is Done; 1 it is Failed (also when the run inside the headless desktop was
killed by a signal other than SIGINT, SIGTERM or SIGHUP); 2 bad input (card, config, arguments:
nothing is started or created, except that a card which was read but is not valid still gets
its log and is marked Failed); 130 interrupted (SIGINT, SIGTERM or SIGHUP; a durable run that is
interrupted or killed is 130 too, its card stays In Work and --resume takes it up again).
Settings can also come from LOOPKIT_* environment variables (e.g. LOOPKIT_MODEL, LOOPKIT_DURABLE,
LOOPKIT_DATABASE_URL).
"""

#: ``--resume`` without an id: list the interrupted runs.
_LIST = ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit.demo",
        description="Let a model implement a Kanban card in the invoice app, verified live "
        "through its UI, and commit the change.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "card", type=Path, nargs="?", help="the card file (Markdown with front matter)"
    )
    parser.add_argument("--config", type=Path, help="a TOML config file (see examples/configs/)")
    parser.add_argument(
        "--role",
        help="the role the model takes: develop (the default), test, document, or one of your "
        "own (roles_dir in the config); see docs/roles.md",
    )
    parser.add_argument(
        "--repo",
        type=Path,
        help="continue in the repository of an earlier run (the 'repository' its summary "
        "names) instead of a fresh copy of the app, e.g. test or document after develop",
    )
    parser.add_argument(
        "--message",
        help="a message that comes with the card; one that starts with 'remember' adds a "
        "feedback rule of the role's scope (notes/rules.md) before the run starts",
    )
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
    parser.add_argument(
        "--then",
        metavar="ROLE",
        help="after a run that ends done, run ROLE (e.g. test) in the same repository on a fresh "
        "app: the card is Done only when it passes; its defects go back to the first role",
    )
    parser.add_argument(
        "--round-trips",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --then: how many times the defects go back before the card stays Failed "
        "(default 2)",
    )
    parser.add_argument(
        "--durable",
        action="store_const",
        const=True,
        help="run the card as a durable workflow: every model request and tool call is a "
        "checkpoint; a run that is killed or stopped is taken up again with --resume",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=_LIST,
        metavar="ID",
        help="without ID: list the interrupted durable runs; with an ID (or the start of one) "
        "or 'all': resume them",
    )
    args = parser.parse_args(argv)
    if args.resume is not None and args.card is not None:
        parser.error("give a card to run, or --resume, not both")
    if args.resume is None and args.card is None:
        parser.error("the card file is required (or --resume to list interrupted runs)")
    if args.durable and args.record_transcript is not None:
        parser.error("--record-transcript does not work with --durable yet; record without it")
    if args.round_trips is not None and args.then is None:
        parser.error("--round-trips goes with --then ROLE")
    return args


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


def _rerun_in_headless_desktop(
    argv: list[str],
    config: RunnerConfig,
    card_path: Path | None,
    which: str | None = None,
    work: Callable[[], int] | None = None,
    after_fork: Callable[[], object] | None = None,
) -> int:
    """Run inside a new headless desktop: ``work`` in a child forked there (already checked and
    imported: no second interpreter), else this command again. ``after_fork``: called here
    right after the child is forked."""
    from datetime import UTC, datetime, timedelta

    since = datetime.now(UTC) - timedelta(seconds=1)  # the database's clock is this host's
    if work is not None:
        # A durable run's DBOS (most of a second to import) loads while the desktop starts.
        prepare = _import_dbos if config.durable else None
        status = run_forked_in_headless_desktop(
            "loopkit.demo", argv, work, prepare, after_fork=after_fork
        )
    else:
        status = run_in_headless_desktop("loopkit.demo", argv)
    if status not in (EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED):
        if config.durable or card_path is None:
            # A durable run's checkpoints survive its process: say what the database has.
            told, outcome = _after_a_killed_durable_run(config, card_path, since, which)
            print(f"error: the run ended abnormally ({_how(status)}); {told}", file=sys.stderr)
            return outcome
        _mark_failed_after_a_killed_run(config, card_path, status)
    return exit_status(status)


def _import_dbos() -> None:
    import dbos  # noqa: F401


def _after_a_killed_durable_run(
    config: RunnerConfig, card_path: Path | None, since: datetime, which: str | None
) -> tuple[str, int]:
    """What the database says about the run(s) of the killed process: one line, exit status."""
    import asyncio

    try:
        from loopkit.demo.durable_runs import after_a_killed_run

        card = str(card_path.resolve()) if card_path is not None else None
        return asyncio.run(after_a_killed_run(config, card, since, which))
    except Exception as e:  # the database cannot be read: say what is known
        return (
            f"it was durable, but its runs cannot be read now ({type(e).__name__}: {e}); "
            "`python -m loopkit.demo --resume` lists what can be resumed",
            EXIT_INTERRUPTED,
        )


def _how(status: int) -> str:
    how = f"status {status}"
    signum = -status if status < 0 else status - 128 if status > 128 else None
    with contextlib.suppress(ValueError):
        how = f"killed by {signal.Signals(signum or 0).name}"
    return how


def _mark_failed_after_a_killed_run(config: RunnerConfig, card_path: Path, status: int) -> None:
    """The run inside died without finishing (SIGKILL, a crash): a card it left In Work is
    marked Failed, so the card never stays In Work for a run that is gone."""
    from loopkit.cards import Card, CardState
    from loopkit.errors import CardError

    how = _how(status)
    note = ""
    try:
        card = Card.load(card_path, max_bytes=config.max_card_bytes)
        if card.state is CardState.IN_WORK:
            card.save_state(CardState.FAILED)
            note = "; the card is marked Failed"
    except (CardError, OSError):
        pass
    print(f"error: the run ended abnormally ({how}){note}", file=sys.stderr)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What the command line asks to run: the card, in a role, maybe in an earlier run's
    repository, maybe with a message."""

    card: Card
    role: Role
    repo: Path | None = None
    message: str | None = None
    #: ``--then``: the role that runs after a done run (the pipeline), its round trips, and
    #: the limits given on the command line (they beat each role's own).
    then: Role | None = None
    round_trips: int | None = None
    given: frozenset[str] = frozenset()


async def _run_until_interrupted(
    config: RunnerConfig,
    run: RunRequest | None,
    console: Console,
    resume: str | None = None,
    waiting: WaitingPythonServer | None = None,
) -> int:
    """Run the demo (or resume durable runs: ``resume``); the first SIGINT/SIGTERM/SIGHUP
    cancels it cleanly, later ones are ignored (one Ctrl-C reaches this process twice under the
    headless desktop: from the terminal and forwarded). ``waiting``: the UI server started for
    the run (ended here when the run did not use it)."""
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
        if resume is not None:
            from loopkit.demo.durable_runs import resume_demo_runs

            return await resume_demo_runs(config, resume, console)
        assert run is not None
        if run.then is not None:
            from loopkit.demo.pipeline import DEFAULT_ROUND_TRIPS, run_pipeline

            return await run_pipeline(
                config, run.card, console, develop=run.role, then=run.then, repo=run.repo,
                message=run.message, round_trips=run.round_trips or DEFAULT_ROUND_TRIPS,
                given=run.given, prestarted=waiting,
            )  # fmt: skip
        if config.durable:
            from loopkit.demo.durable_runs import run_durable_card

            return await run_durable_card(
                config, run.card, console, role=run.role, repo=run.repo, message=run.message
            )
        return await run_demo(
            config, run.card, console, role=run.role, repo=run.repo, message=run.message,
            prestarted=waiting,
        )  # fmt: skip
    except asyncio.CancelledError:
        return EXIT_INTERRUPTED
    finally:
        if waiting is not None:
            waiting.close()


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (see the epilog)."""
    # From here on a stop signal unwinds (Ctrl-C as usual; SIGTERM and SIGHUP end the checks
    # as Ctrl-C does), without a traceback.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        # What is left is the exit itself: a signal now ends it quietly too.
        for signum in _STOP_SIGNALS:
            signal.signal(signum, _interrupted_while_starting)


def _main(argv: list[str]) -> int:
    args = parse_args(argv)
    waiting: WaitingPythonServer | None = None
    if args.card is not None and args.resume is None and not args.durable:
        # First, so its imports run on the other core while this process checks everything.
        from loopkit.demo.waiting_ui import start_waiting_ui_server

        waiting = start_waiting_ui_server()
    try:
        return _check_and_run(argv, args, waiting)
    finally:
        if waiting is not None:  # ended, unless a run here or in the forked child used it
            waiting.close()


def _check_and_run(
    argv: list[str], args: argparse.Namespace, waiting: WaitingPythonServer | None
) -> int:
    """Check every setting and the card, then run it (in a child forked on a headless desktop
    when there is no display); ``waiting``: the UI server started for the run."""
    import asyncio

    from loopkit.cards import Card, ConfigError, load_config
    from loopkit.cards.roles import RoleError
    from loopkit.demo.role_tools import DEFAULT_ROLE, check_message, find_role, with_role_limits
    from loopkit.demo.run import (
        check_durable,
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
            durable=args.durable,
        )
        if config.durable and config.record_transcript is not None:
            raise ConfigError("record_transcript does not work with durable runs yet")
        if config.durable or args.resume is not None:
            check_durable(config)
        if args.resume is not None:
            return _resume(argv, config, args.resume or None, console)
        role = find_role(config, args.role or DEFAULT_ROLE)
        check_message(args.message)
        given = {"max_rounds", "max_tokens"} & {k for k, v in vars(args).items() if v is not None}
        config = with_role_limits(config, role, given)
        text = read_card(config, args.card)
        check_log_destination(config)
        try:
            card = Card.parse(text, args.card)
        except CardError as e:  # read but not valid: its own log, marked Failed (documented)
            return refuse_invalid_card(config, args.card, e, console)
        check_settings(config, args.card, role, args.repo)
        then = None
        if args.then is not None:
            from loopkit.demo.pipeline_rounds import pipeline_transcript

            then = find_role(config, args.then)
            check_settings(with_role_limits(config, then, given), args.card, then, args.repo)
            follows = pipeline_transcript(config, args.card, then.name, 1)
            if follows is not None and not follows.is_file():
                raise ConfigError(f"--then {then.name}: no transcript {follows} for it")
    except (ConfigError, CardError, WorkspaceError, RoleError) as e:
        message = str(e).replace("\n", " ")
        print(f"error: {message}", file=sys.stderr)  # one line; nothing started or created
        return EXIT_BAD_INPUT
    run = RunRequest(card, role, args.repo, args.message, then, args.round_trips, frozenset(given))
    if _needs_headless_desktop(config.headless):
        return _rerun_in_headless_desktop(
            argv, config, args.card, work=lambda: _run_in_child(config, run, console, waiting),
            after_fork=waiting.forked if waiting is not None else None,
        )  # fmt: skip
    return asyncio.run(_run_until_interrupted(config, run, console, waiting=waiting))


def _run_in_child(
    config: RunnerConfig, run: RunRequest, console: Console, waiting: WaitingPythonServer | None
) -> int:
    """The run in the child forked on the headless desktop: the stop signals as main() sets
    them, then the run."""
    import asyncio

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        return asyncio.run(_run_until_interrupted(config, run, console, waiting=waiting))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _resume(argv: list[str], config: RunnerConfig, which: str | None, console: Console) -> int:
    """``--resume``: the list needs no desktop; resuming runs inside one, as a run does."""
    import asyncio

    if which is not None and _needs_headless_desktop(config.headless):
        return _rerun_in_headless_desktop(argv, config, None, which)
    if which is None:
        from loopkit.demo.durable_runs import resume_demo_runs

        return asyncio.run(resume_demo_runs(config, None, console))
    return asyncio.run(_run_until_interrupted(config, None, console, resume=which))


if __name__ == "__main__":
    exit_without_final_collection(main())
