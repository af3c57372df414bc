"""decision.widened: a stored comparison against a noisy recording, its interval widened by the
recording's spread; a quiet recording's comparison is left as it is."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_ortperf.latency.decision import (
    QUIET_SPREAD,
    Comparison,
    RatioEstimate,
    Verdict,
    decide,
    judge,
    widened,
)

THRESHOLD = 0.10


def comparison(ratio: float, low: float, high: float) -> Comparison:
    estimate = RatioEstimate(ratio, low, high, 0.99)
    return Comparison(estimate, THRESHOLD, decide(estimate, THRESHOLD), statistic="fastest quarter")


def rounds(seed: int, factor: float = 1.0, n: int = 10) -> list[float]:
    """A fastest quarter of ``n`` rounds around ``factor`` (x 0.3, a canary-relative figure), 1% apart."""
    return [float(v) for v in 0.3 * factor * np.exp(np.random.default_rng(seed).normal(0.0, 0.01, n))]


BORDERLINE = comparison(1.12, 1.07, 1.17)  # a regression: beyond 10%, interval above 1, but not by much


@pytest.mark.parametrize("spread", [None, 0.0, 0.05, QUIET_SPREAD, math.nan])
def test_a_quiet_or_unknown_spread_leaves_the_comparison_as_it_is(spread: float | None) -> None:
    assert widened(BORDERLINE, spread, rounds=40) is BORDERLINE


def test_a_noisy_recording_turns_a_borderline_regression_inconclusive() -> None:
    assert BORDERLINE.verdict is Verdict.REGRESSION
    wider = widened(BORDERLINE, 0.40, rounds=40)
    # 2.576 x (0.40 - 0.10) / sqrt(40) = 12.2% more on each side, in quadrature with the 4.6% there.
    extra = 2.5758 * 0.30 / math.sqrt(40)
    assert math.log(1.12 / wider.estimate.low) == pytest.approx(
        math.hypot(math.log(1.12 / 1.07), extra), rel=1e-3
    )
    assert wider.estimate.low < 1.0 < wider.estimate.ratio == 1.12
    assert wider.verdict is Verdict.INCONCLUSIVE
    assert (wider.threshold, wider.mode) == (BORDERLINE.threshold, BORDERLINE.mode)
    assert wider.statistic == "fastest quarter, widened by the baseline's round spread 40.0%"


def test_a_huge_regression_stays_a_regression_against_a_noisy_recording() -> None:
    huge = judge(rounds(1), rounds(2, factor=1.6), threshold=THRESHOLD)
    assert huge.verdict is Verdict.REGRESSION
    wider = widened(huge, 0.40, rounds=40)
    assert wider.verdict is Verdict.REGRESSION
    assert wider.estimate.low < huge.estimate.low
    assert wider.estimate.high > huge.estimate.high


def test_a_noisy_recording_keeps_a_clear_ok_and_a_large_improvement() -> None:
    same = judge(rounds(1), rounds(2), threshold=THRESHOLD)
    faster = judge(rounds(1), rounds(2, factor=0.6), threshold=THRESHOLD)
    assert (same.verdict, faster.verdict) == (Verdict.OK, Verdict.IMPROVED)
    assert widened(same, 0.25, rounds=40).verdict is Verdict.OK
    assert widened(faster, 0.25, rounds=40).verdict is Verdict.IMPROVED


def test_an_ok_that_a_noisy_recording_cannot_vouch_for_becomes_inconclusive() -> None:
    near = comparison(1.05, 1.01, 1.09)  # ok: the interval stays under +10%
    assert near.verdict is Verdict.OK
    assert widened(near, 0.30, rounds=40).verdict is Verdict.INCONCLUSIVE


def test_a_recording_of_more_rounds_is_widened_less() -> None:
    short, long = widened(BORDERLINE, 0.40, rounds=40), widened(BORDERLINE, 0.40, rounds=160)
    assert long.estimate.low > short.estimate.low
    assert (short.verdict, long.verdict) == (Verdict.INCONCLUSIVE, Verdict.REGRESSION)


def test_the_widening_grows_with_the_spread_above_quiet() -> None:
    lows = [widened(BORDERLINE, spread, rounds=40).estimate.low for spread in (0.12, 0.2, 0.3, 0.5)]
    assert lows == sorted(lows, reverse=True)
    assert lows[0] == pytest.approx(BORDERLINE.estimate.low, rel=2e-3)  # just above quiet: barely


def test_quiet_can_be_set() -> None:
    assert widened(BORDERLINE, 0.40, rounds=40, quiet=0.5) is BORDERLINE
    assert widened(BORDERLINE, 0.15, rounds=4, quiet=0.0).verdict is Verdict.INCONCLUSIVE


def test_a_recording_noisy_beyond_any_float_widens_to_nothing_decided_instead_of_overflowing() -> None:
    """Issue 58, item 10: a baseline a user can write (a recorded spread of 5520) never crashes a
    reader: the interval reaches from 0 to infinity, and the verdict is inconclusive."""
    wider = widened(BORDERLINE, 5520.0, rounds=40)
    assert wider.estimate.low == 0.0
    assert math.isinf(wider.estimate.high)
    assert wider.verdict is Verdict.INCONCLUSIVE
    assert math.isinf(wider.detectable)
