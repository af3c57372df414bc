"""The threads check's rule, on plain round medians: the configured count beaten beyond the threshold,
the best count against the recorded curve, and the interleaved measuring loop with stand-in runs."""

from __future__ import annotations

import itertools

from pytest_ortperf.checks.status import Status
from pytest_ortperf.kinds.threads import Curve, default_counts, judged, measure_curve
from pytest_ortperf.store.keys import CheckKey

KEY = CheckKey(
    test_file="test_m.py", test="test_m[cpu-all]", variant="cpu-all", machine="box", record_command="ortperf update"
)


def rounds(ms: float, n: int = 21, wobble: float = 0.01) -> list[float]:
    return [ms * (1 + wobble * ((i % 5) - 2) / 2) for i in range(n)]


def test_the_default_curve_runs_from_one_thread_to_the_cores_at_most_eight() -> None:
    assert default_counts(1) == (1,)
    assert default_counts(2) == (1, 2)
    assert default_counts(64) == tuple(range(1, 9))


def test_a_configured_count_beaten_beyond_the_threshold_fails_naming_the_best_one() -> None:
    curve = Curve(1, {1: rounds(10.0), 2: rounds(6.0), 4: rounds(7.0)})
    result = judged(KEY, curve, threshold=0.10, stored=None)
    assert curve.best == 2
    assert (result.status, result.failed) == (Status.REGRESSION, True)
    assert "the configured intra_op_threads=1 is beaten by 2: -40.0%" in result.message
    assert "set intra_op_threads=2" in result.message


def test_a_best_count_within_the_threshold_passes_and_says_there_is_no_recorded_curve() -> None:
    curve = Curve(1, {1: rounds(10.0), 2: rounds(9.5)})
    result = judged(KEY, curve, threshold=0.10, stored=None)
    assert (result.status, result.failed) == (Status.OK, False)
    assert "no recorded curve on this hardware: the best count is not compared over time" in result.notes


def test_the_best_count_slower_than_recorded_fails_and_a_steady_one_passes() -> None:
    recorded = Curve(1, {1: rounds(5.0), 2: rounds(6.0)}).part()
    slower = judged(KEY, Curve(1, {1: rounds(8.0), 2: rounds(9.0)}), threshold=0.10, stored=recorded)
    assert slower.status is Status.REGRESSION
    assert "the best setting's latency regressed: best count 1 against the recorded best (1 thread(s)" in slower.message
    steady = judged(KEY, Curve(1, {1: rounds(5.05), 2: rounds(6.0)}), threshold=0.10, stored=recorded)
    assert steady.status is Status.OK


def test_the_loop_interleaves_every_count_in_each_round_and_gives_each_its_round_medians() -> None:
    calls: list[int] = []
    ticks = itertools.count(step=1_000_000)  # 1 ms a clock reading
    runs = {n: (lambda n=n: calls.append(n)) for n in (1, 2, 3)}
    medians = measure_curve(runs, budget_s=0.0, rounds=5, clock=lambda: next(ticks))
    assert {n: len(values) for n, values in medians.items()} == {1: 5, 2: 5, 3: 5}
    timed = calls[9:]  # after 3 warm-up runs of each count
    for start in range(0, len(timed), 3):
        assert sorted(timed[start : start + 3]) == [1, 2, 3]  # each round runs every count once
