"""The rounds of a develop → test pipeline (:mod:`loopkit.demo.pipeline`): each run's settings and
the transcript the scripted model plays in it, what the developer is told after a failed test
(:func:`defects_message`), and for the queue's pipeline (durable runs, the workers) the run that
follows a run that ended (:func:`next_request`, :func:`next_run_id`).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Collection
from pathlib import Path
from typing import Any

from loopkit.cards import RunnerConfig, RunResult
from loopkit.cards.durable import CardRunRequest
from loopkit.cards.roles import Role, RoleError
from loopkit.demo.model import bundled_transcripts
from loopkit.demo.role_tools import DEFAULT_ROLE, find_role, with_role_limits
from loopkit.errors import CardError

__all__ = [
    "defects_go_back",
    "defects_message",
    "next_request",
    "next_run_id",
    "pipeline_transcript",
    "round_settings",
    "tester_record",
]

log = logging.getLogger(__name__)

#: Before the tester's defects in the developer's next message.
DEFECTS_TITLE = "THE TESTER FOUND DEFECTS"
_SHOWN = 12


def pipeline_transcript(
    config: RunnerConfig, card_path: Path, role: str, round_no: int
) -> Path | None:
    """The transcript the scripted model plays for ``role`` in round ``round_no`` (None for a
    real model, and for the first round of the first role: the run's own rule applies)."""
    if not config.scripted:
        return None
    suffix = "" if round_no == 1 else f".round-{round_no}"
    if config.transcript is not None:
        return _beside(config.transcript, role, round_no)
    if role == DEFAULT_ROLE and round_no == 1:
        return None
    found = bundled_transcripts(role).get(card_path.stem + suffix)
    if found is None:
        of = "" if role == DEFAULT_ROLE else f"{role}/"
        raise CardError(
            f"the scripted model has no transcript {of}{card_path.stem}{suffix}.json for round "
            f"{round_no} of the {role} role; give one with --transcript (the pipeline reads "
            "test/<name>.json and <name>.round-<k>.json beside it), or use a real model"
        )
    return found


def _beside(base: Path, role: str, round_no: int) -> Path:
    """The transcript of ``role`` in round ``round_no`` beside ``base`` (the first developer
    run's): ``ROLE/<name>.json`` for another role, ``<name>.round-<k>.json`` for round k."""
    suffix = "" if round_no == 1 else f".round-{round_no}"
    folder = base.parent if role == DEFAULT_ROLE else base.parent / role
    return folder / f"{base.stem}{suffix}{base.suffix}"


def defects_message(
    result: RunResult | None, record: Any, report: Path | None, round_no: int
) -> str:
    """What the developer is told after the tester failed in round ``round_no``: the tester's
    reason, its failed checks and findings (``record``: its run record, a
    :class:`loopkit_ui.scripts.RunResult`, None when it kept none) and its ``report``."""
    lines = [DEFECTS_TITLE, "-" * len(DEFECTS_TITLE)]
    reason = result.reason if result is not None and result.reason else "no reason given"
    lines.append(f"The test run of round {round_no} failed: {reason}")
    failed = [s for s in getattr(record, "steps", []) if getattr(s, "status", "") == "failed"]
    for step in failed[:_SHOWN]:
        evidence = " ".join(str(step.message).split())[:300]
        lines.append(f"- failed check: {step.label}" + (f" (saw: {evidence})" if evidence else ""))
    findings = record.unique_findings() if hasattr(record, "unique_findings") else []
    for finding in findings[:_SHOWN]:
        lines.append(f"- finding {finding.fingerprint} ({finding.kind}): {finding.summary}")
    if report is not None:
        lines.append(f"The tester's report: {report}")
    lines.append(
        "Fix these defects in this repository (your earlier commit is in it), check every "
        "acceptance criterion live again, record the evidence and commit; the tester then tests "
        "the card again."
    )
    return "\n".join(lines)


def tester_record(run_dir: Path) -> tuple[Any, Path | None]:
    """A test run's record as its tools kept it in its folder (None when there is none), and
    its report when it wrote one."""
    from loopkit.demo.tester import REPORT_FOLDER

    folder = run_dir / REPORT_FOLDER
    try:
        from loopkit_ui.scripts.results import RunResult as TestRecord

        data = json.loads((folder / "record.json").read_text("utf-8"))
        record = TestRecord.model_validate(data["result"])
    except (ImportError, OSError, ValueError, KeyError, TypeError):
        return None, None
    report = Path(record.report) if record.report else None
    return record, report


def round_settings(
    config: RunnerConfig, card_path: Path, role: Role, round_no: int, given: Collection[str]
) -> RunnerConfig:
    """The settings of one run of the pipeline: the role's limits, its transcript, and where
    its turns are recorded (``--record-transcript PATH``: the layout ``--transcript PATH``
    plays back, see :func:`pipeline_transcript`)."""
    settings = with_role_limits(config, role, given)
    transcript = pipeline_transcript(config, card_path, role.name, round_no)
    if transcript is not None:
        if not transcript.is_file():
            raise CardError(f"the scripted model's transcript {transcript} does not exist")
        settings = settings.model_copy(update={"transcript": transcript})
    if config.record_transcript is not None:
        recorded = _beside(config.record_transcript, role.name, round_no)
        settings = settings.model_copy(update={"record_transcript": recorded})
    return settings


def next_request(
    request: CardRunRequest, result: RunResult, repo: Path, run_dir: Path, run_id: str
) -> CardRunRequest | None:
    """The run the queue's pipeline runs after ``request``'s run (``run_id``, in ``repo``)
    ended with ``result``: the tester after a developer that is done, the developer again with
    the defects after a tester that failed while round trips are left; None: the pipeline ends."""
    spec = request.pipeline
    if spec is None:
        return None
    if request.role == spec.develop and result.done:
        role, message, step = spec.then, None, spec
    elif request.role == spec.then and not result.done and spec.round <= spec.round_trips:
        record, report = tester_record(run_dir)
        message = defects_message(result, record, report, spec.round)
        role, step = spec.develop, spec.model_copy(update={"round": spec.round + 1})
    else:
        return None
    settings = _next_settings(request, role, step.round, run_id)
    if settings is None:
        return None
    return CardRunRequest.create(
        request.card, role=role, config=settings, repo=repo, message=message, parent=run_id,
        pipeline=step, started_by=request.started_by,
    )  # fmt: skip


def defects_go_back(request: CardRunRequest) -> bool:
    """Whether a failing ``then`` run of ``request``'s pipeline sends its defects back to the
    developer: a round trip is left and the developer's next run can be set up (its role, its
    transcript). Then the tester's failure leaves the card In Work, not Failed."""
    spec = request.pipeline
    if spec is None or request.role != spec.then or spec.round > spec.round_trips:
        return False
    return _next_settings(request, spec.develop, spec.round + 1) is not None


def _next_settings(
    request: CardRunRequest, role: str, round_no: int, run_id: str | None = None
) -> RunnerConfig | None:
    """The settings of the pipeline's next run in ``role`` (round ``round_no``), or None when
    it cannot run here (no transcript for it, a role gone): the pipeline ends."""
    spec = request.pipeline
    assert spec is not None
    given = Path(spec.transcript) if spec.transcript is not None else None
    base = request.runner_config().model_copy(update={"transcript": given})
    try:
        return round_settings(base, Path(request.card), find_role(base, role), round_no, ())
    except (CardError, RoleError) as e:
        if run_id is not None:
            log.warning("the pipeline of %s ends after run %s: %s", request.card, run_id, e)
        return None


def next_run_id(parent: str, request: CardRunRequest) -> str:
    """The id of the run queued after ``parent``: the same on a resumed run (queued once)."""
    round_no = request.pipeline.round if request.pipeline is not None else 1
    return uuid.uuid5(uuid.NAMESPACE_URL, f"loopkit:{parent}:{request.role}:{round_no}").hex
