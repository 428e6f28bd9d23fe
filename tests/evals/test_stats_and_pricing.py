"""The eval's arithmetic: Wilson intervals, Fisher's exact test, prices from litellm's table."""

from __future__ import annotations

import math

import pytest

from loopkit.evals import fisher_exact, price_for, wilson_interval


@pytest.mark.parametrize(
    ("passed", "total", "low", "high"),
    [
        # Reference values (Wilson score interval, z = 1.96; as statsmodels' proportion_confint
        # with method="wilson" gives them).
        (0, 3, 0.0, 0.561497),
        (3, 3, 0.438503, 1.0),
        (5, 10, 0.236593, 0.763407),
        (1, 3, 0.061490, 0.792340),
    ],
)
def test_wilson_interval(passed: int, total: int, low: float, high: float) -> None:
    got = wilson_interval(passed, total)
    assert got == pytest.approx((low, high), abs=1e-5)


def test_wilson_interval_of_nothing_and_bad_counts() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="passed=4, total=3"):
        wilson_interval(4, 3)


@pytest.mark.parametrize(
    ("table", "p"),
    [
        # Reference values: scipy.stats.fisher_exact(..., alternative="two-sided").
        ((3, 3, 0, 3), 0.1),
        ((3, 4, 1, 4), 0.485714),  # the lady tasting tea
        ((10, 10, 0, 10), 1.082509e-05),
        ((2, 3, 2, 3), 1.0),
        ((8, 10, 1, 6), 0.034965),
    ],
)
def test_fisher_exact(table: tuple[int, int, int, int], p: float) -> None:
    assert fisher_exact(*table) == pytest.approx(p, rel=1e-4)


def test_a_scripted_config_costs_nothing_and_says_so() -> None:
    price = price_for("scripted")
    assert price.note == "scripted"
    assert price.cost({"input_tokens": 10_000, "output_tokens": 500}) == 0.0


def test_litellm_prices_input_output_cache_reads_and_writes_apart() -> None:
    from loopkit.providers.litellm import load_litellm

    info = load_litellm().get_model_info("anthropic/claude-sonnet-4-5")
    price = price_for("anthropic/claude-sonnet-4-5")
    assert price.known and "litellm price table" in price.note
    totals = {
        "input_tokens": 10_000,  # all input, cache reads and writes included
        "cached_input_tokens": 6_000,
        "cache_creation_input_tokens": 3_000,
        "output_tokens": 500,
    }
    expected = (
        1_000 * info["input_cost_per_token"]
        + 6_000 * info["cache_read_input_token_cost"]
        + 3_000 * info["cache_creation_input_token_cost"]
        + 500 * info["output_cost_per_token"]
    )
    assert price.cost(totals) == pytest.approx(expected)
    # the cache is priced apart: reading it is cheaper than plain input, writing it dearer
    assert info["cache_read_input_token_cost"] < info["input_cost_per_token"]
    assert info["cache_creation_input_token_cost"] > info["input_cost_per_token"]
    assert not math.isclose(price.cost(totals) or 0, price.cost({**totals, "cached_input_tokens": 0,
                            "cache_creation_input_tokens": 0}) or 0)  # fmt: skip


def test_a_model_without_a_price_says_so_instead_of_guessing() -> None:
    price = price_for("openai/qwen2.5-coder-32b-instruct")
    assert not price.known
    assert price.note.startswith("no price for model openai/qwen2.5-coder-32b-instruct")
    assert price.cost({"input_tokens": 1000, "output_tokens": 10}) is None
