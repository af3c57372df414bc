"""A side-by-side verdict that holds across processes: the combination rule on pure data, and
check_ab measuring a first regression or improvement again in new processes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from pytest_ortperf.checks.latency_verdicts import (
    NEW_PROCESSES,
    across_processes,
    check_ab,
    settle_across,
    sizes_differ,
)
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.latency.decision import Comparison, RatioEstimate, Verdict, decide
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import PairedRounds
from pytest_ortperf.latency.stats import NS_PER_MS, summarize
from pytest_ortperf.reports.ci_files import latency_record
from pytest_ortperf.reports.terminal import latency_row, latency_table
from pytest_ortperf.store.keys import CheckKey

THRESHOLD = 0.10
POLICY = CheckPolicy(ab_threshold=THRESHOLD, ab=MeasureSettings(budget_s=1.5))
KEY = CheckKey(
    test_file="tests/test_bert.py",
    test="test_bert[cpu-all]",
    variant="cpu-all",
    machine="ci",
    record_command="ortperf update 'tests/test_bert.py::test_bert[cpu-all]'",
)
LABEL = "the recorded model (git 1a2b3c4d5e6f)"


def comparison(ratio: float, low: float, high: float, threshold: float = THRESHOLD) -> Comparison:
    estimate = RatioEstimate(ratio, low, high, 0.99)
    return Comparison(estimate, threshold, decide(estimate, threshold), mode="a/b")


# The int8 BERT against its fp32 reference in issue 47: 1.153 (1.127 .. 1.190) in one process,
# 1.073 (1.056 .. 1.096) in another, each "significant".
SLOW_PROCESS = comparison(1.153, 1.127, 1.190)
FAST_PROCESS = comparison(1.073, 1.056, 1.096)


def test_the_issue_47_processes_give_two_verdicts_each_on_its_own() -> None:
    assert (SLOW_PROCESS.verdict, FAST_PROCESS.verdict) == (Verdict.REGRESSION, Verdict.OK)


@pytest.mark.parametrize(("first", "second"), [(SLOW_PROCESS, FAST_PROCESS), (FAST_PROCESS, SLOW_PROCESS)])
def test_two_processes_that_give_different_verdicts_are_inconclusive_whichever_came_first(
    first: Comparison, second: Comparison
) -> None:
    why = across_processes(first, second)
    assert why == f"the first said {first.verdict.value}, the second {second.verdict.value}"
    assert settle_across(first, second, POLICY) == (Status.INCONCLUSIVE, False, why)


def test_a_regression_then_an_improvement_is_inconclusive_never_either() -> None:
    slower, faster = comparison(1.12, 1.11, 1.13), comparison(0.88, 0.87, 0.89)
    assert settle_across(slower, faster, POLICY) == (
        Status.INCONCLUSIVE,
        False,
        "the first said regression, the second improved",
    )


def test_the_same_verdict_at_sizes_whose_intervals_do_not_meet_still_holds_and_says_so() -> None:
    """A model four times slower measured +245% in one process and +358% in others: the process
    state moved the size, not the verdict; inconclusive would pass it."""
    first, second = comparison(3.446, 3.229, 3.558), comparison(4.583, 4.314, 4.782)
    assert sizes_differ(first, second)
    assert settle_across(first, second, POLICY) == (Status.REGRESSION, True, "")


@pytest.mark.parametrize(
    ("first", "second", "status", "failed"),
    [
        (comparison(1.15, 1.13, 1.19), comparison(1.17, 1.14, 1.20), Status.REGRESSION, True),
        (comparison(1.15, 1.13, 1.19), comparison(1.30, 1.26, 1.34), Status.REGRESSION, True),
        # Intervals that only touch still meet.
        (comparison(1.15, 1.13, 1.19), comparison(1.21, 1.19, 1.24), Status.REGRESSION, True),
        (comparison(0.85, 0.83, 0.87), comparison(0.86, 0.84, 0.88), Status.IMPROVED, False),
    ],
)
def test_two_processes_that_agree_make_the_verdict(
    first: Comparison, second: Comparison, status: Status, failed: bool
) -> None:
    assert settle_across(first, second, POLICY) == (status, failed, "")


def test_an_improvement_that_holds_fails_only_when_asked() -> None:
    faster = comparison(0.85, 0.83, 0.87)
    strict = CheckPolicy(ab_threshold=THRESHOLD, fail_on_improvement=True)
    assert settle_across(faster, faster, strict) == (Status.IMPROVED, True, "")


# --- check_ab with a confirmation in new processes ------------------------------------------------


def paired(factor: float, *, seed: int, noise: float = 0.005, rounds: int = 40) -> PairedRounds:
    rng = np.random.default_rng(seed)
    reference = 5.0 * np.exp(rng.normal(0.0, noise, rounds))
    current = factor * 5.0 * np.exp(rng.normal(0.0, noise, rounds))

    def stats(values: np.ndarray) -> object:
        return summarize([int(v * NS_PER_MS) for v in values for _ in range(3)], [3] * rounds)

    order = tuple(bool(b) for b in rng.integers(0, 2, rounds))
    return PairedRounds(stats(current), stats(reference), order)  # type: ignore[arg-type]


def first_side() -> None:
    pass


def second_side() -> None:
    pass


def check(*measurements: PairedRounds, policy: CheckPolicy = POLICY) -> tuple[list[object], object]:
    """check_ab on prepared measurements; which sides each measured, and the result."""
    given = list(measurements)
    measured: list[object] = []

    def measure(current: object, reference: object, settings: MeasureSettings) -> PairedRounds:
        measured.append(current)
        return given.pop(0)

    def in_new_processes() -> tuple[Callable[[], object], Callable[[], object]]:
        return second_side, second_side

    result = check_ab(
        first_side, first_side, key=KEY, label=LABEL, policy=policy, measure_fn=measure,
        fresh_pair=in_new_processes, randomised=True, confirm_in=NEW_PROCESSES,
    )  # fmt: skip
    return measured, result


def test_a_first_regression_measured_again_in_new_processes_that_disagree_is_inconclusive_with_both_figures() -> None:
    measured, result = check(paired(1.16, seed=1), paired(1.07, seed=2))
    assert measured == [first_side, second_side]
    assert result.status is Status.INCONCLUSIVE  # type: ignore[attr-defined]
    assert not result.failed  # type: ignore[attr-defined]
    first, second = result.comparison, result.confirmation  # type: ignore[attr-defined]
    assert (first.verdict, second.verdict) == (Verdict.REGRESSION, Verdict.OK)
    assert result.change == (  # type: ignore[attr-defined]
        f"processes disagree (the first said regression, the second ok): {first.estimate.describe()} "
        f"regression, then {second.estimate.describe()} ok in {NEW_PROCESSES}"
    )
    record = latency_record(result, "tests/test_bert.py::test_bert[cpu-all]")  # type: ignore[arg-type]
    assert record["verdict"] == "inconclusive"
    assert record["confirmation"]["confirmed"] is False
    assert record["confirmation"]["processes"] == NEW_PROCESSES
    assert record["confirmation"]["disagreement"] == "the first said regression, the second ok"
    assert record["confirmation"]["first_change"]["ratio"] == pytest.approx(first.estimate.ratio)
    assert record["change"]["ratio"] == pytest.approx(second.estimate.ratio)  # both figures in the record
    assert record["decided_by"].endswith(f"; measured again in {NEW_PROCESSES}")


def test_a_regression_far_beyond_the_threshold_is_still_measured_again_in_new_processes() -> None:
    """No clear-margin shortcut: a process can move a ratio further than any pair of sessions."""
    measured, result = check(paired(1.5, seed=3), paired(1.5, seed=4))
    assert measured == [first_side, second_side]
    assert (result.status, result.failed) == (Status.REGRESSION, True)  # type: ignore[attr-defined]
    assert result.confirmation_skipped == ""  # type: ignore[attr-defined]
    assert f"(confirmed by a second in {NEW_PROCESSES})" in result.message  # type: ignore[attr-defined]


def test_an_improvement_is_measured_again_in_new_processes_too() -> None:
    measured, result = check(paired(0.8, seed=5), paired(1.0, seed=6))
    assert measured == [first_side, second_side]
    assert result.status is Status.INCONCLUSIVE  # type: ignore[attr-defined]
    assert result.disagreement == "the first said improved, the second ok"  # type: ignore[attr-defined]


def test_a_regression_held_at_another_size_says_both_sizes() -> None:
    _, result = check(paired(1.3, seed=8), paired(1.6, seed=9))
    assert (result.status, result.failed) == (Status.REGRESSION, True)  # type: ignore[attr-defined]
    first = result.comparison.estimate.describe()  # type: ignore[attr-defined]
    assert result.change.endswith(f" (first {first}: the size differs between processes)")  # type: ignore[attr-defined]
    record = latency_record(result, "tests/test_bert.py::test_bert[cpu-all]")  # type: ignore[arg-type]
    assert (record["confirmation"]["confirmed"], record["confirmation"]["sizes_differ"]) == (True, True)


def test_an_ok_first_measurement_is_not_measured_again() -> None:
    measured, result = check(paired(1.0, seed=7))
    assert measured == [first_side]
    assert (result.status, result.confirmed_in) == (Status.OK, "")  # type: ignore[attr-defined]


def test_the_summary_counts_checks_the_processes_disagreed_on_apart_from_noisy_ones() -> None:
    _, disagreed = check(paired(1.16, seed=1), paired(1.07, seed=2))
    _, noisy = check(paired(1.1, seed=10, noise=0.5, rounds=12))
    assert (disagreed.status, noisy.status) == (Status.INCONCLUSIVE, Status.INCONCLUSIVE)  # type: ignore[attr-defined]
    records = [latency_record(r, f"t.py::test_{i}[cpu-all]") for i, r in enumerate((disagreed, noisy))]  # type: ignore[arg-type]
    lines = latency_table([latency_row(r) for r in records], "ci", missing=0)
    assert (
        "1 check(s) inconclusive because two processes disagreed: the first measurement's verdict did not "
        "hold in new worker processes (both figures in the change); the state of a process, not the models, "
        "decided, so more time in one process would not settle it."
    ) in lines
    assert any(line.startswith("1 check(s) inconclusive: the noise could not rule out") for line in lines)
