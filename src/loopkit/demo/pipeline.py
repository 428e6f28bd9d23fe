"""Develop, then test: ``python -m loopkit.demo CARD.md --then test``.

The first role (``develop`` by default) runs the card; when it ends done the card goes to In Test
(not Done) and the second role (``test``) runs in the same repository, on a fresh app it starts
itself: the card is Done only when the tester passes. When the tester fails, what it found (its
reason, its failed checks, its findings, its report) goes back to the developer as the message of
its next run, in the same repository, and the tester runs again: at most ``round_trips`` times
(2 by default), then the card stays Failed. The card file says where it is: In Work while a
developer runs, In Test while a tester runs, Done or Failed at the end.

With the scripted model each run plays a transcript: the developer's first run the card's (or
``--transcript``), the tester's ``test/<card>.json`` beside it, and round *k* > 1
``<card>.round-<k>.json`` in the same folders
(:func:`~loopkit.demo.pipeline_rounds.pipeline_transcript`). Each round's settings and the
queue's pipeline (the run that follows a run) are in :mod:`loopkit.demo.pipeline_rounds`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from loopkit.cards import Card, CardState, RunnerConfig
from loopkit.cards.roles import Role
from loopkit.demo.model import first_line, role_line
from loopkit.demo.pipeline_rounds import defects_message, round_settings
from loopkit.demo.run import run_card
from loopkit.errors import CardError

if TYPE_CHECKING:
    from loopkit.mcp.waiting_server import WaitingPythonServer

__all__ = ["DEFAULT_ROUND_TRIPS", "run_pipeline"]

#: How many times the tester's defects go back to the developer before the card stays Failed.
DEFAULT_ROUND_TRIPS = 2


async def run_pipeline(
    config: RunnerConfig,
    card: Card,
    console: Console,
    *,
    develop: Role,
    then: Role,
    repo: Path | None = None,
    message: str | None = None,
    round_trips: int = DEFAULT_ROUND_TRIPS,
    given: Collection[str] = (),
    prestarted: WaitingPythonServer | None = None,
) -> int:
    """Run ``card`` in ``develop``, then in ``then`` in the same repository, with up to
    ``round_trips`` returns to ``develop`` (see the module docstring); returns the exit status
    (0 only when the last ``then`` run passed). ``given``: the limits set on the command line
    (they beat each role's own); ``prestarted``: a UI server started earlier (the first run
    with the UI uses it)."""
    assert card.path is not None
    card_path = card.path
    note = message
    parent: str | None = None
    try:
        dev_config = round_settings(config, card_path, develop, 1, given)
    except CardError as e:
        return _stop(console, card_path, str(e))
    if config.durable:
        return await _run_durably(dev_config, card, console, develop, then, repo, note, round_trips)
    for round_no in range(1, round_trips + 2):
        console.rule(f"{develop.name} · round {round_no}")
        built = await run_card(
            dev_config, card, console, role=develop, repo=repo, message=note,
            done_state=CardState.IN_TEST, parent=parent,
            expected_state=CardState.IN_WORK if round_no > 1 else None, prestarted=prestarted,
        )  # fmt: skip
        if built.status != 0 or built.repo is None:
            return _ended(card_path, built.status)
        repo = built.repo
        try:
            test_config = round_settings(config, card_path, then, round_no, given)
            card = Card.load(card_path, max_bytes=config.max_card_bytes)
        except CardError as e:
            return _stop(console, card_path, str(e))
        # Whether the tester's defects can go back: the developer's next run, settled now, so
        # that a failing tester leaves the card In Work for it (never a Failed in between).
        next_dev: RunnerConfig | None = None
        cannot = ""
        if round_no <= round_trips:
            try:
                next_dev = round_settings(config, card_path, develop, round_no + 1, given)
            except CardError as e:
                cannot = str(e)
        console.rule(f"{then.name} · round {round_no} · in {escape(str(repo))}")
        tested = await run_card(
            test_config, card, console, role=then, repo=repo, parent=built.run_id,
            failed_state=CardState.IN_WORK if next_dev is not None else CardState.FAILED,
        )  # fmt: skip
        parent = tested.run_id
        if tested.status == 0:
            console.print(
                f"[bold green]Pipeline:[/bold green] {develop.name} → {then.name} passed in round "
                f"{round_no}; the card is Done."
            )
            return 0
        if tested.status != 1:
            return _ended(card_path, tested.status)  # interrupted, or bad input: nothing more
        if round_no > round_trips:
            break
        if next_dev is None:
            return _stop(console, card_path, cannot)
        dev_config = next_dev
        tester = tested.tester
        note = defects_message(
            tested.result, getattr(tester, "result", None), getattr(tester, "report_path", None),
            round_no,
        )  # fmt: skip
        console.print(
            f"[yellow]Pipeline:[/yellow] the {then.name} run failed; its defects go back to "
            f"{develop.name} (round trip {round_no} of {round_trips}); the card is In Work."
        )
        card = Card.load(card_path, max_bytes=config.max_card_bytes)
    console.print(
        f"[red]Pipeline:[/red] {then.name} still fails after {round_trips} round trip(s); the "
        "card stays Failed."
    )
    return 1


async def _run_durably(
    config: RunnerConfig,
    card: Card,
    console: Console,
    develop: Role,
    then: Role,
    repo: Path | None,
    message: str | None,
    round_trips: int,
) -> int:
    """The pipeline with ``--durable``: the queue's pipeline
    (:func:`~loopkit.demo.pipeline_rounds.next_request`), each run a durable workflow, run in
    this process one after the other (see
    :func:`loopkit.demo.durable_runs.run_durable_demo`); ``config``: the first developer run's."""
    from loopkit.cards.durable import PipelineSpec
    from loopkit.demo.durable_runs import run_durable_demo

    assert card.path is not None
    given = str(config.transcript.resolve()) if config.transcript is not None else None
    spec = PipelineSpec(
        develop=develop.name, then=then.name, round_trips=round_trips, transcript=given
    )
    console.print(first_line(config, card.path, develop.name))
    console.print(role_line(develop))
    if card.state is not CardState.NEW:
        console.print(
            f"[yellow]note:[/yellow] the card is in state {card.state.value}; running it again"
        )
    console.rule(f"{develop.name} · round 1")
    return await run_durable_demo(
        config, card, console, role=develop, repo=repo, message=message, pipeline=spec
    )


def _stop(console: Console, card_path: Path, reason: str) -> int:
    console.print(f"[red]error:[/red] {escape(reason)}")
    return _ended(card_path, 1)


def _ended(card_path: Path, status: int) -> int:
    """The pipeline ends with ``status`` before its tester passed: a card left In Work or In
    Test by a run that never ran (its set-up failed) or by the step before is Failed."""
    if status != 0:
        with contextlib.suppress(CardError, OSError):
            card = Card.load(card_path)
            if card.state in (CardState.IN_WORK, CardState.IN_TEST):
                card.save_state(CardState.FAILED)
    return status
