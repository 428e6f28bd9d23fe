"""Command line: ``python -m loopkit_ui.scripts run|validate|walk|findings|schema``.

Exit status: 0 all passed / valid; 1 a run failed; 2 bad input (an invalid script, a file or
folder that cannot be used, a bad number: one line on stderr, nothing started or created);
130 interrupted (Ctrl+C, SIGTERM, SIGHUP: the app and the desktop are ended first).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from loopkit_ui.cli_input import (
    EXIT_BAD_INPUT,
    EXIT_CODES_EPILOG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BadInput,
    Interrupted,
    OneLineParser,
    check_output_dir,
    check_readable_file,
    finish,
    interrupt_on_signals,
    positive_int,
    printable,
    shown,
)
from loopkit_ui.scripts.loader import LoadedScript, ScriptLoadError, load_script, validate_files
from loopkit_ui.scripts.runner import RunnerConfig, ScriptRunner, environment_from_pairs
from loopkit_ui.scripts.store import ResultStore, ResultStoreError
from loopkit_ui.scripts.system_log import SyslogFileSource, SystemLogSource
from loopkit_ui.scripts.walk import write_walk

__all__ = ["main"]

PROG = "python -m loopkit_ui.scripts"
MAX_WALK_STEPS = 10_000


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG, description="Run JSON UI test scripts.", epilog=EXIT_CODES_EPILOG
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="run scripts; exit status 0 when all passed", epilog=EXIT_CODES_EPILOG
    )
    run.add_argument("scripts", nargs="+", type=Path)
    run.add_argument("--out", type=Path, default=Path("ui-runs"), help="output folder")
    run.add_argument("--db", type=Path, help="SQLite database (default OUT/results.sqlite)")
    run.add_argument("--backend", choices=("atspi", "uia"))
    run.add_argument(
        "--headless", action="store_true", help="start a private Xvfb + AT-SPI desktop (Linux)"
    )
    run.add_argument("--screenshots", choices=("steps", "failures", "none"), default="steps")
    run.add_argument("--no-gif", action="store_true")
    run.add_argument("--syslog-file", type=Path, help="syslog text file to watch")
    run.add_argument("--no-system-log", action="store_true", help="do not watch the system log")
    run.add_argument("--app-env", action="append", default=[], metavar="NAME=VALUE")
    run.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    validate = sub.add_parser(
        "validate", help="check scripts against the schema", epilog=EXIT_CODES_EPILOG
    )
    validate.add_argument("scripts", nargs="+", type=Path)
    walk = sub.add_parser(
        "walk", help="write a random-walk script from an operations file", epilog=EXIT_CODES_EPILOG
    )
    walk.add_argument("--ops", type=Path, required=True)
    walk.add_argument("--seed", type=int, required=True)
    walk.add_argument(
        "--steps",
        type=positive_int(MAX_WALK_STEPS),
        default=40,
        help=f"operations to pick, 1 to {MAX_WALK_STEPS:,} (40)",
    )
    walk.add_argument("-o", "--output", type=Path, required=True)
    findings = sub.add_parser(
        "findings", help="list the findings in a database", epilog=EXIT_CODES_EPILOG
    )
    findings.add_argument("--db", type=Path, default=Path("ui-runs/results.sqlite"))
    sub.add_parser("schema", help="print the path of the JSON Schema")
    return parser


def _invalid(error: ScriptLoadError) -> BadInput:
    """A script's problems as one line (``validate`` lists them all)."""
    more = len(error.errors) - 1
    rest = f" (and {more} more: run validate for all)" if more > 0 else ""
    return BadInput(f"{shown(error.path)}: invalid script: {error.errors[0]}{rest}")


def _store_error(option: str, error: ResultStoreError) -> BadInput:
    return BadInput(f"{option} {shown(error.path)}: {error.reason}")


@contextlib.contextmanager
def _desktop(enabled: bool) -> Iterator[dict[str, str]]:
    if not enabled:
        yield {}
        return
    from loopkit_ui.headless_desktop import HeadlessDesktop

    with HeadlessDesktop() as desktop:
        yield desktop.env


_Checked = tuple[list[LoadedScript], dict[str, str], dict[str, str]]


