"""latency.recording: measuring until the recorded figure settles, on fake measurements and a fake clock;
stats.merged on hand-made measurements."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from pytest_ortperf.latency.recording import (
    Recording,
    coarse,
    compared_rounds,
    compared_values,
    decision_cv,
    detects,
    fastest_share,
    quantile_ranks,
    record_until_settled,
    recorded_figure,
    settle_width,
)
from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, merged, summarize


def stats_of(medians: Sequence[float], canary: Sequence[float] = (), runs: int = 1) -> LatencyStats:
    """A measurement whose rounds of ``runs`` equal runs have these medians (ms)."""
    samples = [round(m * NS_PER_MS) for m in medians for _ in range(runs)]
    return summarize(samples, [runs] * len(medians), canary)


def quiet(seed: int, n: int = 40) -> LatencyStats:
    """``n`` rounds around 10 ms, 0.5% apart: a quiet machine."""
    return stats_of(10.0 * np.exp(np.random.default_rng(seed).normal(0.0, 0.005, n)))


def torn(seed: int, n: int = 40) -> LatencyStats:
    """``n`` rounds spread evenly over 10 .. 20 ms: no fast state to settle on."""
    return stats_of(np.random.default_rng(seed).uniform(10.0, 20.0, n))


class FakeMeasurements:
    """``measure_once`` returning the given measurements in turn, each taking ``seconds`` on the clock."""

    def __init__(self, measurements: Sequence[LatencyStats], seconds: float = 5.0) -> None:
        self.measurements = list(measurements)
        self.seconds = seconds
        self.now = 100.0
        self.taken = 0

    def clock(self) -> float:
        return self.now

    def measure_once(self) -> LatencyStats:
        self.now += self.seconds
        self.taken += 1
        return self.measurements[self.taken - 1]


def record(fake: FakeMeasurements, **kwargs: float) -> Recording:
    return record_until_settled(fake.measure_once, clock=fake.clock, **kwargs)


# record_until_settled --------------------------------------------------------


def test_a_quiet_recording_stops_after_its_first_measurement() -> None:
    fake = FakeMeasurements([quiet(1), quiet(2)])
    recording = record(fake, cap_s=20.0)
    assert fake.taken == 1
    assert recording.stats == fake.measurements[0]
    assert (recording.settled, recording.measurements, recording.seconds) == (True, 1, 5.0)
    assert recording.width <= 0.02
    assert recording.spread == pytest.approx(decision_cv(fake.measurements[0]))


def test_a_recording_that_never_settles_stops_at_the_cap_and_says_so() -> None:
    fake = FakeMeasurements([torn(seed) for seed in range(10)])
    recording = record(fake, cap_s=20.0)
    # 5 s each: after 15 s a fourth ends at 20 s, within the cap; a fifth would end past it.
    assert (recording.settled, recording.measurements, recording.seconds) == (False, 4, 20.0)
    assert recording.stats.rounds == 160
    assert recording.stats.round_medians_ms == tuple(
        m for s in fake.measurements[:4] for m in s.round_medians_ms
    )
    assert recording.width > 0.02
    assert recording.spread == pytest.approx(decision_cv(recording.stats))


def test_no_measurement_starts_that_would_end_past_the_cap() -> None:
    fake = FakeMeasurements([torn(seed) for seed in range(10)])
    recording = record(fake, cap_s=12.0)  # a second ends at 10 s; a third would end at 15 s
    assert (recording.measurements, recording.seconds, recording.settled) == (2, 10.0, False)


def test_the_first_measurement_is_taken_even_past_the_cap() -> None:
    fake = FakeMeasurements([torn(1), torn(2)], seconds=30.0)
    recording = record(fake, cap_s=20.0)
    assert (recording.measurements, recording.seconds, recording.settled) == (1, 30.0, False)


def test_a_measurement_with_too_few_rounds_settles_on_the_rounds_of_the_next() -> None:
    # 20 rounds cannot bound the eighth of them at 90%; 40 can, and these are quiet.
    fake = FakeMeasurements([quiet(1, n=20), quiet(2, n=20), quiet(3, n=20)])
    recording = record(fake, cap_s=60.0)
    assert math.isinf(settle_width(fake.measurements[0]))
    assert (recording.settled, recording.measurements, recording.stats.rounds) == (True, 2, 40)


def test_a_looser_target_settles_what_a_strict_one_does_not() -> None:
    measurements = [torn(seed) for seed in range(12)]
    loose = record(FakeMeasurements(measurements), cap_s=60.0, target=0.5)
    strict = record(FakeMeasurements(measurements), cap_s=60.0, target=0.001)
    assert (loose.settled, loose.measurements) == (True, 1)
    assert (strict.settled, strict.measurements) == (False, 12)  # 12 x 5 s fill the 60 s


def test_settling_reads_the_rounds_relative_to_the_canary_when_it_ran() -> None:
    # The model's rounds double with the canary's (the machine slowed): relative, they are flat.
    speed = np.repeat([1.0, 2.0], 20)
    measured = stats_of(10.0 * speed, canary=list(2.0 * speed))
    assert compared_rounds(measured) == pytest.approx([5.0] * 40)
    recording = record(FakeMeasurements([measured]), cap_s=20.0)
    assert (recording.settled, recording.width, recording.spread) == (
        True,
        pytest.approx(0.0),
        pytest.approx(0.0),
    )
    assert recorded_figure(measured) == pytest.approx(5.0)


# the rank interval -------------------------------------------------------------


@pytest.mark.parametrize("n", [22, 30, 40, 80, 120, 200])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_quantile_ranks_cover_the_quantile_at_least_as_often_as_asked(n: int, confidence: float) -> None:
    p = 0.125
    ranks = quantile_ranks(n, p, confidence)
    if ranks is None:
        assert (1 - p) ** n > (1 - confidence) / 2  # even the smallest value may lie above it
        return
    low, high = ranks
    # X_(low) <= q <= X_(high) exactly when low <= (values under q) < high.
    coverage = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(low, high))
    assert coverage >= confidence
    assert 1 <= low < high <= n


def test_quantile_ranks_exact_values_for_forty_rounds() -> None:
    assert quantile_ranks(40, 0.125, 0.90) == (2, 10)
    assert quantile_ranks(20, 0.125, 0.90) is None


@pytest.mark.parametrize("n", [1040, 5000, 20000])
def test_quantile_ranks_of_many_rounds(n: int) -> None:
    """A fast model measured briefly gives over a thousand rounds: math.comb(n, j) no longer fits a
    float there. The interval still brackets the quantile's rank, about 1.645 standard deviations of
    the binomial count on each side at 90%."""
    p = 0.125
    ranks = quantile_ranks(n, p, 0.90)
    assert ranks is not None
    low, high = ranks
    sd = math.sqrt(n * p * (1 - p))
    assert low < n * p < high
    assert (high - low) / sd == pytest.approx(2 * 1.645, abs=0.2)
    assert settle_width(stats_of(10.0 * np.exp(np.random.default_rng(n).normal(0.0, 0.01, n)))) < 0.01


def test_more_rounds_of_the_same_machine_narrow_the_width() -> None:
    rng = np.random.default_rng(7)
    values = 10.0 * np.exp(rng.normal(0.0, 0.08, 400))  # a noisy machine: its spread stays
    short, long = stats_of(values[:40]), stats_of(values)
    assert decision_cv(long) == pytest.approx(decision_cv(short), rel=0.3)
    assert settle_width(long) < settle_width(short) / 2


# the moved helpers ---------------------------------------------------------------


def test_fastest_share_is_a_quarter_and_at_least_three() -> None:
    assert fastest_share([5.0, 1.0, 4.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert fastest_share([float(v) for v in range(40, 0, -1)]) == [float(v) for v in range(1, 11)]
    assert fastest_share([2.0]) == [2.0]


def test_compared_values_are_relative_only_when_both_ran_the_canary() -> None:
    with_canary = stats_of([10.0, 20.0, 30.0], canary=[2.0, 2.0, 2.0])
    without = stats_of([10.0, 20.0, 30.0])
    assert compared_values(with_canary, with_canary) == ([5.0, 10.0, 15.0], [5.0, 10.0, 15.0], True)
    assert compared_values(with_canary, without) == ([10.0, 20.0, 30.0], [10.0, 20.0, 30.0], False)


def test_decision_cv_reads_the_canary_relative_rounds() -> None:
    assert decision_cv(stats_of([10.0, 20.0], canary=[1.0, 2.0])) == 0.0
    assert decision_cv(stats_of([10.0, 20.0])) == pytest.approx(math.sqrt(50) / 15)
    assert decision_cv(stats_of([10.0], canary=[1.0])) == 0.0


# stats.merged ------------------------------------------------------------------


def test_merged_concatenates_rounds_and_pools_the_run_figures_exactly() -> None:
    first = summarize([ms * NS_PER_MS for ms in (1, 2, 3, 4)], [2, 2], [1.0, 2.0])
    second = summarize([ms * NS_PER_MS for ms in (5, 6, 7, 8, 9, 10)], [3, 3], [4.0, 5.0])
    both = merged([first, second])
    whole = summarize([ms * NS_PER_MS for ms in range(1, 11)], [2, 2, 3, 3], [1.0, 2.0, 4.0, 5.0])
    assert (both.count, both.rounds) == (10, 4)
    assert both.round_medians_ms == whole.round_medians_ms == (1.5, 3.5, 6.0, 9.0)
    assert both.canary_round_medians_ms == (1.0, 2.0, 4.0, 5.0)
    for name in ("min_ms", "mean_ms", "stdev_ms", "cv", "round_cv"):
        assert getattr(both, name) == pytest.approx(getattr(whole, name)), name
    # Percentiles are not derivable without the runs: the median is the run-weighted mean of the parts'
    # medians (the true one, 5.5, lies between theirs); tails are the larger part's, an upper bound.
    assert both.median_ms == pytest.approx((4 * 2.5 + 6 * 7.5) / 10)
    assert min(first.median_ms, second.median_ms) <= whole.median_ms <= max(first.median_ms, second.median_ms)
    assert both.throughput_per_s == pytest.approx(1000 / both.median_ms)
    for name in ("p90_ms", "p95_ms", "p99_ms"):
        assert getattr(both, name) == getattr(second, name) >= getattr(whole, name), name
    assert both.iqr_ms == max(first.iqr_ms, second.iqr_ms)


def test_merged_stats_round_trip_as_a_baseline() -> None:
    both = merged([quiet(1), quiet(2), quiet(3)])
    assert LatencyStats.from_dict(both.as_dict()) == both
    assert merged([both]) is both


def test_merged_refuses_nothing_and_a_mix_of_canary_and_none() -> None:
    with pytest.raises(ValueError, match="nothing to merge"):
        merged([])
    with pytest.raises(ValueError, match="with and without the machine-speed canary"):
        merged([stats_of([1.0, 2.0], canary=[1.0, 1.0]), stats_of([1.0, 2.0])])


def test_record_until_settled_reads_the_real_clock_by_default() -> None:
    made: list[LatencyStats] = []

    def measure_once() -> LatencyStats:
        made.append(quiet(len(made)))
        return made[-1]

    recording = record_until_settled(measure_once, cap_s=20.0)
    assert recording.measurements == len(made) == 1
    assert 0.0 <= recording.seconds < 5.0


# short recordings ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kept_in", "drift_gates", "short"),
    [
        ("git", False, True),
        ("the model cache", False, True),
        ("", False, False),  # nothing keeps the model: its stored figures will decide
        ("git", True, False),  # an unchanged check fails on its drift from these figures
    ],
)
def test_a_recording_is_short_only_where_its_figures_never_decide(
    kept_in: str, drift_gates: bool, short: bool
) -> None:
    from pytest_ortperf.latency.recording import short_reason

    why = short_reason(kept_in, drift_gates=drift_gates)
    assert bool(why) is short
    if short:
        assert f"rebuilt from {kept_in}" in why


def test_a_short_recording_is_one_measurement_of_a_quarter_of_the_budget() -> None:
    from pytest_ortperf.latency.measure import MeasureSettings
    from pytest_ortperf.latency.recording import record_short, short_settings

    settings = MeasureSettings(budget_s=4.0, rounds=40)
    short = short_settings(settings)
    assert (short.budget_s, short.rounds, short.warmup_runs) == (1.0, 40, settings.warmup_runs)
    # Torn rounds never settle: a settling recording would measure again, a short one never does.
    fake = FakeMeasurements([torn(1), torn(2), torn(3)])
    recording = record_short(fake.measure_once, why="the reference is rebuilt from git", clock=fake.clock)
    assert (fake.taken, recording.measurements, recording.seconds) == (1, 1, 5.0)
    assert recording.short == "the reference is rebuilt from git"
    assert recording.settled is False
    assert recording.width > 0.03
    assert recording.spread == decision_cv(torn(1))
    # A quiet machine's short recording may meet the target all the same, and says so.
    fake = FakeMeasurements([quiet(1)])
    assert record_short(fake.measure_once, why="x", clock=fake.clock).settled is True


def spiky(seed: int, n: int = 40, share: float = 0.5) -> LatencyStats:
    """``n`` rounds at a settled 10 ms fast state, ``share`` of them 2-3 times slower (another run
    beside the recording): the fast state settles, the spread stays large."""
    rng = np.random.default_rng(seed)
    medians = [
        10.0 * (rng.uniform(2.0, 3.0) if rng.random() < share else float(np.exp(rng.normal(0.0, 0.005))))
        for _ in range(n)
    ]
    return stats_of(medians)


def test_figures_that_cannot_detect_the_threshold_are_measured_again_within_the_cap() -> None:
    """Issue 46: a recording beside another run settles its fast state but spreads 40% and more; against
    40 rounds of it a later stored comparison could not detect 10%. Measured again (the rounds merged)
    until it can, within the cap."""
    first = spiky(1)
    assert settle_width(first) <= 0.03
    assert detects(first, decision_cv(first), threshold=0.10) > 0.10
    fake = FakeMeasurements([spiky(seed) for seed in range(1, 5)])
    recording = record_until_settled(fake.measure_once, cap_s=100.0, clock=fake.clock, threshold=0.10)
    assert recording.measurements > 1
    assert recording.detectable is not None
    assert recording.detectable <= 0.10 + 1e-9
    assert coarse(recording.detectable, 0.10) == ""
    without = record_until_settled(FakeMeasurements([spiky(1)]).measure_once, cap_s=100.0)
    assert without.measurements == 1  # not asked about the threshold: settled is enough
    assert without.detectable is None


def test_at_the_cap_a_measurement_the_machine_was_calm_for_is_kept_else_the_figures_are_named_coarse() -> (
    None
):
    fake = FakeMeasurements([spiky(1, share=0.8), quiet(2), spiky(3, share=0.8)], seconds=5.0)
    recording = record_until_settled(fake.measure_once, cap_s=12.0, clock=fake.clock, threshold=0.10)
    assert recording.measurements == 2
    assert recording.stats == quiet(2)  # the calm measurement alone detects 10%; merged it could not
    assert coarse(recording.detectable, 0.10) == ""

    noisy = FakeMeasurements([spiky(seed) for seed in (1, 3)], seconds=5.0)
    coarse_one = record_until_settled(noisy.measure_once, cap_s=8.0, clock=noisy.clock, threshold=0.10)
    assert coarse_one.measurements == 1  # a second would end past the cap
    assert coarse_one.detectable is not None
    said = coarse(coarse_one.detectable, 0.10)
    assert said == f"detect >= {coarse_one.detectable * 100:.3g}%, threshold 10%"
    assert coarse_one.detectable > 0.10


def test_detects_is_the_threshold_for_quiet_figures_and_more_for_noisy_or_few_rounds() -> None:
    calm = quiet(1)
    assert detects(calm, decision_cv(calm), threshold=0.10) == 0.10
    assert coarse(0.10, 0.10) == ""
    few = stats_of([10.0])
    assert math.isinf(detects(few, 0.0, threshold=0.10))
    assert coarse(math.inf, 0.10) == "cannot detect any change (too few rounds, or too noisy), threshold 10%"


def test_figures_too_noisy_to_detect_anything_read_as_such_instead_of_overflowing() -> None:
    """Issue 58, item 10: the long fuzz profile found a baseline with a recorded spread of 5520.0
    that made ``ortperf show`` end in ``OverflowError: math range error``."""
    calm = quiet(1)
    assert math.isinf(detects(calm, 5520.0, threshold=0.10))
    assert coarse(math.inf, 0.10) == "cannot detect any change (too few rounds, or too noisy), threshold 10%"
