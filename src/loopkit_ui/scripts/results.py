"""What a run produced: one result per executed step, the findings, the output files."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from loopkit_ui.scripts.findings import Finding

__all__ = ["CriterionResult", "RunResult", "RunStatus", "StepResult", "StepStatus"]

StepStatus = Literal["passed", "failed", "skipped"]
#: ``running`` until the run ends (an agent's test run is a row from its start), then its
#: verdict: ``passed``, ``failed``, ``error`` (it could not run to its end) or ``cancelled``.
RunStatus = Literal["passed", "failed", "error", "running", "cancelled"]


class StepResult(BaseModel):
    """One executed (or skipped) step, in execution order."""

    index: int
    path: str = Field(description="where the step is, e.g. steps[2].then[0]")
    phase: Literal["setup", "steps", "teardown"]
    depth: int = 0
    type: str
    label: str
    status: StepStatus = "passed"
    ms: float = 0.0
    oracle_ms: float = 0.0
    message: str = ""
    action: dict[str, Any] | None = Field(default=None, description="the backend's ActionResult")
    screenshot: str | None = Field(default=None, description="path relative to the run folder")
    findings: list[str] = Field(default_factory=list, description="fingerprints")


class CriterionResult(BaseModel):
    """An acceptance criterion in an agent's test run: the steps that checked it (its
    evidence), its verdict and a screenshot of the app at one of them."""

    id: str
    text: str
    manual: bool = Field(default=False, description="not checkable in the app: unverified")
    status: Literal["passed", "failed", "unchecked", "unverified"] = "unchecked"
    steps: list[int] = Field(default_factory=list, description="indexes into steps")
    screenshot: str | None = None


class RunResult(BaseModel):
    """A whole run of one script."""

    run_id: str
    script: str
    name: str
    status: RunStatus = "passed"
    started: str
    finished: str = ""
    ms: float = 0.0
    run_dir: str
    steps: list[StepResult] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="oracle notes, log steps")
    error: str | None = None
    app_exit: int | None = None
    app_pids: list[int] = Field(default_factory=list, description="every process id the app had")
    report: str | None = None
    gif: str | None = None
    screenshots: list[str] = Field(default_factory=list)
    videos: list[str] = Field(
        default_factory=list, description="videos (start_recording), relative to the run folder"
    )
    criteria: list[CriterionResult] = Field(
        default_factory=list, description="an agent's test run: each criterion and its evidence"
    )

    @property
    def passed(self) -> bool:
        """True when every step passed and no unexpected error finding came up."""
        return self.status == "passed"

    def count(self, status: StepStatus) -> int:
        """How many steps have this status."""
        return sum(1 for step in self.steps if step.status == status)

    def unique_findings(self) -> list[Finding]:
        """One finding per fingerprint (the first seen), in order."""
        seen: dict[str, Finding] = {}
        for finding in self.findings:
            seen.setdefault(finding.fingerprint, finding)
        return list(seen.values())
