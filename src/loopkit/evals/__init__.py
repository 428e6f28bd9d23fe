"""Evals: which model, prompt or role does the cards best, at what cost (application level).

Card evals (``python -m loopkit.evals``) run every card of a suite through the develop → test
pipeline under each config, N times, on the durable queue, grade each case (:mod:`.graders`),
and write the results (:mod:`.results`), an HTML report (:mod:`.report`) and JUnit XML;
:mod:`.compare` tells two evals apart. Library evals run a :class:`loopkit.Agent` as the task of
a ``pydantic_evals.Dataset`` (:mod:`.library`, the ``evals`` extra).

Like ``loopkit.cards`` and ``loopkit.demo`` this is the application, not the library: it uses
the demo's pipeline and ``loopkit_ui``'s script runner. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "BuildGrader",
    "CaseResult",
    "CaseRun",
    "ChecksGrader",
    "Comparison",
    "CriteriaGrader",
    "EvalResult",
    "EvalRun",
    "EvalSuite",
    "Grader",
    "GraderVerdict",
    "LimitsGrader",
    "PassRate",
    "Price",
    "RunRef",
    "SuiteError",
    "TesterGrader",
    "agent_task",
    "compare_evals",
    "fisher_exact",
    "load_suite",
    "make_graders",
    "price_for",
    "wilson_interval",
]

_EXPORTS: dict[str, str] = {
    "BuildGrader": "loopkit.evals.graders",
    "CaseRun": "loopkit.evals.graders",
    "ChecksGrader": "loopkit.evals.graders",
    "CriteriaGrader": "loopkit.evals.graders",
    "Grader": "loopkit.evals.graders",
    "LimitsGrader": "loopkit.evals.graders",
    "TesterGrader": "loopkit.evals.graders",
    "make_graders": "loopkit.evals.graders",
    "CaseResult": "loopkit.evals.results",
    "EvalResult": "loopkit.evals.results",
    "GraderVerdict": "loopkit.evals.results",
    "PassRate": "loopkit.evals.results",
    "RunRef": "loopkit.evals.results",
    "EvalRun": "loopkit.evals.engine",
    "EvalSuite": "loopkit.evals.suite",
    "SuiteError": "loopkit.evals.suite",
    "load_suite": "loopkit.evals.suite",
    "Comparison": "loopkit.evals.compare",
    "compare_evals": "loopkit.evals.compare",
    "Price": "loopkit.evals.pricing",
    "price_for": "loopkit.evals.pricing",
    "fisher_exact": "loopkit.evals.stats",
    "wilson_interval": "loopkit.evals.stats",
    "agent_task": "loopkit.evals.library",
}

if TYPE_CHECKING:
    from loopkit.evals.compare import Comparison, compare_evals
    from loopkit.evals.engine import EvalRun
    from loopkit.evals.graders import (
        BuildGrader,
        CaseRun,
        ChecksGrader,
        CriteriaGrader,
        Grader,
        LimitsGrader,
        TesterGrader,
        make_graders,
    )
    from loopkit.evals.library import agent_task
    from loopkit.evals.pricing import Price, price_for
    from loopkit.evals.results import CaseResult, EvalResult, GraderVerdict, PassRate, RunRef
    from loopkit.evals.stats import fisher_exact, wilson_interval
    from loopkit.evals.suite import EvalSuite, SuiteError, load_suite
else:
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
