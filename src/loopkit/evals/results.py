"""An eval's results: one JSON file, every case (card × config × repeat) with its graders'
verdicts, its runs and its figures, as pydantic models (read them back with
:meth:`EvalResult.load`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loopkit.evals.pricing import Price
from loopkit.evals.stats import wilson_interval

__all__ = [
    "CardInfo",
    "CaseResult",
    "ConfigInfo",
    "EvalResult",
    "GraderVerdict",
    "PassRate",
    "RunRef",
]

#: Where a case is: waiting for a worker, running, graded, or stopped (the budget, a stop).
CaseStatus = Literal["queued", "running", "grading", "passed", "failed", "stopped"]


class GraderVerdict(BaseModel):
    """One grader's verdict on a case. ``passed`` None: the grader does not apply to it (the
    ``detail`` says why, e.g. the card has no check scripts); it neither passes nor fails it."""

    model_config = ConfigDict(extra="forbid")

    grader: str
    passed: bool | None
    detail: str = ""
    #: A file that shows the verdict (a check run's report), if any.
    report: str | None = None


class RunRef(BaseModel):
    """One run of a case's pipeline (a develop run, a test run, ...), as its log says."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    role: str
    #: The pipeline's round (a developer's second round after the tester's defects is 2).
    round: int = 1
    #: ``done``, ``failed``, ``cancelled``, ``running``, ``queued``, ``interrupted``.
    state: str
    reason: str | None = None
    log_path: str | None = None
    #: The run's report: a test run's HTML report, a develop run's replay report.
    report: str | None = None
    repo: str | None = None
    commit: str | None = None
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    seconds: float = 0.0
    #: Input + output tokens of each model request, in order.
    tokens_per_round: list[int] = Field(default_factory=list)
    cost: float | None = None
    #: When the database says the run was queued and last updated (ISO 8601).
    created_at: str | None = None
    updated_at: str | None = None


class CaseResult(BaseModel):
    """One case: a card run through the pipeline under one config, one repeat."""

    model_config = ConfigDict(extra="forbid")

    key: str
    card: str
    config: str
    repeat: int
    status: CaseStatus = "queued"
    passed: bool | None = None
    graders: list[GraderVerdict] = Field(default_factory=list)
    runs: list[RunRef] = Field(default_factory=list)
    #: The case's copy of the card (its state is written there) and its first run's id.
    card_path: str
    first_run: str
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost: float | None = None
    #: The runs' own seconds added up, and from the first run's start to the last run's end.
    seconds: float = 0.0
    wall_seconds: float = 0.0
    #: Seconds the eval spent grading the case (the graders' own runs included).
    grading_seconds: float = 0.0
    note: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def ended(self) -> bool:
        return self.status in ("passed", "failed", "stopped")

    def failed_graders(self) -> list[GraderVerdict]:
        return [g for g in self.graders if g.passed is False]


class ConfigInfo(BaseModel):
    """A config of the eval: its name, model and price."""

    model_config = ConfigDict(extra="forbid")

    name: str
    model: str
    path: str | None = None
    transcript: str | None = None
    price: Price


class CardInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    title: str
    path: str
    checks: list[str] = Field(default_factory=list)


class PassRate(BaseModel):
    """Passed out of graded cases, with the 95 % Wilson interval of the rate."""

    passed: int
    total: int
    low: float
    high: float

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    @classmethod
    def of(cls, cases: Iterable[CaseResult]) -> PassRate:
        graded = [c for c in cases if c.status in ("passed", "failed")]
        passed = sum(1 for c in graded if c.passed)
        low, high = wilson_interval(passed, len(graded))
        return cls(passed=passed, total=len(graded), low=low, high=high)

    def text(self) -> str:
        if not self.total:
            return "no case graded"
        return (
            f"{self.passed}/{self.total} ({self.rate:.0%}; 95% interval "
            f"{self.low:.0%}-{self.high:.0%})"
        )


class EvalResult(BaseModel):
    """The whole eval (see the module docstring); written again as cases end."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["loopkit-eval/1"] = "loopkit-eval/1"
    eval_id: str
    suite: str
    started_at: str
    ended_at: str | None = None
    #: ``running``, ``complete``, or ``stopped: <why>`` (the budget, a signal).
    status: str = "running"
    database: str
    repeat: int
    develop: str
    then: str | None
    round_trips: int
    graders: list[str]
    max_cost: float | None = None
    configs: list[ConfigInfo]
    cards: list[CardInfo]
    cases: list[CaseResult]

    @property
    def spend(self) -> float:
        """Dollars of every run so far (runs without a price count 0)."""
        return sum(c.cost or 0.0 for c in self.cases)

    def case(self, key: str) -> CaseResult:
        for case in self.cases:
            if case.key == key:
                return case
        raise KeyError(key)

    def rate(self, *, config: str | None = None, card: str | None = None) -> PassRate:
        return PassRate.of(
            c
            for c in self.cases
            if (config is None or c.config == config) and (card is None or c.card == card)
        )

    def save(self, path: Path) -> None:
        """Write the file whole or not at all (a kill never leaves half of it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        text = self.model_dump_json(indent=1)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> EvalResult:
        """Read an eval's results; :class:`ValueError` naming the file when it is not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ValueError(f"cannot read eval results {path}: {e.strerror or e}") from None
        except ValueError as e:
            raise ValueError(f"{path} is not JSON ({e}); expected an eval's results") from None
        if not isinstance(data, dict) or data.get("format") != "loopkit-eval/1":
            raise ValueError(
                f'{path} is not an eval\'s results (no "format": "loopkit-eval/1"); give the '
                "eval.json that python -m loopkit.evals wrote"
            )
        return cls.model_validate(data)
