"""A run's result with every secret redacted, before it reaches a report or the database.

Text from the application (its log, its windows, a crash dialog), from the script (paths,
typed text) and from the machine goes into step messages, findings, notes and errors. Before a
run is written anywhere it is copied with every string passed through a
:class:`~loopkit.redaction.Redactor` (secret shapes and the values of secret-looking environment
variables, read at that moment). A finding whose text changed gets the fingerprint of its
redacted text, and the steps' references to it follow, so the copy is consistent in itself.
"""

from __future__ import annotations

from loopkit.redaction import Redactor
from loopkit_ui.scripts.results import RunResult

__all__ = ["redacted_result"]


def redacted_result(result: RunResult, redactor: Redactor | None = None) -> RunResult:
    """A copy of ``result`` with every text redacted (``result`` itself is left as it is)."""
    redactor = redactor or Redactor()
    safe = RunResult.model_validate(redactor.redact_data(result.model_dump(mode="json")))
    renamed = {
        old.fingerprint: new.fingerprint
        for old, new in zip(result.findings, safe.findings, strict=True)
        if old.fingerprint != new.fingerprint
    }
    if renamed:
        for step in safe.steps:
            step.findings = [renamed.get(fp, fp) for fp in step.findings]
    return safe
