"""A user's grader for tests/evals: fails a case whose runs took more than a given number of
tool rounds in total (named in a suite as ``tests.evals.custom_grader:FewRounds``)."""

from __future__ import annotations

from loopkit.evals import CaseRun, GraderVerdict


class FewRounds:
    name = "few-rounds"
    most = 30

    async def grade(self, case: CaseRun) -> GraderVerdict:
        rounds = sum(r.rounds for r in case.runs)
        return GraderVerdict(
            grader=self.name, passed=rounds <= self.most, detail=f"{rounds} rounds"
        )


class NotAGrader:
    pass
