"""Same-job A/B logic: the sign-test interval, interleaved measurement, paired verdicts, check_ab."""

from __future__ import annotations

import gc
import math
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest

from pytest_ortperf.checks.latency_verdicts import (
    CLEAR_MARGIN,
    ab_without_reference,
    check_ab,
    clear_regression,
)
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.latency.decision import Comparison, RatioEstimate, Verdict, decide, judge
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import (
    AB_STATISTIC,
    PairedRounds,
    RoundsInTurn,
    TimedSide,
    alternating,
    judge_pair,
    measure_pair,
    paired_interval,
    plan_pair,
    sign_test_rank,
)
from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, summarize
from pytest_ortperf.reports.ci_files import latency_record, markdown
from pytest_ortperf.store.keys import CheckKey
from tests.unit.reports.test_terminal import rows_of

TEST = "test_resnet[cpu-all]"
KEY = CheckKey(
    test_file="tests/test_models.py",
    test=TEST,
    variant="cpu-all",
    machine="ci",
    record_command="ortperf update 'tests/test_models.py::test_resnet[cpu-all]'",
)
LABEL = "HEAD:models/resnet.onnx"


# measure_pair switches the collector off: whatever a test does, it is put back afterwards.
pytestmark = pytest.mark.usefixtures("gc_state")


# --- sign_test_rank -------------------------------------------------------------------------------


def _coverage(n: int, k: int) -> Fraction:
    """Exact probability that sorted ``[x[k], x[n-1-k]]`` covers the median: 1 - 2 P(Bin(n, 1/2) <= k)."""
    below = sum(math.comb(n, i) for i in range(k + 1))
    return 1 - 2 * Fraction(below, 2**n)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99, 0.999])
