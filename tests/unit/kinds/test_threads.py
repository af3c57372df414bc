"""The threads check's rule, on plain round medians: the configured count beaten beyond the threshold,
the best count against the recorded curve, and the interleaved measuring loop with stand-in runs."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.checks.status import Status
from pytest_ortperf.kinds.threads_check import Curve, default_counts, judged, measure_curve
from pytest_ortperf.latency.across_processes import AcrossProcesses, UnitRounds, judge_units
from pytest_ortperf.latency.stats import summarize
from pytest_ortperf.store.keys import CheckKey

KEY = CheckKey(
    test_file="test_m.py",
    test="test_m[cpu-all]",
    variant="cpu-all",
    machine="box",
    record_command="ortperf update",
)


def rounds(ms: float, n: int = 21, wobble: float = 0.01) -> list[float]:
    return [ms * (1 + wobble * ((i % 5) - 2) / 2) for i in range(n)]


def test_the_default_curve_runs_from_one_thread_to_the_cores_at_most_eight() -> None:
    assert default_counts(1) == (1,)
    assert default_counts(2) == (1, 2)
    assert default_counts(64) == tuple(range(1, 9))


def test_a_configured_count_beaten_beyond_the_threshold_is_reported_improved_and_passes() -> None:
    """An unchanged model whose configured count another beats: a setting that could be better, not
    a regression; reported with the count to set."""
    curve = Curve(1, {1: rounds(10.0), 2: rounds(6.0), 4: rounds(7.0)})
    again = side_by_side([0.62, 0.61, 0.63], Status.IMPROVED)  # 2 threads against 1, across processes
    result = judged(KEY, curve, threshold=0.10, beaten=again, not_compared="nothing changed")
    assert curve.best == 2
    assert (result.status, result.failed) == (Status.IMPROVED, False)
    (note,) = [n for n in result.notes if "beaten" in n]
    assert note.startswith("the configured intra_op_threads=1 is beaten by 2: -40.0% (99% CI ")
    assert "again side by side over 3 measuring processes: " in note
    assert "set intra_op_threads=2" in note
    assert note.endswith("reported, not failed (check_threads(fail_if_beaten=True) fails it)")


def test_a_configured_count_beaten_fails_where_the_test_asks_for_it() -> None:
    curve = Curve(1, {1: rounds(10.0), 2: rounds(6.0), 4: rounds(7.0)})
    again = side_by_side([0.62, 0.61, 0.63], Status.IMPROVED)
    result = judged(KEY, curve, threshold=0.10, beaten=again, fail_if_beaten=True)
    assert (result.status, result.failed) == (Status.REGRESSION, True)
    assert "the configured intra_op_threads=1 is beaten by 2: -40.0%" in result.message
    assert "set intra_op_threads=2" in result.message


def test_a_count_that_wins_the_curve_but_not_across_processes_is_inconclusive_or_ok_with_both_figures() -> (
    None
):
    curve = Curve(1, {1: rounds(10.0), 2: rounds(6.0)})
    undecided = judged(KEY, curve, threshold=0.10, beaten=side_by_side([0.7, 1.2, 0.95], Status.INCONCLUSIVE))
    assert (undecided.status, undecided.failed) == (Status.INCONCLUSIVE, False)
    assert any(
        "in the curve, but not across measuring processes (side by side over 3" in n for n in undecided.notes
    )
    level = judged(KEY, curve, threshold=0.10, beaten=side_by_side([0.99, 1.0, 1.01], Status.OK))
    assert (level.status, level.failed) == (Status.OK, False)


def test_a_best_count_within_the_threshold_passes_and_says_what_it_did_not_compare() -> None:
    curve = Curve(1, {1: rounds(10.0), 2: rounds(9.5)})
    result = judged(KEY, curve, threshold=0.10, not_compared="never recorded")
    assert (result.status, result.failed) == (Status.OK, False)
    assert "the best count is not compared with a recorded reference: never recorded" in result.notes


def side_by_side(offsets: Sequence[float], status: Status) -> LatencyResult:
    """What the side-by-side rule across measuring processes (``kinds/side_by_side.py``) returns for
    the best count against the recorded reference: one unit a process, each with its change."""
    units = [
        UnitRounds(f"pid {n}", 1, tuple(round(1e6 * ratio) for _ in range(8)), (1_000_000,) * 8, (True,) * 8)
        for n, ratio in enumerate(offsets)
    ]
    comparison, interval = judge_units(units, threshold=0.10, confidence=0.99, look=1, looks=1)
    stats = summarize([1_000_000] * 6, [2, 2, 2])
    measured = AcrossProcesses(tuple(units), comparison, interval, (len(units),), stats, stats)
    return LatencyResult(
        key=KEY, status=status, current=stats, comparison=comparison, mode="a/b", reference=stats,
        reference_label="the recorded model (git abc)", processes=measured,
    )  # fmt: skip


def test_the_best_count_slower_than_the_recorded_reference_side_by_side_fails() -> None:
    curve = Curve(1, {1: rounds(8.0), 2: rounds(9.0)})
    result = judged(
        KEY, curve, threshold=0.10, against=side_by_side([1.59, 1.6, 1.61, 1.6], Status.REGRESSION)
    )
    assert result.status is Status.REGRESSION
    assert (
        "the best setting's latency regressed: best count 1 against the recorded model (git abc): +60.0%"
    ) in result.message
    assert "(over 4 measuring processes)" in result.message
    assert judged(KEY, curve, threshold=0.10, against=side_by_side([1.0] * 4, Status.OK)).status is Status.OK


def test_a_best_count_regression_its_processes_cannot_decide_is_inconclusive() -> None:
    """Processes that disagree are samples of one estimate (issue 57): undecided, the threads check
    passes as inconclusive and says how many processes it measured."""
    curve = Curve(1, {1: rounds(8.0), 2: rounds(9.0)})
    apart = side_by_side([0.9, 1.3, 1.1], Status.INCONCLUSIVE)
    result = judged(KEY, curve, threshold=0.10, against=apart)
    assert (result.status, result.failed) == (Status.INCONCLUSIVE, False)
    assert any("undecided after 3 measuring processes" in note for note in result.notes), result.notes


def test_a_recorded_curve_is_shown_never_judged() -> None:
    recorded = Curve(1, {1: rounds(1.0), 2: rounds(1.2)}).part()  # ten times faster than now
    result = judged(KEY, Curve(1, {1: rounds(10.0), 2: rounds(12.0)}), threshold=0.10, stored=recorded)
    assert result.status is Status.OK
    assert any(
        note.startswith("recorded curve on this hardware (shown, not judged): 1: 1 ms")
        for note in result.notes
    )


def test_the_loop_interleaves_every_count_in_each_round_and_gives_each_its_round_medians() -> None:
    calls: list[int] = []
    ticks = itertools.count(step=1_000_000)  # 1 ms a clock reading
    runs = {n: (lambda n=n: calls.append(n)) for n in (1, 2, 3)}
    medians = measure_curve(runs, budget_s=0.0, rounds=5, clock=lambda: next(ticks))
    assert {n: len(values) for n, values in medians.items()} == {1: 5, 2: 5, 3: 5}
    timed = calls[9:]  # after 3 warm-up runs of each count
    for start in range(0, len(timed), 3):
        assert sorted(timed[start : start + 3]) == [1, 2, 3]  # each round runs every count once
