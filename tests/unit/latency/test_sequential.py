"""Sequential looks at paired ratios: when they stop, and their error rates under optional stopping,
measured by simulation on synthetic rounds (seeded, so every run sees the same numbers)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.latency.sequential import LOOKS, look_confidence, looks_for, stops, verdict_at

THRESHOLD = 0.03


def run_looks(
    ratios: np.ndarray, *, threshold: float = THRESHOLD, confidence: float = 0.99, adjusted: bool = True
) -> tuple[Verdict, int]:
    """The verdict and the rounds measured when looking at ``ratios`` (one check) at the looks."""
    looks = looks_for(len(ratios))
    for index, at in enumerate(looks, start=1):
        comparison = verdict_at(
            ratios[:at],
            threshold=threshold,
            confidence=confidence,
            look=index,
            looks=len(looks) if adjusted else 1,
        )
        if stops(comparison) or at == looks[-1]:
            return comparison.verdict, at
    raise AssertionError("unreachable")


def checks(
    rng: np.random.Generator, true_ratio: float, sigma: float, count: int, rounds: int = 40
) -> np.ndarray:
    return true_ratio * np.exp(rng.normal(0.0, sigma, size=(count, rounds)))


def test_the_looks_are_the_planned_ones_before_the_end_then_the_end() -> None:
    assert looks_for(40) == LOOKS
    assert looks_for(30) == (11, 16, 24, 30)
    assert looks_for(12) == (11, 12)
    assert looks_for(8) == (8,)
    with pytest.raises(ValueError, match="at least one round"):
        looks_for(0)


def test_each_early_look_spends_a_tenth_of_the_error_and_the_last_the_rest() -> None:
    assert [look_confidence(0.99, look, 4) for look in (1, 2, 3)] == pytest.approx([0.999] * 3)
    assert look_confidence(0.99, 4, 4) == pytest.approx(0.993)
    assert look_confidence(0.99, 2, 2) == pytest.approx(0.991)
    assert look_confidence(0.99, 1, 1) == pytest.approx(0.99)
    spent = sum(1 - look_confidence(0.99, look, 4) for look in (1, 2, 3, 4))
    assert spent == pytest.approx(0.01)  # never more than the error of one look


def test_the_last_look_of_forty_rounds_has_the_ranks_of_a_single_99_percent_look() -> None:
    ratios = np.linspace(0.9, 1.1, 40)
    last = verdict_at(ratios, threshold=THRESHOLD, confidence=0.99, look=4, looks=4)
    single = verdict_at(ratios, threshold=THRESHOLD, confidence=0.99, look=1, looks=1)
    assert (last.estimate.low, last.estimate.high) == (single.estimate.low, single.estimate.high)


def test_the_first_look_can_decide_at_the_adjusted_confidence() -> None:
    # Eleven ratios all above the threshold: even the whole range lies above 1 (coverage 1 - 2/2048).
    comparison = verdict_at([1.2] * 5 + [1.21] * 6, threshold=THRESHOLD, confidence=0.99, look=1, looks=4)
    assert comparison.verdict is Verdict.REGRESSION
    assert "look 1 of 4 (at 99.9%; 99% over all looks)" in comparison.statistic


@pytest.mark.parametrize(
    ("true_ratio", "sigma", "verdict"),
    [(1.0, 0.002, Verdict.OK), (1.2, 0.002, Verdict.REGRESSION), (0.8, 0.002, Verdict.IMPROVED)],
    ids=["a/a", "+20%", "-20%"],
)
def test_a_clear_case_stops_at_the_first_look(true_ratio: float, sigma: float, verdict: Verdict) -> None:
    rng = np.random.default_rng(1)
    for ratios in checks(rng, true_ratio, sigma, 50):
        assert run_looks(ratios) == (verdict, LOOKS[0])


def test_a_change_the_noise_cannot_place_spends_the_whole_budget_and_stays_inconclusive() -> None:
    # +2%, with round ratios spread by 4%: a slowdown beyond 3% can never be ruled out.
    rng = np.random.default_rng(2)
    results = [run_looks(ratios) for ratios in checks(rng, 1.02, 0.04, 200)]
    assert np.median([at for _, at in results]) == 40
    assert sum(verdict is Verdict.INCONCLUSIVE for verdict, _ in results) > 150


def test_the_false_alarm_rate_holds_under_the_repeated_looks() -> None:
    # With a threshold far below the noise, "regression" means "the interval lies above 1": the
    # error the looks must keep at 0.5% (one side of 99%). Unadjusted looks spend it four times.
    rng = np.random.default_rng(3)
    null = checks(rng, 1.0, 0.02, 4000)
    adjusted = np.mean([run_looks(r, threshold=1e-9)[0] is Verdict.REGRESSION for r in null])
    naive = np.mean([run_looks(r, threshold=1e-9, adjusted=False)[0] is Verdict.REGRESSION for r in null])
    assert adjusted <= 0.005
    assert naive > 2 * adjusted  # what optional stopping costs without the adjustment


def test_a_real_regression_is_rarely_called_ok() -> None:
    rng = np.random.default_rng(4)
    slower = checks(rng, 1.0 + 2 * THRESHOLD, 0.02, 2000)
    missed = np.mean([run_looks(r)[0] is Verdict.OK for r in slower])
    assert missed <= 0.005


def test_a_quiet_five_percent_regression_is_caught_before_the_budget_ends() -> None:
    rng = np.random.default_rng(5)
    results = [run_looks(r) for r in checks(rng, 1.05, 0.005, 200)]
    assert all(verdict is Verdict.REGRESSION for verdict, _ in results)
    assert np.median([at for _, at in results]) <= 16
