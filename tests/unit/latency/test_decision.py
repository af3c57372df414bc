"""compare: thresholds, the Hodges-Lehmann ratio interval and verdicts on synthetic distributions."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.latency.decision import (
    Comparison,
    RatioEstimate,
    Verdict,
    against_plain,
    judge,
    ratio_interval,
)
from pytest_ortperf.values import parse_threshold

SRC = "--ortperf-threshold"


def rounds(seed: int, n: int, *, scale: float = 10.0, noise: float = 0.02) -> list[float]:
    """``n`` round medians around ``scale`` ms with log-normal noise of about ``noise``."""
    return [float(x) for x in scale * np.exp(np.random.default_rng(seed).normal(0.0, noise, n))]


def scaled(values: list[float], factor: float) -> list[float]:
    return [v * factor for v in values]


# parse_threshold -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10%", 0.10),
        (" 10% ", 0.10),
        ("2.5%", 0.025),
        ("150%", 1.5),
        ("0.1", 0.10),
        (0.15, 0.15),
        (1, 1.0),
    ],
)
def test_parse_threshold_accepts_percent_and_fractions(value: object, expected: float) -> None:
    assert parse_threshold(value, source=SRC) == pytest.approx(expected)


@pytest.mark.parametrize("value", ["ten", "10 percent", "%", "", "0.1.2", "1e%"])
def test_parse_threshold_rejects_text_naming_the_source(value: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_threshold(value, source=SRC)
    message = str(info.value)
    assert message.startswith(f"{SRC}: expected a threshold such as '10%' or 0.1")
    assert repr(value) in message


@pytest.mark.parametrize("value", [0, "0", "0%", -0.1, "-5%", math.inf, "inf", "nan", float("nan")])
def test_parse_threshold_rejects_zero_negative_and_non_finite(value: object) -> None:
    with pytest.raises(UsageError) as info:
        parse_threshold(value, source="ort_thresholds marker of test_x")
    assert str(info.value).startswith(
        "ort_thresholds marker of test_x: a threshold must be a positive finite amount"
    )
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("value", [True, False])
def test_parse_threshold_rejects_booleans(value: bool) -> None:
    with pytest.raises(UsageError, match=SRC):
        parse_threshold(value, source=SRC)


@pytest.mark.parametrize(
    ("value", "written", "meant"),
    [
        (5, "5", "500%"),
        ("5", "5", "500%"),
        (" 20 ", "20", "2000%"),
        (1.5, "1.5", "150%"),
        ("1.01", "1.01", "101%"),
    ],
)
def test_parse_threshold_refuses_a_bare_number_above_one_and_suggests_percent(
    value: object, written: str, meant: str
) -> None:
    """A bare 5 would be 500%: a user almost always meant 5%, so it is refused, not read silently."""
    with pytest.raises(UsageError) as info:
        parse_threshold(value, source="--ortperf-latency-threshold")
    assert str(info.value) == (
        f"--ortperf-latency-threshold: did you mean {written}%? A bare number is a fraction (0.05 means 5%), "
        f"so {written} would mean {meant}; write '{written}%', or '{meant}' if you meant that."
    )


@pytest.mark.parametrize(("value", "expected"), [("1", 1.0), (1.0, 1.0), ("0.05", 0.05), ("500%", 5.0)])
def test_parse_threshold_keeps_fractions_up_to_one_and_any_percentage(value: object, expected: float) -> None:
    assert parse_threshold(value, source=SRC) == pytest.approx(expected)


def test_parse_threshold_bare_number_too_large_to_scale_still_gets_the_hint() -> None:
    with pytest.raises(
        UsageError, match=r"did you mean 1e308%\? .* would mean far more than 100%; write '1e308%'\.$"
    ):
        parse_threshold("1e308", source=SRC)


# ratio_interval ------------------------------------------------------------


def test_identical_samples_give_ratio_one_and_an_interval_around_one() -> None:
    base = rounds(1, 15)
    estimate = ratio_interval(base, base)
    assert estimate.ratio == pytest.approx(1.0)
    assert estimate.low <= 1.0 <= estimate.high
    assert estimate.low < 1.0 < estimate.high
    assert estimate.confidence == 0.99


def test_samples_scaled_by_exactly_1_2_give_ratio_1_2() -> None:
    base = rounds(2, 15, noise=0.05)
    estimate = ratio_interval(base, scaled(base, 1.2))
    assert estimate.ratio == pytest.approx(1.2, rel=1e-9)
    assert estimate.low <= 1.2 <= estimate.high


def test_ratio_interval_is_symmetric_in_slower_and_faster() -> None:
    base, curr = rounds(3, 12), rounds(4, 12, scale=13.0)
    up, down = ratio_interval(base, curr), ratio_interval(curr, base)
    assert up.ratio == pytest.approx(1 / down.ratio)
    assert up.low == pytest.approx(1 / down.high)
    assert up.high == pytest.approx(1 / down.low)


def _width(estimate: RatioEstimate) -> float:
    return math.log(estimate.high) - math.log(estimate.low)


def test_interval_widens_with_noise() -> None:
    quiet = ratio_interval(rounds(5, 15, noise=0.01), rounds(6, 15, noise=0.01))
    noisy = ratio_interval(rounds(5, 15, noise=0.10), rounds(6, 15, noise=0.10))
    assert _width(noisy) > 5 * _width(quiet)


def test_interval_narrows_with_more_samples() -> None:
    few = ratio_interval(rounds(7, 8, noise=0.05), rounds(8, 8, noise=0.05))
    many = ratio_interval(rounds(7, 200, noise=0.05), rounds(8, 200, noise=0.05))
    assert _width(many) < _width(few) / 2


def test_a_lower_confidence_gives_a_narrower_interval() -> None:
    base, curr = rounds(9, 15, noise=0.05), rounds(10, 15, noise=0.05)
    wide, narrow = ratio_interval(base, curr, 0.99), ratio_interval(base, curr, 0.80)
    assert wide.ratio == narrow.ratio
    assert wide.low < narrow.low
    assert narrow.high < wide.high
    assert narrow.confidence == 0.80


@pytest.mark.parametrize(
    ("baseline", "current"),
    [([], [1.0]), ([1.0], []), ([], []), ([1.0, float("inf")], [1.0]), ([1.0, float("nan")], [1.0])],
)
def test_ratio_interval_rejects_empty_or_non_finite_input(
    baseline: list[float], current: list[float]
) -> None:
    with pytest.raises(ValueError, match="needs positive finite latencies on both sides"):
        ratio_interval(baseline, current)


@pytest.mark.parametrize(("baseline", "current"), [([1.0, 0.0], [1.0]), ([1.0], [-2.0, 1.0])])
def test_ratio_interval_rejects_non_positive_input_without_warnings(
    baseline: list[float], current: list[float]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="needs positive finite latencies on both sides"):
            ratio_interval(baseline, current)


def test_the_interval_covers_the_true_ratio_about_as_often_as_promised() -> None:
    rng = np.random.default_rng(2024)
    trials, misses = 400, 0
    for _ in range(trials):
        base = np.exp(rng.normal(0.0, 0.1, 15)).tolist()
        curr = (1.3 * np.exp(rng.normal(0.0, 0.1, 15))).tolist()
        estimate = ratio_interval(base, curr, 0.90)
        misses += not (estimate.low <= 1.3 <= estimate.high)
    assert 0.85 <= 1 - misses / trials <= 0.96


# describe / Comparison -----------------------------------------------------


def test_describe_shows_signed_percentages_and_the_confidence() -> None:
    assert RatioEstimate(1.2, 1.1, 1.3, 0.99).describe() == "+20.0% (99% CI +10.0% .. +30.0%)"
    assert RatioEstimate(0.8, 0.75, 0.9, 0.95).describe() == "-20.0% (95% CI -25.0% .. -10.0%)"


# judge on synthetic distributions -----------------------------------------


def _verdicts(factor: float, noise: float, n: int, trials: int = 100) -> Counter[Verdict]:
    return Counter(
        judge(
            rounds(2 * seed, n, noise=noise),
            rounds(2 * seed + 1, n, scale=10.0 * factor, noise=noise),
            threshold=0.10,
        ).verdict
        for seed in range(trials)
    )


def test_a_a_with_2_percent_noise_is_ok_in_almost_every_trial() -> None:
    assert _verdicts(1.0, 0.02, 15)[Verdict.OK] >= 99


def test_20_percent_slower_with_2_percent_noise_is_always_a_regression() -> None:
    assert _verdicts(1.2, 0.02, 15) == Counter({Verdict.REGRESSION: 100})


def test_20_percent_faster_with_2_percent_noise_is_always_improved() -> None:
    assert _verdicts(1 / 1.2, 0.02, 15) == Counter({Verdict.IMPROVED: 100})


def test_20_percent_slower_with_40_percent_noise_and_few_rounds_is_not_significant() -> None:
    comparison = judge(rounds(0, 5, noise=0.4), rounds(1, 5, scale=12.0, noise=0.4), threshold=0.10)
    assert comparison.verdict is Verdict.INCONCLUSIVE
    assert comparison.estimate.ratio > 1.1
    assert comparison.estimate.low < 1.0 < comparison.estimate.high
    # Noise this large almost never turns into a regression verdict.
    assert _verdicts(1.2, 0.4, 5)[Verdict.REGRESSION] <= 5


def test_20_percent_faster_with_40_percent_noise_and_few_rounds_is_not_significant() -> None:
    comparison = judge(rounds(1, 5, noise=0.4), rounds(0, 5, scale=10.0 / 1.2, noise=0.4), threshold=0.10)
    assert comparison.estimate.ratio < 1 / 1.1
    assert comparison.estimate.low < 1.0 < comparison.estimate.high
    assert comparison.verdict is Verdict.INCONCLUSIVE
    assert _verdicts(1 / 1.2, 0.4, 5)[Verdict.IMPROVED] <= 5


def test_a_slowdown_within_the_threshold_is_ok_even_when_certain() -> None:
    base = rounds(11, 15, noise=0.005)
    comparison = judge(base, scaled(base, 1.05), threshold=0.10)
    assert comparison.estimate.low > 1.0  # certainly slower ...
    assert comparison.verdict is Verdict.OK  # ... but by less than the threshold
    assert comparison.threshold == 0.10


def test_judge_uses_the_threshold_given() -> None:
    base = rounds(12, 15, noise=0.005)
    assert judge(base, scaled(base, 1.05), threshold=0.02).verdict is Verdict.REGRESSION
    assert judge(base, scaled(base, 1 / 1.05), threshold=0.02).verdict is Verdict.IMPROVED


@pytest.mark.parametrize(("baseline", "current"), [([], [1.0]), ([1.0], [])])
def test_judge_rejects_empty_input(baseline: list[float], current: list[float]) -> None:
    with pytest.raises(ValueError, match="needs positive finite latencies"):
        judge(baseline, current, threshold=0.1)


@pytest.mark.parametrize(
    ("verdict", "plain", "kept"),
    [
        (Verdict.REGRESSION, {"medians of all runs": 0.59}, False),
        (
            Verdict.REGRESSION,
            {"medians of all runs": 1.02, "the fastest quarter without the canary": 0.97},
            False,
        ),
        (Verdict.REGRESSION, {"medians of all runs": 1.02}, True),
        (Verdict.IMPROVED, {"medians of all runs": 1.05}, False),
        (Verdict.IMPROVED, {"medians of all runs": 0.8}, True),
        (Verdict.OK, {"medians of all runs": 0.5}, True),
        (Verdict.REGRESSION, {}, True),
    ],
)
def test_a_verdict_the_plain_readings_contradict_has_no_basis(
    verdict: Verdict, plain: dict[str, float], kept: bool
) -> None:
    estimate = (
        RatioEstimate(1.43, 1.33, 1.54, 0.99)
        if verdict is not Verdict.IMPROVED
        else RatioEstimate(0.7, 0.6, 0.8, 0.99)
    )
    comparison = Comparison(estimate=estimate, threshold=0.1, verdict=verdict)
    held = against_plain(comparison, plain)
    if kept:
        assert held == comparison
        return
    assert held.verdict is Verdict.INCONCLUSIVE
    assert held.estimate == estimate
    assert held.no_basis.startswith(f"no basis for a verdict: it read {verdict.value}, but ")
    assert held.no_basis.endswith("the other direction")
