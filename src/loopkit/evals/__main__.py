"""``python -m loopkit.evals``: run an eval of cards under configs, or compare two evals.

    python -m loopkit.evals SUITE [--config A.toml --config B.toml ...] [--repeat N]
                                 [--workers K] [--max-cost USD] [--out DIR] [--database URL]
    python -m loopkit.evals compare OLD.json NEW.json [--old-config NAME] [--new-config NAME]

SUITE is a folder of cards or a suite TOML (docs/evals.md). The eval writes ``OUT/eval.json``,
``OUT/report.html`` and ``OUT/junit.xml``; started again with the same ``--out`` it resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from loopkit.command_line import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    OneLineParser,
    positive_int,
)

_EPILOG = """\
examples:
  python -m loopkit.evals examples/cards --repeat 3 --workers 2
  python -m loopkit.evals examples/evals/invoice.toml --workers 2 --out evals/today
  python -m loopkit.evals examples/cards --config examples/configs/claude.toml --max-cost 5
  python -m loopkit.evals compare evals/yesterday/eval.json evals/today/eval.json

exit status: 0 every case passed; 1 a case failed, or the budget stopped the eval (compare: a
case that passed now fails); 2 bad input; 130 stopped (start it again to resume).
"""


def _cost(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value!r}: expected dollars, more than 0 (e.g. 2.50)")
    return number


def parse_run_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit.evals",
        description="Run every card of a suite through the develop → test pipeline under each "
        "config, N times, on the durable queue; grade, report, compare.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", type=Path, metavar="SUITE", help="a folder of cards or a TOML")
    parser.add_argument(
        "--config", type=Path, action="append", dest="configs", metavar="FILE",
        help="a runner config (TOML, as examples/configs/); repeat it to compare configs",
    )  # fmt: skip
    parser.add_argument("--repeat", type=positive_int, help="runs of each card per config")
    parser.add_argument(
        "--workers", type=int, default=0, metavar="K",
        help="start K local workers, each in its own headless desktop (default 0: workers "
        "started elsewhere on the database take the cases)",
    )  # fmt: skip
    parser.add_argument("--max-cost", type=_cost, metavar="USD", help="stop when spent")
    parser.add_argument("--out", type=Path, help="the eval's folder (default evals/<suite>)")
    parser.add_argument(
        "--database", help="the queue's database (default: OUT/runs/loopkit.sqlite; "
        "postgresql://... for workers on several machines)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.workers < 0:
        parser.error(f"--workers {args.workers}: expected 0 or more")
    return args


def parse_compare_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit.evals compare",
        description="Which cases got better or worse between two evals (exit 1 when a case that "
        "passed now fails).",
    )
    parser.add_argument("old", type=Path, metavar="OLD.json")
    parser.add_argument("new", type=Path, metavar="NEW.json")
    parser.add_argument("--old-config", metavar="NAME", help="the old eval's config to compare")
    parser.add_argument("--new-config", metavar="NAME", help="the new eval's config to compare")
    parser.add_argument("--json", action="store_true", help="the comparison as JSON")
    return parser.parse_args(argv)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def compare_main(argv: list[str]) -> int:
    from loopkit.evals.compare import compare_evals
    from loopkit.evals.results import EvalResult

    args = parse_compare_args(argv)
    try:
        old, new = EvalResult.load(args.old), EvalResult.load(args.new)
        comparison = compare_evals(old, new, old_config=args.old_config, new_config=args.new_config)
    except ValueError as e:
        return _error(str(e))
    if args.json:
        print(comparison.model_dump_json(indent=1))
    else:
        print(comparison.text())
    return EXIT_FAILED if comparison.regressions else EXIT_OK


def run_main(argv: list[str]) -> int:
    args = parse_run_args(argv)
    from rich.console import Console
    from rich.markup import escape

    from loopkit.cards.config import ConfigError
    from loopkit.errors import CardError
    from loopkit.evals.engine import EvalRun, default_out
    from loopkit.evals.progress import EvalProgress
    from loopkit.evals.suite import load_suite

    console = Console(highlight=False, soft_wrap=True)
    try:
        suite = load_suite(args.suite, configs=args.configs, repeat=args.repeat)
        out = args.out or default_out(suite)
        progress = EvalProgress(console)
        run = EvalRun(
            suite, out, database=args.database, max_cost=args.max_cost, workers=args.workers,
            on_progress=progress.update, on_case=progress.case_ended,
            on_note=lambda text: console.print(text, markup=False),
        )  # fmt: skip
    except (ConfigError, CardError) as e:
        return _error(str(e))
    console.print(
        f"Eval [bold]{escape(suite.name)}[/bold] in {escape(str(run.out))}: "
        f"{len(run.result.cases)} cases ({len(suite.cards)} card(s) × {len(suite.configs)} "
        f"config(s) × {suite.repeat}); queue {escape(_shown(run.result.database))}"
        + (
            f"; {args.workers} local worker(s)"
            if args.workers
            else "; no local worker (start python -m loopkit.worker on the database)"
        )
    )
    try:
        with progress:
            result = asyncio.run(run.run())
    except (ConfigError, CardError) as e:
        return _error(str(e))
    for config in result.configs:
        rate = result.rate(config=config.name)
        console.print(
            f"{escape(config.name):24} {escape(rate.text())}  ({escape(config.price.note)})"
        )
    console.print(f"results {run.path}\nreport  {run.out / 'report.html'}\njunit   "
                  f"{run.out / 'junit.xml'}")  # fmt: skip
    if result.status.startswith("stopped: interrupted"):
        console.print(f"[yellow]{escape(result.status)}[/yellow]")
        return EXIT_INTERRUPTED
    if result.status != "complete":
        console.print(f"[red]{escape(result.status)}[/red]")
        return EXIT_FAILED
    return EXIT_OK if all(c.passed for c in result.cases) else EXIT_FAILED


def _shown(url: str) -> str:
    return url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url.split("@")[-1]


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["compare"]:
        return compare_main(args[1:])
    return run_main(args)


if __name__ == "__main__":
    sys.exit(main())
