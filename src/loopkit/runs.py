"""``python -m loopkit.runs``: queue card runs for the workers, list them, show one, cancel one.

    python -m loopkit.runs enqueue CARD.md [CARD.md ...] [--role ROLE] [--model MODEL]
                                    [--then test [--round-trips N]]
    python -m loopkit.runs list [--state STATE] [--limit N] [--json]
    python -m loopkit.runs show ID [--json]
    python -m loopkit.runs cancel ID

The runs live in the durable runs' database (``--database``, ``LOOPKIT_DATABASE_URL``,
``database_url`` in ``--config``, else ``loopkit.sqlite`` in the runs folder); workers
(``python -m loopkit.worker``) take the queued ones. See docs/durable.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopkit.cards import RunnerConfig
    from loopkit.cards.durable import CardRunRecord
    from loopkit.durable.runtime import DurableRuntime

from loopkit.command_line import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    OneLineParser,
    positive_int,
)

STATES = ("running", "interrupted", "queued", "done", "failed", "cancelled")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit.runs",
        description="Queue card runs for the workers (python -m loopkit.worker) and look at them.",
    )
    parser.add_argument("--config", type=Path, help="a TOML config file (see examples/configs/)")
    parser.add_argument(
        "--database", help="the durable runs' database (sqlite:///file or postgresql://...)"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    enqueue = commands.add_parser("enqueue", help="queue a run of each card (prints each run's id)")
    enqueue.add_argument(
        "cards", type=Path, nargs="+", metavar="CARD", help="a card file (Markdown, front matter)"
    )
    enqueue.add_argument(
        "--role",
        default="develop",
        help="the role: develop (the default), test, document or one of your own (roles_dir)",
    )
    enqueue.add_argument(
        "--repo", type=Path, help="run in the repository of an earlier run (its 'repository')"
    )
    enqueue.add_argument("--message", help="a message with the card ('remember ...': a rule)")
    enqueue.add_argument("--model", help="the model (default: the config's, else scripted)")
    enqueue.add_argument(
        "--then",
        metavar="ROLE",
        help="a pipeline: after a run that ends done, queue ROLE (e.g. test) in its repository; "
        "the card is Done only when that passes, its defects go back to --role",
    )
    enqueue.add_argument(
        "--round-trips",
        type=positive_int,
        metavar="N",
        help="with --then: how many times the defects go back (default 2)",
    )
    listing = commands.add_parser("list", help="the card runs, newest first")
    listing.add_argument("--state", choices=STATES, help="only runs in this state")
    listing.add_argument("--limit", type=positive_int, help="at most this many runs")
    listing.add_argument("--json", action="store_true", help="one JSON object a line")
    show = commands.add_parser("show", help="one run's record")
    show.add_argument("run_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="as one JSON object")
    cancel = commands.add_parser("cancel", help="cancel a queued or running run")
    cancel.add_argument("run_id", metavar="ID")
    return parser.parse_args(argv)


def record_data(record: CardRunRecord) -> dict[str, Any]:
    """A run's record as JSON data (times in ISO 8601)."""
    data = dataclasses.asdict(record)
    for key, value in data.items():
        if isinstance(value, datetime):
            data[key] = value.isoformat()
    data["tokens"] = record.tokens
    return data


def _error(message: str, status: int = EXIT_BAD_INPUT) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


async def _enqueue(runtime: DurableRuntime, config: RunnerConfig, args: argparse.Namespace) -> int:
    from loopkit.cards.card import Card
    from loopkit.cards.durable import CardRunRequest
    from loopkit.cards.queue import enqueue_card_run

    pipeline = None
    if args.then is not None:
        from loopkit.cards.durable import PipelineSpec

        given = str(config.transcript) if config.transcript is not None else None
        pipeline = PipelineSpec(develop=args.role, then=args.then, transcript=given)
        if args.round_trips is not None:
            pipeline.round_trips = args.round_trips
    for card in args.cards:
        request = CardRunRequest.create(
            card, role=args.role, config=config, repo=args.repo, message=args.message,
            pipeline=pipeline,
        )  # fmt: skip
        done = await enqueue_card_run(runtime, request)
        if not done.created:
            print(
                f"note: {Card.load(card).title!r} ({card}) already has a queued or running run; "
                "not queued again",
                file=sys.stderr,
            )
        print(done.run_id, flush=True)
    return EXIT_OK


