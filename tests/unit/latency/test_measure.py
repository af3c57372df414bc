"""measure: round planning, warmup by count and time, and timed runs with a fake clock."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Iterator

import pytest

from pytest_ortperf.latency.measure import MeasureSettings, RoundPlan, measure, plan_rounds, warm_up
from pytest_ortperf.latency.stats import NS_PER_MS


class FakeTimer:
    """A clock that only moves when ``run`` is called, by the next prepared cost (ns)."""

    def __init__(self, costs_ns: Iterable[int]) -> None:
        self.now = 0
        self.runs = 0
        self._costs: Iterator[int] = iter(costs_ns)

    def clock(self) -> int:
        return self.now

    def run(self) -> None:
        self.now += next(self._costs)
        self.runs += 1


# plan_rounds ---------------------------------------------------------------


def test_as_dict_lists_what_is_recorded_with_a_baseline() -> None:
    assert MeasureSettings(budget_s=1.5, rounds=9, warmup_runs=3, warmup_s=0.1).as_dict() == {
        "budget_s": 1.5,
        "rounds": 9,
        "warmup_runs": 3,
        "warmup_s": 0.1,
        "warmup_cap_s": 1.0,
    }


@pytest.mark.parametrize("cost_ns", [10_000, 50_000, 1_000_000, 20_000_000, 100_000_000])
def test_plan_for_fast_models_fills_the_budget_with_all_rounds(cost_ns: int) -> None:
    settings = MeasureSettings(budget_s=2.0, rounds=15, min_rounds=5)
    plan = plan_rounds(cost_ns, settings)
    assert plan.rounds == 15
    total_ns = plan.rounds * plan.runs_per_round * cost_ns
    assert total_ns <= settings.budget_s * 1e9
    # at most one run per round short of the budget
    assert total_ns > settings.budget_s * 1e9 - plan.rounds * cost_ns


def test_plan_exact_numbers_for_a_one_millisecond_model() -> None:
    assert plan_rounds(1e6, MeasureSettings(budget_s=2.0, rounds=15, min_rounds=5)) == RoundPlan(15, 133)


@pytest.mark.parametrize(
    ("cost_s", "expected"),
    [
        (0.2, RoundPlan(10, 1)),  # 10 runs fit: fewer rounds, one run each
        (0.25, RoundPlan(8, 1)),
        (0.5, RoundPlan(5, 1)),  # 4 would fit, min_rounds wins
        (1.0, RoundPlan(5, 1)),
        (30.0, RoundPlan(5, 1)),
    ],
)
def test_plan_for_slow_models_uses_fewer_rounds_down_to_min_rounds(
    cost_s: float, expected: RoundPlan
) -> None:
    settings = MeasureSettings(budget_s=2.0, rounds=15, min_rounds=5)
    plan = plan_rounds(cost_s * 1e9, settings)
    assert plan == expected
    assert settings.min_rounds <= plan.rounds <= settings.rounds


def test_plan_for_a_free_run_is_capped_by_max_runs() -> None:
    plan = plan_rounds(0.0, MeasureSettings(budget_s=2.0, rounds=10, min_rounds=5, max_runs=1000))
    assert plan == RoundPlan(10, 100)


# warm_up -------------------------------------------------------------------


def test_warm_up_reads_the_clock_in_order_and_returns_the_later_half_median() -> None:
    # started, then (t0, t1) a run: 100, 10, 10 | 10, 10, 10 -> the last three's median (10) is
    # the previous three's (10): settled after six runs.
    readings = iter([0, 0, 100, 100, 110, 110, 120, 120, 130, 130, 140, 140, 150])
    calls: list[int] = []
    cost = warm_up(lambda: calls.append(1), MeasureSettings(warmup_runs=3, warmup_s=0.0), readings.__next__)
    assert len(calls) == 6
    assert next(readings, None) is None  # every prepared reading used, none more
    assert cost == 10.0  # the later half [10, 10, 10]


def test_warm_up_goes_on_until_run_times_settle() -> None:
    # Slow first runs, then a run time that keeps falling until it stays put.
    timer = FakeTimer([9_000, 8_000, 7_000, 4_000, 2_000, 1_000, 500, 200, 100, 100, 100, 100, 100, 100])
    cost = warm_up(timer.run, MeasureSettings(warmup_runs=3, warmup_s=0.0), timer.clock)
    # Runs 10-12 (100) against runs 7-9 (500, 200, 100: median 200) are not settled; runs 11-13
    # against 8-10 (200, 100, 100: median 100) are.
    assert timer.runs == 13
    assert cost == 100.0


def test_warm_up_settled_means_within_five_percent() -> None:
    timer = FakeTimer([100, 100, 100, 104, 104, 104])  # +4%: settled
    warm_up(timer.run, MeasureSettings(warmup_runs=1, warmup_s=0.0), timer.clock)
    assert timer.runs == 6
    timer = FakeTimer([100, 100, 100, 106, 106, 106, 106, 106, 106])  # +6%: one more window
    warm_up(timer.run, MeasureSettings(warmup_runs=1, warmup_s=0.0), timer.clock)
    assert timer.runs == 8  # runs 6-8 (106) against runs 3-5 (106 106 100: 106)


def test_warm_up_honours_the_run_count_when_time_is_short() -> None:
    timer = FakeTimer([100] * 100)
    warm_up(timer.run, MeasureSettings(warmup_runs=20, warmup_s=1e-6), timer.clock)
    assert timer.runs == 20


def test_warm_up_honours_the_time_floor_when_the_count_is_reached_early() -> None:
    timer = FakeTimer([1_000] * 100)
    cost = warm_up(timer.run, MeasureSettings(warmup_runs=1, warmup_s=20e-6), timer.clock)
    assert timer.runs == 20  # 20 us at 1 us per run, settled all along
    assert timer.now == 20_000
    assert cost == 1_000.0


def test_warm_up_stops_at_the_cap_when_run_times_never_settle() -> None:
    # Every run 10% slower than the one before: never settled; the cap (50 us) ends it.
    timer = FakeTimer([int(1_000 * 1.1**i) for i in range(100)])
    warm_up(timer.run, MeasureSettings(warmup_runs=1, warmup_s=0.0, warmup_cap_s=50e-6), timer.clock)
    assert 50_000 <= timer.now < 50_000 + int(1_000 * 1.1**timer.runs)
    assert timer.runs < 20


# measure with a fake clock -------------------------------------------------

# Warmup: 6 runs, the last three settled at 2 ms; later half [2, 2, 2] ms -> 2 ms a run; a 20 ms
# budget -> 10 runs, 2 rounds x 5.
WARMUP_MS = [10, 2, 2, 2, 2, 2]
TIMED_MS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
FAKE_SETTINGS = MeasureSettings(budget_s=0.02, rounds=2, min_rounds=2, warmup_runs=5, warmup_s=0.0)


def test_measure_with_a_fake_clock_returns_the_expected_stats(gc_state: None) -> None:
    timer = FakeTimer(ms * NS_PER_MS for ms in WARMUP_MS + TIMED_MS)
    stats = measure(timer.run, FAKE_SETTINGS, clock=timer.clock)
    assert timer.runs == 16
    assert (stats.count, stats.rounds) == (10, 2)
    assert stats.round_medians_ms == pytest.approx((3.0, 8.0))
    assert stats.min_ms == 1.0
    assert stats.median_ms == pytest.approx(5.5)
    assert stats.p90_ms == pytest.approx(9.1)


def test_measure_turns_the_collector_off_only_while_timing(gc_state: None) -> None:
    seen: list[bool] = []
    timer = FakeTimer(ms * NS_PER_MS for ms in WARMUP_MS + TIMED_MS)

    def run() -> None:
        seen.append(gc.isenabled())
        timer.run()

    gc.enable()
    measure(run, FAKE_SETTINGS, clock=timer.clock)
    assert seen == [True] * 6 + [False] * 10
    assert gc.isenabled()


def test_measure_leaves_a_disabled_collector_disabled(gc_state: None) -> None:
    timer = FakeTimer(ms * NS_PER_MS for ms in WARMUP_MS + TIMED_MS)
    gc.disable()
    measure(timer.run, FAKE_SETTINGS, clock=timer.clock)
    assert not gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_measure_restores_the_collector_when_run_raises(gc_state: None, enabled: bool) -> None:
    timer = FakeTimer(ms * NS_PER_MS for ms in WARMUP_MS + TIMED_MS)

    def run() -> None:
        if timer.runs == 8:  # inside the timed rounds
            raise RuntimeError("session.run failed")
        timer.run()

    if enabled:
        gc.enable()
    else:
        gc.disable()
    with pytest.raises(RuntimeError, match=r"session\.run failed"):
        measure(run, FAKE_SETTINGS, clock=timer.clock)
    assert gc.isenabled() is enabled


# a real, short measurement -------------------------------------------------


def test_a_real_short_measurement_of_a_cheap_callable(gc_state: None) -> None:
    settings = MeasureSettings(budget_s=0.01, rounds=5, min_rounds=3, warmup_runs=3, warmup_s=0.001)
    calls = []
    started = time.perf_counter()
    stats = measure(lambda: calls.append(sum(range(50))), settings)
    elapsed = time.perf_counter() - started
    assert stats.rounds == 5
    assert len(stats.round_medians_ms) == 5
    assert stats.count % stats.rounds == 0
    assert stats.count >= 5
    assert len(calls) >= stats.count + settings.warmup_runs
    assert 0 < stats.min_ms <= stats.median_ms <= stats.p90_ms <= stats.p99_ms
    assert stats.median_ms < 1.0  # a sum of 50 numbers is far below a millisecond
    assert elapsed < 1.0
