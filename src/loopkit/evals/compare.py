"""``python -m loopkit.evals compare OLD.json NEW.json``: which cases got better or worse.

Cases are matched by card and config (their repeats added up); two evals of one config each
(say a change to a role, run before and after) are matched by card alone, and ``--old-config``
/ ``--new-config`` pick the configs to compare (also two configs of one eval). A case is worse
when its pass rate fell; a worse case that passed at least once before is a regression (exit
status 1: a CI gate). With two or more repeats on each side a significance note comes with it
(Fisher's exact test on the pass counts).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from loopkit.evals.results import EvalResult, PassRate
from loopkit.evals.stats import fisher_exact

__all__ = ["CaseChange", "Comparison", "compare_evals"]

#: Below this p-value a change is called significant.
SIGNIFICANCE = 0.05


class CaseChange(BaseModel):
    """One card (under one config) in both evals."""

    card: str
    old_config: str
    new_config: str
    old: PassRate
    new: PassRate
    change: Literal["better", "worse", "same", "new", "gone"]
    #: Fisher's exact test p-value (None: too few repeats on a side to say).
    p_value: float | None = None
    old_cost: float | None = None
    new_cost: float | None = None

    @property
    def regression(self) -> bool:
        """Worse, and it had passed before."""
        return self.change == "worse" and self.old.passed > 0

    def note(self) -> str:
        if self.change == "same":
            return ""
        if self.p_value is None:
            return "too few repeats for a significance test" if self.change in (
                "better", "worse") else ""  # fmt: skip
        verdict = "significant" if self.p_value < SIGNIFICANCE else "may be chance"
        return f"Fisher's exact test p={self.p_value:.3f} ({verdict} at 5%)"

    def line(self) -> str:
        where = self.card if self.old_config == self.new_config else (
            f"{self.card} ({self.old_config} → {self.new_config})")  # fmt: skip
        if self.old_config == self.new_config:
            where = f"{self.card} [{self.old_config}]"
        mark = {"better": "better", "worse": "WORSE", "same": "same", "new": "new",
                "gone": "gone"}[self.change]  # fmt: skip
        text = f"{mark:6} {where}: {self.old.passed}/{self.old.total} → "
        text += f"{self.new.passed}/{self.new.total}"
        note = self.note()
        return text + (f"  ({note})" if note else "")


class Comparison(BaseModel):
    old_eval: str
    new_eval: str
    cases: list[CaseChange]

    @property
    def regressions(self) -> list[CaseChange]:
        return [c for c in self.cases if c.regression]

    def text(self) -> str:
        lines = [c.line() for c in self.cases]
        better = sum(1 for c in self.cases if c.change == "better")
        worse = sum(1 for c in self.cases if c.change == "worse")
        lines.append(
            f"{better} better, {worse} worse, {len(self.regressions)} regression(s) "
            f"(a case that passed now fails)"
        )
        return "\n".join(lines)


def _pairs(
    old: EvalResult, new: EvalResult, old_config: str | None, new_config: str | None
) -> list[tuple[str, str]]:
    old_names = [c.name for c in old.configs]
    new_names = [c.name for c in new.configs]
    for given, names, which in ((old_config, old_names, "old"), (new_config, new_names, "new")):
        if given is not None and given not in names:
            raise ValueError(
                f"--{which}-config {given!r}: the {which} eval has the configs {', '.join(names)}"
            )
    if old_config is not None or new_config is not None:
        if old_config is None and len(old_names) != 1:
            raise ValueError("give --old-config too: the old eval has several configs")
        if new_config is None and len(new_names) != 1:
            raise ValueError("give --new-config too: the new eval has several configs")
        return [(old_config or old_names[0], new_config or new_names[0])]
    common = [n for n in old_names if n in new_names]
    if common:
        return [(n, n) for n in common]
    if len(old_names) == 1 and len(new_names) == 1:
        return [(old_names[0], new_names[0])]
    raise ValueError(
        "the evals share no config name; pick the configs to compare with --old-config and "
        "--new-config"
    )


def _cost(result: EvalResult, config: str, card: str) -> float | None:
    costs = [c.cost for c in result.cases if c.config == config and c.card == card and c.ended]
    if not costs or any(c is None for c in costs):
        return None
    return sum(c or 0.0 for c in costs) / len(costs)


def compare_evals(
    old: EvalResult,
    new: EvalResult,
    *,
    old_config: str | None = None,
    new_config: str | None = None,
) -> Comparison:
    """Compare ``new`` with ``old`` (see the module docstring)."""
    changes: list[CaseChange] = []
    for a, b in _pairs(old, new, old_config, new_config):
        cards = [c.name for c in old.cards]
        cards += [c.name for c in new.cards if c.name not in cards]
        for card in cards:
            before = old.rate(config=a, card=card)
            after = new.rate(config=b, card=card)
            if not before.total and not after.total:
                continue
            change: Literal["better", "worse", "same", "new", "gone"]
            p_value = None
            if not before.total:
                change = "new"
            elif not after.total:
                change = "gone"
            else:
                assert before.rate is not None and after.rate is not None
                change = (
                    "better" if after.rate > before.rate
                    else "worse" if after.rate < before.rate else "same"
                )  # fmt: skip
                if before.total >= 2 and after.total >= 2:
                    p_value = fisher_exact(before.passed, before.total, after.passed, after.total)
            changes.append(
                CaseChange(
                    card=card, old_config=a, new_config=b, old=before, new=after,
                    change=change, p_value=p_value, old_cost=_cost(old, a, card),
                    new_cost=_cost(new, b, card),
                )
            )  # fmt: skip
    return Comparison(old_eval=old.eval_id, new_eval=new.eval_id, cases=changes)