async def _list(runtime: DurableRuntime, args: argparse.Namespace) -> int:
    from rich.console import Console

    from loopkit.cards.durable import list_card_runs
    from loopkit.demo.durable_runs import runs_table

    records = await list_card_runs(runtime, state=args.state, limit=args.limit)
    if args.json:
        for record in records:
            print(json.dumps(record_data(record)))
    elif records:
        Console(soft_wrap=False).print(runs_table(records))
    else:
        print("no card runs" + (f" in state {args.state}" if args.state else ""))
    return EXIT_OK


async def _show(runtime: DurableRuntime, args: argparse.Namespace) -> int:
    from loopkit.cards.durable import get_card_run

    record = await get_card_run(runtime, args.run_id)
    if record is None:
        return _error(f"there is no card run {args.run_id!r} (see python -m loopkit.runs list)")
    data = record_data(record)
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            print(f"{key:20} {'-' if value is None else value}")
    return EXIT_OK


async def _cancel(runtime: DurableRuntime, args: argparse.Namespace) -> int:
    from loopkit.cards.queue import cancel_card_run

    record = await cancel_card_run(runtime, args.run_id)
    print(f"cancelled run {record.run_id} ({record.state} before)")
    return EXIT_OK


async def run(config: RunnerConfig, args: argparse.Namespace) -> int:
    """Carry out one command against the database ``config`` names."""
    from loopkit.demo.durable_runs import database_for
    from loopkit.durable.errors import DatabaseUnavailableError, DurableError
    from loopkit.durable.executors import process_executor_id
    from loopkit.durable.runtime import DurableRuntime

    runtime = DurableRuntime(
        database_for(config),
        executor_id=process_executor_id("runs"),
        log_level="CRITICAL",  # an unreachable database is said below, once
        on_lost_database="raise",  # a command says so at once rather than wait
    )
    try:
        async with runtime:
            try:
                if args.command == "enqueue":
                    return await _enqueue(runtime, config, args)
                if args.command == "list":
                    return await _list(runtime, args)
                if args.command == "show":
                    return await _show(runtime, args)
                return await _cancel(runtime, args)
            except DatabaseUnavailableError:
                raise
            except DurableError as e:
                return _error(str(e), EXIT_FAILED if "has ended" in str(e) else EXIT_BAD_INPUT)
    except DatabaseUnavailableError as e:
        return _error(f"{e}; try again once it is back", EXIT_FAILED)


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    args = parse_args(argv)
    from loopkit.cards import ConfigError, load_config
    from loopkit.cards.roles import RoleError
    from loopkit.demo.run import check_durable
    from loopkit.demo.workspace import WorkspaceError
    from loopkit.errors import CardError

    try:
        overrides: dict[str, Any] = {"database_url": args.database}
        if args.command == "enqueue":
            overrides["model"] = args.model
        config = load_config(args.config, **overrides)
        check_durable(config)
        if args.command == "enqueue":
            from loopkit.cards.card import Card
            from loopkit.demo.role_tools import check_message, find_role, with_role_limits
            from loopkit.demo.workspace import check_earlier_repo

            role = find_role(config, args.role)  # unknown: one line naming the roles
            then = find_role(config, args.then) if args.then is not None else None
            if args.round_trips is not None and then is None:
                raise ConfigError("--round-trips goes with --then ROLE")
            check_message(args.message)
            config = with_role_limits(config, role)
            if args.repo is not None:
                check_earlier_repo(args.repo, config.app_source.name)
            for card in args.cards:  # every one a card, before any is queued
                Card.load(card, max_bytes=config.max_card_bytes)
                if config.scripted:  # its transcript exists (a real model's key is the worker's)
                    from loopkit.demo.run import check_model

                    check_model(config, card, role.name)
                    if then is not None:
                        from loopkit.demo.pipeline_rounds import pipeline_transcript

                        follows = pipeline_transcript(config, card, then.name, 1)
                        if follows is not None and not follows.is_file():
                            raise ConfigError(f"--then {then.name}: no transcript {follows}")
    except (ConfigError, CardError, RoleError, WorkspaceError) as e:
        return _error(str(e))
    from loopkit.demo.durable_runs import database_for

    url = database_for(config)
    if args.command != "enqueue" and url.startswith("sqlite:///"):
        where = url.removeprefix("sqlite:///")
        if not Path(where).exists():  # nothing was ever queued here: create nothing
            if args.command != "list":
                return _error(f"there is no card run {args.run_id!r} (no runs yet in {where})")
            if not args.json:
                print("no card runs" + (f" in state {args.state}" if args.state else ""))
            return EXIT_OK
    return asyncio.run(run(config, args))


if __name__ == "__main__":
    sys.exit(main())
