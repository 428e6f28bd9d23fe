"""Command line: ``python -m loopkit_ui.scripts run|validate|walk|findings``.

Exit status: 0 all passed / valid; 1 a run failed; 2 a script is invalid or an input is wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from loopkit_ui.scripts.loader import ScriptLoadError, load_script, validate_files
from loopkit_ui.scripts.runner import RunnerConfig, ScriptRunner, environment_from_pairs
from loopkit_ui.scripts.store import ResultStore
from loopkit_ui.scripts.system_log import SyslogFileSource, SystemLogSource
from loopkit_ui.scripts.walk import write_walk

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loopkit_ui.scripts", description="Run JSON UI test scripts."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scripts; exit status 0 when all passed")
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
    validate = sub.add_parser("validate", help="check scripts against the schema")
    validate.add_argument("scripts", nargs="+", type=Path)
    walk = sub.add_parser("walk", help="write a random-walk script from an operations file")
    walk.add_argument("--ops", type=Path, required=True)
    walk.add_argument("--seed", type=int, required=True)
    walk.add_argument("--steps", type=int, default=40)
    walk.add_argument("-o", "--output", type=Path, required=True)
    findings = sub.add_parser("findings", help="list the findings in a database")
    findings.add_argument("--db", type=Path, default=Path("ui-runs/results.sqlite"))
    sub.add_parser("schema", help="print the path of the JSON Schema")
    return parser


@contextlib.contextmanager
def _desktop(enabled: bool) -> Iterator[dict[str, str]]:
    if not enabled:
        yield {}
        return
    from loopkit_ui.session import HeadlessDesktop

    with HeadlessDesktop() as desktop:
        yield desktop.env


def _run(args: argparse.Namespace) -> int:
    try:
        loaded = [load_script(path) for path in args.scripts]
        app_env = dict(environment_from_pairs(args.app_env))
        variables = dict(environment_from_pairs(args.var))
    except ScriptLoadError as error:
        print(error, file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    system_log: SystemLogSource | str | None = "auto"
    if args.no_system_log:
        system_log = None
    elif args.syslog_file:
        system_log = SyslogFileSource(args.syslog_file)
    failed = 0
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
                f"{result.status.upper():7} {result.name}  ({result.count('passed')} passed, "
                f"{result.count('failed')} failed, {result.count('skipped')} skipped, "
                f"{len(result.unique_findings())} findings, {result.ms / 1000:.1f} s)  "
                f"{result.report}"
            )
            if result.error:
                print(f"        {result.error}")
            for step in result.steps:
                if step.status == "failed":
                    first = step.message.splitlines()[0] if step.message else ""
                    print(f"        failed {step.path}: {first}")
    print(f"{len(loaded) - failed} of {len(loaded)} passed; database {config.database}")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "validate":
        problems = validate_files(args.scripts)
        for path, errors in problems.items():
            print(f"{'ok     ' if not errors else 'INVALID'} {path}")
            for error in errors:
                print(f"        {error}")
        return 2 if any(problems.values()) else 0
    if args.command == "walk":
        try:
            written = write_walk(args.ops, args.seed, args.steps, args.output)
        except (ScriptLoadError, ValueError) as error:
            print(error, file=sys.stderr)
            return 2
        print(f"wrote {written} ({args.steps} operations, seed {args.seed})")
        return 0
    if args.command == "findings":
        for row in ResultStore(args.db).findings():
            print(json.dumps(row))
        return 0
    print(Path(__file__).with_name("schema.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