def _check_run(args: argparse.Namespace) -> _Checked:
    """Every input of ``run`` checked before the desktop or an app starts; then the output
    folder and the database are made ready (so a run cannot fail at its end for them)."""
    try:
        loaded = [load_script(path) for path in args.scripts]
    except ScriptLoadError as error:
        raise _invalid(error) from None
    for script in loaded:
        if script.app is None:
            raise BadInput(
                f"{shown(script.path)}: names no 'app' to start (expected an \"app\" with a "
                "command, in the script or one it imports)"
            )
    pairs = {}
    for option, given in (("--app-env", args.app_env), ("--var", args.var)):
        try:
            pairs[option] = dict(environment_from_pairs(given))
        except ValueError as error:
            raise BadInput(f"{option}: {error}") from None
    if args.syslog_file is not None:
        check_readable_file(args.syslog_file, "--syslog-file", "a syslog text file")
    check_output_dir(args.out, "--out")
    database = args.db or args.out / "results.sqlite"
    option = "--db" if args.db else "--out"
    check_output_dir(database.parent, option, given=args.db or args.out)
    try:
        ResultStore(database).check()
    except ResultStoreError as error:
        raise _store_error(option, error) from None
    # Everything named is usable: create the folder and the database now.
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        ResultStore(database).runs()
    except (OSError, sqlite3.Error) as error:
        reason = getattr(error, "strerror", None) or error
        raise BadInput(
            f"{option} {shown(args.db or args.out)}: cannot write there ({reason})"
        ) from None
    return loaded, pairs["--app-env"], pairs["--var"]


def _run(args: argparse.Namespace) -> int:
    loaded, app_env, variables = _check_run(args)
    system_log: SystemLogSource | str | None = "auto"
    if args.no_system_log:
        system_log = None
    elif args.syslog_file:
        system_log = SyslogFileSource(args.syslog_file)
    from loopkit_ui.headless_desktop import DesktopError

    failed = 0
    try:
        with _desktop(args.headless) as env:
            config = RunnerConfig(
                out_dir=args.out,
                db_path=args.db,
                backend=args.backend,
                env=env,
                app_env=app_env,
                variables=variables,
                screenshots=args.screenshots,
                gif=not args.no_gif,
            )
            runner = ScriptRunner(config, system_log=system_log)  # type: ignore[arg-type]
            for script in loaded:
                result = runner.run(script)
                failed += not result.passed
                print(
                    f"{result.status.upper():7} {result.name}  ({result.count('passed')} "
                    f"passed, {result.count('failed')} failed, {result.count('skipped')} "
                    f"skipped, {len(result.unique_findings())} findings, "
                    f"{result.ms / 1000:.1f} s)  {result.report}"
                )
                if result.error:
                    print(f"        {result.error}")
                for step in result.steps:
                    if step.status == "failed":
                        first = step.message.splitlines()[0] if step.message else ""
                        print(f"        failed {step.path}: {first}")
    except DesktopError as error:
        print(f"{PROG} run: the headless desktop did not start: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{len(loaded) - failed} of {len(loaded)} passed; database {config.database}")
    return EXIT_FAILED if failed else EXIT_OK


def _validate(args: argparse.Namespace) -> int:
    problems = validate_files(args.scripts)
    for path, errors in problems.items():
        if not errors:
            print(f"ok      {printable(path)}")
        for error in errors:  # one line per problem: grep-able, and one line for one problem
            shown = error if error.startswith(str(path)) else f"{path}: {error}"
            print(f"INVALID {printable(shown)}")
    return EXIT_BAD_INPUT if any(problems.values()) else EXIT_OK


def _walk(args: argparse.Namespace) -> int:
    output: Path = args.output
    if output.is_dir():
        raise BadInput(f"-o {shown(output)}: is a folder; expected the file to write")
    check_output_dir(output.parent, "-o", given=output)
    try:
        written = write_walk(args.ops, args.seed, args.steps, output)
    except ScriptLoadError as error:
        raise _invalid(error) from None
    except ValueError as error:  # e.g. operations whose weights are all 0
        raise BadInput(f"--ops {shown(args.ops)}: {error}") from None
    except OSError as error:
        raise BadInput(f"-o {shown(output)}: cannot write it ({error.strerror or error})") from None
    print(f"wrote {written} ({args.steps} operations, seed {args.seed})")
    return EXIT_OK


def _findings(args: argparse.Namespace) -> int:
    store = ResultStore(args.db, read_only=True)
    try:
        rows = store.findings()
    except ResultStoreError as error:
        raise _store_error("--db", error) from None
    except sqlite3.Error as error:
        raise BadInput(f"--db {shown(args.db)}: cannot read it as a database ({error})") from None
    for row in rows:
        print(json.dumps(row))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    commands = {"run": _run, "validate": _validate, "walk": _walk, "findings": _findings}
    try:
        with interrupt_on_signals():
            if args.command in commands:
                return commands[args.command](args)
    except BadInput as error:
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (Interrupted, KeyboardInterrupt):
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(Path(__file__).with_name("schema.json"))
    return EXIT_OK


if __name__ == "__main__":
    # A file name that is not valid UTF-8 is printed escaped instead of ending in a traceback.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    finish(main())
