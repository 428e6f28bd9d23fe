"""Small statistics for evals: a pass rate's Wilson interval and Fisher's exact test.

Both are a few lines of exact arithmetic on counts (no SciPy for two formulas): the Wilson score
interval is the usual interval for a pass rate over few repeats (it stays inside 0..1 and is not
empty at 0 or n passes), and Fisher's exact test says whether two pass counts differ by more than
chance when the repeats are few.
"""

from __future__ import annotations

import math

__all__ = ["Z_95", "fisher_exact", "wilson_interval"]

#: The normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


def wilson_interval(passed: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` out of ``total`` (95 % by default), as
    (low, high) between 0 and 1; (0, 1) when ``total`` is 0 (nothing is known)."""
    if total < 0 or not 0 <= passed <= total:
        raise ValueError(f"passed={passed}, total={total}: expected 0 <= passed <= total")
    if total == 0:
        return 0.0, 1.0
    p = passed / total
    z2 = z * z
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = z / (1 + z2 / total) * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact(a_passed: int, a_total: int, b_passed: int, b_total: int) -> float:
    """The two-sided p-value of Fisher's exact test on the 2x2 table of pass and fail counts of
    two groups (``a`` and ``b``): the chance, with the margins fixed, of a table at most as
    likely as the one seen."""
    for passed, total in ((a_passed, a_total), (b_passed, b_total)):
        if total < 0 or not 0 <= passed <= total:
            raise ValueError(f"passed={passed}, total={total}: expected 0 <= passed <= total")
    passes = a_passed + b_passed
    n = a_total + b_total
    if n == 0:
        return 1.0
    denominator = math.comb(n, passes)

    def probability(k: int) -> float:  # k passes in group a
        return math.comb(a_total, k) * math.comb(b_total, passes - k) / denominator

    seen = probability(a_passed)
    low, high = max(0, passes - b_total), min(a_total, passes)
    # A relative tolerance, as SciPy uses, so equal probabilities are not lost to rounding.
    chances = [probability(k) for k in range(low, high + 1)]
    return min(1.0, sum(p for p in chances if p <= seen * (1 + 1e-7)))