def test_sign_test_rank_is_the_narrowest_interval_with_exact_binomial_coverage(confidence: float) -> None:
    target = Fraction(confidence)
    for n in range(1, 301):
        k = sign_test_rank(n, confidence)
        assert 0 <= k <= max(0, (n - 1) // 2), n
        if _coverage(n, 0) < target:
            # Too few values for this confidence: the whole range, which is all there is.
            assert k == 0, n
            continue
        assert _coverage(n, k) >= target, (n, k)
        assert _coverage(n, k + 1) < target, (n, k)  # one rank further in would break the promise


def test_sign_test_rank_known_values() -> None:
    # Tabulated ranks of the sign-test interval (0-based), e.g. n=10 at 95%: x(2)..x(9) in 1-based terms.
    assert sign_test_rank(10, 0.95) == 1
    assert sign_test_rank(20, 0.95) == 5
    assert sign_test_rank(40, 0.99) == 11
    assert sign_test_rank(7, 0.99) == 0
    assert sign_test_rank(1, 0.99) == 0


def test_sign_test_rank_grows_with_n_and_shrinks_with_confidence() -> None:
    ranks = [sign_test_rank(n, 0.99) for n in range(1, 200)]
    assert ranks == sorted(ranks)
    assert ranks[-1] >= 75  # about n/2 - 2.58 sqrt(n)/2 for n = 199
    assert sign_test_rank(100, 0.9) > sign_test_rank(100, 0.99) > sign_test_rank(100, 0.9999)


# --- paired_interval ------------------------------------------------------------------------------


def test_paired_interval_median_and_interval_of_known_ratios() -> None:
    values = [1.0 + 0.01 * i for i in range(41)]  # median 1.20
    random.Random(3).shuffle(values)
    estimate = paired_interval(values, 0.99)
    k = sign_test_rank(41, 0.99)
    assert k > 0
    ordered = sorted(values)
    assert estimate.ratio == pytest.approx(1.2)
    assert (estimate.low, estimate.high) == (ordered[k], ordered[40 - k])
    assert estimate.low < 1.2 < estimate.high
    assert estimate.low > min(values)
    assert estimate.high < max(values)
    assert estimate.confidence == 0.99


def test_paired_interval_of_an_even_count_takes_the_middle_of_the_two_central_values() -> None:
    estimate = paired_interval([1.0, 1.1, 1.3, 2.0], 0.5)
    assert estimate.ratio == pytest.approx(1.2)


def test_paired_interval_is_wider_with_fewer_rounds() -> None:
    rng = np.random.default_rng(5)
    ratios = np.exp(rng.normal(np.log(1.05), 0.05, 200))
    widths = {}
    for n in (12, 40, 200):
        estimate = paired_interval(ratios[:n], 0.99)
        assert estimate.low <= estimate.ratio <= estimate.high
        widths[n] = estimate.high / estimate.low
    assert widths[12] > widths[40] > widths[200]


@pytest.mark.parametrize("n", range(1, 8))
def test_too_few_rounds_for_99_percent_give_the_whole_range(n: int) -> None:
    values = [1.0 + 0.1 * i for i in range(n)]
    estimate = paired_interval(list(reversed(values)), 0.99)
    assert (estimate.low, estimate.high) == (min(values), max(values))


def test_the_interval_covers_the_true_median_as_often_as_promised() -> None:
    rng = np.random.default_rng(11)
    trials, covered = 2000, 0
    for _ in range(trials):
        ratios = np.exp(rng.standard_t(3, 25) * 0.05)  # heavy tails: true median exactly 1
        estimate = paired_interval(ratios, 0.9)
        covered += estimate.low <= 1.0 <= estimate.high
    # Exact coverage for n=25 at the chosen rank is >= 90%; allow for the simulation's own noise.
    assert covered / trials >= 0.88


@pytest.mark.parametrize(
    "ratios",
    [[], [1.0, 0.0], [1.0, -1.1], [1.0, math.nan], [1.0, math.inf]],
)
def test_paired_interval_rejects_empty_and_non_positive_ratios(ratios: list[float]) -> None:
    with pytest.raises(ValueError, match="positive finite ratios"):
        paired_interval(ratios)


# --- plan_pair ------------------------------------------------------------------------------------


def test_plan_pair_fills_the_budget_with_the_configured_rounds() -> None:
    settings = MeasureSettings(budget_s=1.0, rounds=40, min_rounds=12)
    # 1 ms + 4 ms per pair: 200 pairs in one second, 40 rounds of 5 runs each.
    assert plan_pair(4e6, 1e6, settings) == (40, 5)


def test_plan_pair_keeps_min_rounds_for_slow_models() -> None:
    settings = MeasureSettings(budget_s=1.0, rounds=40, min_rounds=12)
    # 0.5 s per pair: only 2 pairs fit the budget, but the verdict needs min_rounds rounds.
    assert plan_pair(0.25e9, 0.25e9, settings) == (12, 1)
    # Between min_rounds and rounds: one run per model per round.
    assert plan_pair(20e6, 30e6, settings) == (20, 1)


def test_plan_pair_treats_zero_cost_as_one_nanosecond() -> None:
    rounds, runs = plan_pair(0.0, 0.0, MeasureSettings(budget_s=1e-6, rounds=40, min_rounds=12))
    assert (rounds, runs) == (40, 12)  # 1000 ns fit 500 "pairs" of 2 ns: 40 rounds of 12


# --- measure_pair with a fake clock ---------------------------------------------------------------


class FakeMachine:
    """A clock and models on it: a model call advances the clock by its cost times the machine's speed.

    ``speeds`` (optional) is one slowdown factor per round of timed runs; rounds are counted by
    timed calls, ``2 * runs`` per round, once ``timing`` is switched on by the first timed call.
    """

    def __init__(self, runs: int = 0, speeds: tuple[float, ...] = (1.0,)) -> None:
        self.now = 0
        self.calls: list[str] = []
        self.gc_during: list[bool] = []
        self._runs = runs
        self._speeds = speeds
        self._timed = 0
        self.fail_at: int | None = None

    def clock(self) -> int:
        return self.now

    def model(self, name: str, cost_ms: float) -> Callable[[], object]:
        def run() -> str:
            speed = 1.0
            if self._runs and not gc.isenabled():  # timed runs happen with the collector off
                speed = self._speeds[(self._timed // (2 * self._runs)) % len(self._speeds)]
                self._timed += 1
            self.calls.append(name)
            self.gc_during.append(gc.isenabled())
            if self.fail_at is not None and len(self.calls) >= self.fail_at:
                raise RuntimeError("model crashed")
            self.now += round(cost_ms * speed * NS_PER_MS)
            return name

        return run


# Six warm-up runs a model: at constant costs, the last three are settled against the three before.
SETTINGS = MeasureSettings(budget_s=0.3, rounds=40, min_rounds=12, warmup_runs=6, warmup_s=0.0)
WARMUPS = 2 * 6


def _measure(machine: FakeMachine, seed: int, settings: MeasureSettings = SETTINGS) -> PairedRounds:
    return measure_pair(
        machine.model("c", 2.0),
        machine.model("r", 1.0),
        settings,
        rng=random.Random(seed),
        clock=machine.clock,
    )


def test_measure_pair_warms_up_both_then_runs_rounds_in_the_rng_order() -> None:
    machine = FakeMachine()
    paired = _measure(machine, seed=7)
    rounds, runs = plan_pair(2e6, 1e6, SETTINGS)
    assert (rounds, runs) == (40, 2)  # 3 ms per pair, 0.3 s: 100 pairs over 40 rounds
    assert machine.calls[:WARMUPS] == ["r"] * 6 + ["c"] * 6  # warmup: reference, then current
    draws = random.Random(7)
    expected = [True] * (rounds // 2) + [False] * (rounds - rounds // 2)
    draws.shuffle(expected)
    expected_order = tuple(expected)
    assert paired.current_first == expected_order
    assert sum(expected_order) == rounds // 2  # balanced: half the rounds start with each model
    timed = machine.calls[WARMUPS:]
    assert len(timed) == 2 * rounds * runs
    for i, current_first in enumerate(expected_order):
        block = timed[i * 2 * runs : (i + 1) * 2 * runs]
        first, second = ("c", "r") if current_first else ("r", "c")
        assert block == [first] * runs + [second] * runs, i


def test_measure_pair_order_depends_on_the_seed_only() -> None:
    same = [_measure(FakeMachine(), seed=1).current_first for _ in range(2)]
    assert same[0] == same[1]
    other = _measure(FakeMachine(), seed=2).current_first
    assert other != same[0]


def test_measure_pair_draws_from_a_fresh_rng_when_none_is_given() -> None:
    orders = {
        measure_pair(m.model("c", 2.0), m.model("r", 1.0), SETTINGS, clock=m.clock).current_first
        for m in (FakeMachine() for _ in range(3))
    }
    assert len(orders) > 1  # 40-choose-20 shuffles: three equal sequences are all but impossible


def test_measure_pair_stats_are_per_model_and_per_round() -> None:
    paired = _measure(FakeMachine(), seed=3)
    assert paired.current.rounds == paired.reference.rounds == 40
    assert paired.current.count == paired.reference.count == 80
    assert paired.current.median_ms == pytest.approx(2.0)
    assert paired.reference.median_ms == pytest.approx(1.0)
    assert paired.current_ms == paired.current.round_medians_ms
    assert paired.reference_ms == paired.reference.round_medians_ms
    assert paired.ratios == pytest.approx((2.0,) * 40)


@pytest.mark.parametrize(
    ("budget_s", "expected"),
    [(0.01, (12, 1)), (0.3, (40, 2)), (3.0, (40, 25))],
)
def test_measure_pair_round_counts_follow_the_budget(budget_s: float, expected: tuple[int, int]) -> None:
    settings = MeasureSettings(budget_s=budget_s, rounds=40, min_rounds=12, warmup_runs=3, warmup_s=0.0)
    assert plan_pair(2e6, 1e6, settings) == expected
    paired = _measure(FakeMachine(), seed=0, settings=settings)
    rounds, runs = expected
    assert paired.current.rounds == rounds == len(paired.current_first)
    assert paired.current.count == paired.reference.count == rounds * runs


def test_measure_pair_warmup_runs_until_the_warmup_time_is_reached() -> None:
    machine = FakeMachine()
    settings = MeasureSettings(budget_s=0.01, rounds=40, min_rounds=12, warmup_runs=2, warmup_s=0.01)
    measure_pair(machine.model("c", 2.0), machine.model("r", 1.0), settings, clock=machine.clock)
    # 10 ms of warmup each: 10 runs of the 1 ms reference, then 5 of the 2 ms current and one more
    # to see two windows of three runs settled.
    assert machine.calls[:16] == ["r"] * 10 + ["c"] * 6
    assert len(machine.calls) == 16 + 2 * 12


def test_a_machine_state_switch_between_rounds_cancels_out_of_the_paired_ratios() -> None:
    _, runs = plan_pair(2e6, 1e6, SETTINGS)
    machine = FakeMachine(runs=runs, speeds=(1.0, 1.7, 1.2, 2.5))
    paired = _measure(machine, seed=4)
    assert paired.current.round_cv > 0.2  # the absolute times swing with the machine ...
    assert paired.ratios == pytest.approx((2.0,) * 40)  # ... their ratio within each round does not
    comparison = judge_pair(paired, threshold=0.03)
    assert (comparison.estimate.low, comparison.estimate.high) == pytest.approx((2.0, 2.0))
    assert comparison.verdict is Verdict.REGRESSION


@pytest.mark.parametrize("enabled_before", [True, False])
def test_measure_pair_times_with_gc_off_and_restores_its_state(enabled_before: bool) -> None:
    machine = FakeMachine()
    if not enabled_before:
        gc.disable()
    _measure(machine, seed=0)
    assert gc.isenabled() is enabled_before
    timed = machine.gc_during[WARMUPS:]
    assert len(timed) == 160
    assert not any(timed)
    if enabled_before:
        assert all(machine.gc_during[:WARMUPS])  # warmup runs with the collector as it was


def test_measure_pair_restores_gc_when_a_model_fails_mid_measurement() -> None:
    machine = FakeMachine()
    machine.fail_at = 20  # a timed run, after the 12 warmup runs
    with pytest.raises(RuntimeError, match="model crashed"):
        _measure(machine, seed=0)
    assert gc.isenabled()


# --- judge_pair on synthetic rounds ---------------------------------------------------------------


def _stats(medians_ms: np.ndarray, runs: int = 3) -> LatencyStats:
    samples = [round(float(m) * NS_PER_MS) for m in medians_ms for _ in range(runs)]
    return summarize(samples, [runs] * len(medians_ms))


def paired(
    factor: float, noise: float, *, seed: int = 0, rounds: int = 40, machine_noise: float = 0.0
) -> PairedRounds:
    """Rounds where a shared machine state (``machine_noise``) hits both models, and each model adds
    its own ``noise``; the current model is ``factor`` times slower."""
    rng = np.random.default_rng(seed)
    state = 10.0 * np.exp(rng.normal(0.0, machine_noise, rounds))
    reference = state * np.exp(rng.normal(0.0, noise, rounds))
    current = factor * state * np.exp(rng.normal(0.0, noise, rounds))
    order = tuple(bool(b) for b in rng.integers(0, 2, rounds))
    return PairedRounds(_stats(current), _stats(reference), order)


@pytest.mark.parametrize("seed", range(10))
def test_a_a_with_1_percent_noise_is_ok(seed: int) -> None:
    comparison = judge_pair(paired(1.0, 0.01, seed=seed), threshold=0.03)
    assert comparison.verdict is Verdict.OK
    assert comparison.estimate.low <= 1.0 <= comparison.estimate.high
    assert comparison.detectable == 0.03


@pytest.mark.parametrize("seed", range(10))
def test_5_percent_slower_with_1_percent_noise_is_a_regression_at_3_percent(seed: int) -> None:
    comparison = judge_pair(paired(1.05, 0.01, seed=seed), threshold=0.03)
    assert comparison.verdict is Verdict.REGRESSION
    assert comparison.estimate.ratio == pytest.approx(1.05, abs=0.01)
    assert comparison.estimate.low > 1.0


def test_pairing_sees_5_percent_through_30_percent_machine_swings() -> None:
    rounds = paired(1.05, 0.01, seed=1, machine_noise=0.3)
    assert rounds.reference.round_cv > 0.2
    assert judge_pair(rounds, threshold=0.03).verdict is Verdict.REGRESSION
    # The same numbers compared as two independent samples (stored mode) cannot tell.
    stored = judge(rounds.reference_ms, rounds.current_ms, threshold=0.03)
    assert stored.verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("seed", range(10))
def test_20_percent_noise_is_inconclusive_and_says_what_it_could_detect(seed: int) -> None:
    comparison = judge_pair(paired(1.0, 0.2, seed=seed), threshold=0.03)
    assert comparison.verdict is Verdict.INCONCLUSIVE
    assert comparison.estimate.high > 1.03
    assert comparison.detectable > 0.03
    assert comparison.detectable == pytest.approx(comparison.estimate.ratio / comparison.estimate.low - 1)


def test_judge_pair_names_its_mode_statistic_and_rounds() -> None:
    comparison = judge_pair(paired(1.0, 0.01, rounds=25), threshold=0.05, confidence=0.95)
    assert comparison.mode == "a/b"
    assert comparison.threshold == 0.05
    assert comparison.estimate.confidence == 0.95
    assert comparison.statistic == f"{AB_STATISTIC} over 25 rounds"
    assert comparison.basis() == "a/b: median of paired round ratios, sign-test interval over 25 rounds"


def test_judge_pair_ratio_is_the_median_of_round_ratios_not_a_ratio_of_medians() -> None:
    current = _stats(np.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    reference = _stats(np.array([10.0, 10.0, 30.0, 10.0, 50.0]))
    comparison = judge_pair(PairedRounds(current, reference, (True,) * 5), threshold=0.03)
    # Round ratios 1, 2, 1, 4, 1: median 1, although the median latencies are 30 and 10.
    assert comparison.estimate.ratio == pytest.approx(1.0)


# --- decide and Comparison ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "low", "high", "verdict"),
    [
        (1.00, 0.98, 1.02, Verdict.OK),
        (1.20, 1.10, 1.30, Verdict.REGRESSION),
        (1.20, 0.99, 1.30, Verdict.INCONCLUSIVE),  # beyond the threshold, but the interval reaches 1
        (1.20, 1.00, 1.40, Verdict.INCONCLUSIVE),  # low exactly 1 is not "entirely above 1"
        (1.10, 1.05, 1.15, Verdict.INCONCLUSIVE),  # exactly the threshold is not beyond it
        (1.05, 1.01, 1.08, Verdict.OK),  # certainly slower, but within the threshold
        (1.05, 1.01, 1.15, Verdict.INCONCLUSIVE),  # a slowdown beyond 10% cannot be ruled out
        (1.00, 0.90, 1.10, Verdict.OK),  # the interval touches the threshold, never crosses it
        (1.00, 0.80, 1.25, Verdict.INCONCLUSIVE),  # pure noise
        (0.80, 0.70, 0.90, Verdict.IMPROVED),
        (0.80, 0.70, 1.05, Verdict.OK),  # faster, not significantly, no slowdown possible
        (0.80, 0.70, 1.20, Verdict.INCONCLUSIVE),
        (0.95, 0.92, 0.98, Verdict.OK),  # certainly faster, but within 1/1.1
    ],
)
def test_decide(ratio: float, low: float, high: float, verdict: Verdict) -> None:
    assert decide(RatioEstimate(ratio, low, high, 0.99), 0.10) is verdict


def test_decide_uses_the_threshold_given() -> None:
    estimate = RatioEstimate(1.05, 1.03, 1.07, 0.99)
    assert decide(estimate, 0.03) is Verdict.REGRESSION
    assert decide(estimate, 0.06) is Verdict.INCONCLUSIVE
    assert decide(estimate, 0.10) is Verdict.OK


def test_detectable_is_the_threshold_or_the_noise_whichever_is_larger() -> None:
    noisy = Comparison(RatioEstimate(1.0, 0.8, 1.25, 0.99), 0.03, Verdict.INCONCLUSIVE)
    assert noisy.detectable == pytest.approx(0.25)
    quiet = Comparison(RatioEstimate(1.0, 0.99, 1.01, 0.99), 0.03, Verdict.OK)
    assert quiet.detectable == 0.03


def test_stored_comparisons_keep_their_default_basis() -> None:
    comparison = judge([10.0, 10.1, 9.9, 10.0, 10.05], [10.0, 10.1, 9.9, 10.0, 10.05], threshold=0.1)
    assert comparison.mode == "stored"
    assert comparison.basis() == "stored: round medians, Hodges-Lehmann ratio"


# --- check_ab with a fake measurement -------------------------------------------------------------


class FakePair:
    """Hands out prepared PairedRounds one call at a time and remembers what it was given."""

    def __init__(self, *results: PairedRounds) -> None:
        self._results = list(results)
        self.calls: list[tuple[Callable[[], object], Callable[[], object], MeasureSettings]] = []

    def __call__(
        self, current: Callable[[], object], reference: Callable[[], object], settings: MeasureSettings
    ) -> PairedRounds:
        self.calls.append((current, reference, settings))
        return self._results.pop(0)


def current_model() -> None:
    pass


def reference_model() -> None:
    pass


POLICY = CheckPolicy(threshold=0.03, ab=MeasureSettings(budget_s=1.5))
FIRST_OF_FOUR = "look 1 of 4 (at 99.9%; 99% over all looks)"
LAST_OF_FOUR = "look 4 of 4 (at 99.3%; 99% over all looks)"


def _check(measure: FakePair, policy: CheckPolicy = POLICY, fresh_pair=None):  # type: ignore[no-untyped-def]
    return check_ab(
        current_model,
        reference_model,
        key=KEY,
        label=LABEL,
        policy=policy,
        measure_fn=measure,
        fresh_pair=fresh_pair,
    )


def test_check_ab_ok_measures_once_with_the_ab_settings() -> None:
    rounds = paired(1.0, 0.01)
    measure = FakePair(rounds)
    result = _check(measure)
    assert measure.calls == [(current_model, reference_model, POLICY.ab)]
    assert result.status == "ok"
    assert not result.failed
    assert not result.skipped
    assert result.message == ""
    assert result.confirmation is None
    assert result.mode == "a/b"
    assert result.reference_label == LABEL
    assert result.current is rounds.current
    assert result.reference is rounds.reference
    assert result.baseline is None
    assert result.baseline_median_ms == rounds.reference.median_ms
    assert result.basis.startswith("a/b: median of paired round ratios")


def test_check_ab_against_a_recorded_reference_names_what_changed_since_the_baseline() -> None:
    changes = ("model sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb",)
    slower = FakePair(paired(1.1, 0.01, seed=1), paired(1.1, 0.01, seed=2))
    result = check_ab(
        current_model, reference_model, key=KEY, label=LABEL, policy=POLICY, measure_fn=slower,
        accept="ortperf update x", changes=changes,
    )  # fmt: skip
    assert result.failed
    assert result.changes == changes
    lines = result.message.splitlines()
    assert lines[-2:] == [
        f"  changed since the baseline: {changes[0]}",
        "  to accept the new latency: ortperf update x",
    ]
    ok = check_ab(
        current_model, reference_model, key=KEY, label=LABEL, policy=POLICY,
        measure_fn=FakePair(paired(1.0, 0.01)), changes=changes,
    )  # fmt: skip
    assert (ok.failed, ok.changes) == (False, changes)  # the record lists them when it passes too


def test_check_ab_judges_with_the_one_latency_threshold() -> None:
    # +10%: far beyond the one threshold (3%), which side by side decides by with no floor.
    result = _check(FakePair(paired(1.1, 0.01, seed=1), paired(1.1, 0.01, seed=2)))
    assert result.comparison is not None
    assert (result.comparison.threshold, result.comparison.floor) == (0.03, 0.0)
    assert result.failed


def test_check_ab_inconclusive_is_not_confirmed_and_passes_with_what_it_could_detect() -> None:
    measure = FakePair(paired(1.0, 0.2, seed=3))
    result = _check(measure)
    assert len(measure.calls) == 1  # only a regression is measured again
    assert result.status == "inconclusive"
    assert not result.failed
    assert re.search(r"; could detect >= \d+(\.\d+)?%$", result.change)


def test_check_ab_confirms_only_after_a_first_regression() -> None:
    first, second = paired(1.2, 0.01, seed=4), paired(1.0, 0.01, seed=5)
    measure = FakePair(first, second)
    result = _check(measure)
    assert len(measure.calls) == 2
    assert measure.calls[1] == (current_model, reference_model, POLICY.ab)
    assert result.comparison is not None
    assert result.comparison.verdict is Verdict.REGRESSION
    assert result.confirmation is not None
    assert result.confirmation.verdict is Verdict.OK
    assert result.status == "inconclusive (not confirmed)"
    assert not result.failed
    assert result.message == ""
    assert result.current is second.current  # the result shows the latest measurement
    assert result.reference is second.reference


def test_a_confirmed_ab_regression_fails_naming_the_reference_and_the_mode() -> None:
    first, second = paired(1.2, 0.01, seed=6), paired(1.25, 0.01, seed=7)
    result = _check(FakePair(first, second))
    assert result.status == "regression"
    assert result.failed
    assert result.comparison is not None
    assert result.confirmation is not None
    lines = result.message.splitlines()
    assert lines[0] == f"latency regression in {TEST} against {LABEL} (same-job A/B)"
    ref, cur = second.reference, second.current
    assert (
        lines[1]
        == f"  reference: median {ref.median_ms:.4g} ms, p90 {ref.p90_ms:.4g} ms (40 rounds x 3 runs)"
    )
    assert (
        lines[2]
        == f"  current:   median {cur.median_ms:.4g} ms, p90 {cur.p90_ms:.4g} ms (40 rounds x 3 runs)"
    )
    assert lines[3] == f"  change:    {result.confirmation.estimate.describe()}, threshold +/-3%"
    assert re.fullmatch(
        r"  change:    \+2\d\.\d% \(99.9% CI \+2\d\.\d% \.\. \+2\d\.\d%\), threshold \+/-3%", lines[3]
    )
    # Clear at the first of four sequential looks: decided on 11 rounds.
    assert lines[4] == f"  decided by a/b: {AB_STATISTIC} over 11 rounds, {FIRST_OF_FOUR}"
    assert lines[5] == f"  first measurement: {result.comparison.estimate.describe()} (confirmed by a second)"
    assert len(lines) == 6


def test_an_ab_improvement_fails_only_when_asked() -> None:
    faster = paired(0.8, 0.01, seed=8)
    passing = _check(FakePair(faster))
    assert passing.status == "improved"
    assert not passing.failed
    strict = CheckPolicy(threshold=0.03, fail_on_improvement=True)
    failing = _check(FakePair(faster), strict)
    assert failing.failed
    lines = failing.message.splitlines()
    assert lines[0] == f"latency improvement in {TEST} against {LABEL} (same-job A/B)"
    assert lines[-1] == "  (faster beyond the threshold: check that the model still does all its work)"
    assert not any("first measurement" in line for line in lines)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("no reference", "no file 'models/resnet.onnx' at HEAD (a new model?)"),
        ("identical to reference", f"identical to {LABEL}, nothing to compare"),
    ],
)
def test_ab_without_reference_reports_and_passes(status: str, reason: str) -> None:
    current = _stats(np.full(15, 4.25))
    result = ab_without_reference(current, key=KEY, label=LABEL, status=status, reason=reason)
    assert result.status == status
    assert not result.failed
    assert not result.skipped
    assert result.mode == "a/b"
    assert result.reference_label == LABEL
    assert result.reference is None
    assert result.baseline is None
    assert result.baseline_median_ms is None
    assert result.comparison is None
    assert result.change == ""
    assert result.basis == "a/b"
    assert result.message == f"latency of {TEST}: {reason}; measured median 4.25 ms."


# --- reports --------------------------------------------------------------------------------------


def test_reports_show_the_ab_mode_reference_and_basis() -> None:
    result = _check(FakePair(paired(1.0, 0.2, seed=9)))
    record = latency_record(result, "tests/test_models.py::test_resnet[cpu-all]")
    assert record["mode"] == "a/b"
    assert record["verdict"] == "inconclusive"
    assert record["decided_by"] == f"a/b: {AB_STATISTIC} over 40 rounds, {LAST_OF_FOUR}"
    assert record["reference"] == {  # the reference's rounds too, for a report that draws both sides
        "label": LABEL,
        "median_ms": result.reference.median_ms,  # type: ignore[union-attr]
        "round_medians_ms": list(result.reference.round_medians_ms),  # type: ignore[union-attr]
    }
    assert record["baseline"] is None
    assert record["change"]["detectable"] == pytest.approx(result.comparison.detectable)  # type: ignore[union-attr]
    assert record["change"]["detectable"] > 0.03
    table = markdown([record], machine="ci", unused=[])
    row = next(line for line in table.splitlines() if "test_resnet" in line)
    assert f"{result.reference.median_ms:.4g} ms" in row  # type: ignore[union-attr]
    assert "could detect >= " in row
    assert row.endswith(
        f"| inconclusive | side by side vs {LABEL}; a/b: {AB_STATISTIC} over 40 rounds, {LAST_OF_FOUR} |"
    )
    (terminal,) = rows_of([result])
    assert terminal[2] == "a/b"
    assert terminal[3] == f"median {result.reference.median_ms:.4g} ms"  # type: ignore[union-attr]


def test_reports_of_an_ab_check_without_reference() -> None:
    result = ab_without_reference(
        _stats(np.full(5, 2.0)), key=KEY, label=LABEL, status="no reference", reason="a new model"
    )
    record = latency_record(result, "t")
    assert record["mode"] == "a/b"
    assert record["decided_by"] == "a/b"
    assert record["reference"] == {"label": LABEL, "median_ms": None}
    assert record["change"] is None
    (terminal,) = rows_of([result])
    assert terminal[2:4] == ("a/b", "-")
    assert terminal[-1] == "no reference"


def test_a_regression_is_confirmed_on_the_fresh_pair_when_one_is_given() -> None:
    fresh_current, fresh_reference = (lambda: None), (lambda: None)
    made: list[int] = []

    def fresh_pair() -> tuple[Callable[[], object], Callable[[], object]]:
        made.append(1)
        return fresh_current, fresh_reference

    measure = FakePair(paired(1.2, 0.01, seed=8), paired(1.0, 0.01, seed=9))
    result = _check(measure, fresh_pair=fresh_pair)
    assert made == [1]
    assert measure.calls[0][:2] == (current_model, reference_model)
    assert measure.calls[1][:2] == (fresh_current, fresh_reference)
    assert result.status == "inconclusive (not confirmed)"


def test_no_fresh_pair_is_built_without_a_first_regression() -> None:
    def fresh_pair() -> tuple[Callable[[], object], Callable[[], object]]:
        raise AssertionError("built although nothing needed confirming")

    measure = FakePair(paired(1.0, 0.01, seed=10))
    result = _check(measure, fresh_pair=fresh_pair)
    assert result.status == "ok"


def test_only_the_measurements_hold_the_timing_lock_and_the_fresh_pair_builds_without_it() -> None:
    """Cut (a) of issue 37: the confirmation's new sessions are built with the timing lock released;
    each measurement takes it again, so other processes time while this one builds."""
    events: list[str] = []
    holding = [False]

    @contextmanager
    def held() -> Iterator[None]:
        assert not holding[0], "the timing lock taken twice"
        holding[0] = True
        events.append("take")
        try:
            yield
        finally:
            holding[0] = False
            events.append("release")

    results = [paired(1.2, 0.01, seed=8), paired(1.2, 0.01, seed=9)]

    def measure(current: object, reference: object, settings: MeasureSettings) -> PairedRounds:
        assert holding[0], "measured without the timing lock"
        events.append("measure")
        return results.pop(0)

    def fresh_pair() -> tuple[Callable[[], object], Callable[[], object]]:
        assert not holding[0], "the fresh pair was built holding the timing lock"
        events.append("build")
        return (lambda: None), (lambda: None)

    result = check_ab(
        current_model, reference_model, key=KEY, label=LABEL, policy=POLICY, measure_fn=measure,
        fresh_pair=fresh_pair, held=held,
    )  # fmt: skip
    assert events == ["take", "measure", "release", "build", "take", "measure", "release"]
    assert result.status == "regression"


def test_a_first_regression_far_beyond_the_threshold_on_randomised_sessions_is_not_measured_again() -> None:
    """Cut (b) of issue 37: the confirmation is skipped where it cannot change the verdict, and the
    result, its message and every report say that it was skipped and why."""

    def fresh_pair() -> tuple[Callable[[], object], Callable[[], object]]:
        raise AssertionError("built although the first interval was clear")

    measure = FakePair(paired(1.25, 0.01, seed=6))
    result = check_ab(
        current_model, reference_model, key=KEY, label=LABEL, policy=POLICY, measure_fn=measure,
        fresh_pair=fresh_pair, randomised=True,
    )  # fmt: skip
    assert len(measure.calls) == 1
    assert result.failed
    assert result.status == "regression"
    assert result.confirmation is None
    assert result.comparison is not None
    low = result.comparison.estimate.low
    assert low - 1 >= POLICY.threshold + CLEAR_MARGIN
    assert result.confirmation_skipped == clear_regression(result.comparison)
    assert result.confirmation_skipped.startswith(
        f"the first interval's lower bound +{(low - 1) * 100:.3g}% "
    )
    assert "beyond the threshold +3% by more than 5%" in result.confirmation_skipped
    assert f"  not measured a second time: {result.confirmation_skipped}" in result.message.splitlines()
    assert "confirmed by a second" not in result.message
    assert result.basis.endswith(f"; not measured a second time: {result.confirmation_skipped}")
    record = latency_record(result, "tests/test_models.py::test_resnet[cpu-all]")
    assert record["confirmation"]["skipped"] == result.confirmation_skipped
    assert record["confirmation"]["confirmed"] is None
    assert record["confirmation"]["first_change"]["low"] == low
    assert record["decided_by"] == result.basis
    row = next(
        line for line in markdown([record], machine="ci", unused=[]).splitlines() if "test_resnet" in line
    )
    assert "not measured a second time" in row


@pytest.mark.parametrize(("factor", "randomised"), [(1.06, True), (1.25, False)])
def test_a_first_regression_near_the_threshold_or_on_one_placement_is_measured_again(
    factor: float, randomised: bool
) -> None:
    first = paired(factor, 0.01, seed=6)
    assert judge_pair(first, threshold=0.03).verdict is Verdict.REGRESSION
    measure = FakePair(first, paired(factor, 0.01, seed=7))
    result = check_ab(
        current_model, reference_model, key=KEY, label=LABEL, policy=POLICY, measure_fn=measure,
        randomised=randomised,
    )  # fmt: skip
    assert len(measure.calls) == 2
    assert result.confirmation is not None
    assert result.confirmation_skipped == ""
    record = latency_record(result, "t")
    assert record["confirmation"]["confirmed"] is True
    assert "skipped" not in record["confirmation"]
    assert record["confirmation"]["first_change"]["low"] == result.comparison.estimate.low  # type: ignore[union-attr]


def test_clear_regression_needs_a_regression_whose_lower_bound_clears_threshold_and_margin() -> None:
    def comparison(low: float, verdict: Verdict = Verdict.REGRESSION) -> Comparison:
        return Comparison(RatioEstimate(low + 0.02, low, low + 0.04, 0.99), 0.03, verdict, "a/b", "s")

    assert clear_regression(comparison(1.0799)) == ""
    assert clear_regression(comparison(1.08)) != ""
    assert clear_regression(comparison(1.10), margin=0.08) == ""
    assert clear_regression(comparison(1.20, Verdict.INCONCLUSIVE)) == ""
    assert clear_regression(comparison(1.20, Verdict.IMPROVED)) == ""


def test_sessions_of_a_side_take_the_rounds_in_turn_and_warm_up_run_by_run() -> None:
    seen: list[str] = []
    ticks = iter(range(0, 10**9, 10))
    side = RoundsInTurn([lambda: seen.append("a"), lambda: seen.append("b")], clock=lambda: next(ticks))
    assert isinstance(side, TimedSide)
    side.warm_up(4, 0.0, 0.0)
    assert seen[:4] == ["a", "b", "a", "b"], "every session warmed, run by run"
    seen.clear()
    assert len(side.time_runs(3, 1.0)) == 3
    assert len(side.time_runs(2, 1.0)) == 2
    side.time_runs(1, 1.0)
    assert seen == ["a", "a", "a", "b", "b", "a"], (
        "a round's runs on one session, the next round on the other"
    )
    with pytest.raises(ValueError, match="at least one"):
        RoundsInTurn([])


def test_alternating_runs_each_in_turn_and_returns_its_result() -> None:
    seen: list[str] = []
    run = alternating(
        [lambda: seen.append("a") or "A", lambda: seen.append("b") or "B", lambda: seen.append("c") or "C"]
    )
    assert [run() for _ in range(7)] == ["A", "B", "C", "A", "B", "C", "A"]
    assert seen == ["a", "b", "c", "a", "b", "c", "a"]
    with pytest.raises(ValueError, match="at least one"):
        alternating([])
