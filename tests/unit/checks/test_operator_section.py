"""The operator-level section of a failed latency check: where it goes, what it says, on every route."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_ab, check_latency, explained
from pytest_ortperf.checks.paths import choose
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import PairedRounds, Side
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.reports.ci_files import latency_record
from pytest_ortperf.store.baselines import BaselineStore, EntryState
from tests.unit.checks.test_latency import (
    ENV,
    KEY,
    MEASURE,
    RECORD,
    TEST,
    TEST_FILE,
    FakeMeasure,
    entry_of,
    stats,
)
from tests.unit.latency.test_paired import paired

CPU = "CPUExecutionProvider"
SMALL = OpProfile(5, {"MatMul": (100.0, 2)}, {f"mm{i}": ("MatMul", CPU, 50.0) for i in range(2)})
BIG = OpProfile(5, {"MatMul": (400.0, 8)}, {f"mm{i}": ("MatMul", CPU, 50.0) for i in range(8)})
SECTION = "  at operator level (profiled runs of both sides):"


def ab_result(factor: float, *, accept: str = "", **policy: Any) -> LatencyResult:
    """A side-by-side check whose current side is ``factor`` times the reference's time."""

    def measure(current: Side, reference: Side, settings: MeasureSettings) -> PairedRounds:
        return paired(factor, 0.01)

    return check_ab(
        lambda: None,
        lambda: None,
        key=KEY,
        label="the recorded model (git 123456789abc)",
        policy=CheckPolicy(measure=MEASURE, sequential=False, **policy),
        measure_fn=measure,
        accept=accept,
    )


def profiles(before: OpProfile, after: OpProfile) -> Callable[[], tuple[OpProfile, OpProfile]]:
    return lambda: (before, after)


def test_the_section_goes_before_the_line_that_accepts_the_new_latency() -> None:
    result = ab_result(2.0, accept=RECORD)
    assert result.failed
    lines = explained(result, "profiled runs of both sides", profiles(SMALL, BIG)).message.splitlines()
    at = lines.index(SECTION)
    assert lines[at + 1].startswith(
        "    op types whose time grew most: MatMul 0.100 -> 0.400 ms/run (+300%, 100% of the change)"
    )
    assert lines[at + 2].startswith("    nodes whose time grew most: ")
    assert "mm2 0.000 -> 0.050 ms/run (new, " in lines[at + 2]
    assert lines[at + 3] == "    node count per op type changed after optimization: MatMul 2 -> 8"
    assert lines[-1] == f"  to accept the new latency: {RECORD}"
    assert at == len(lines) - 5


def test_without_a_line_that_accepts_it_the_section_ends_the_message() -> None:
    result = ab_result(2.0)
    lines = explained(result, "profiled runs of both sides", profiles(SMALL, BIG)).message.splitlines()
    assert lines[-4] == SECTION
    assert lines[-1] == "    node count per op type changed after optimization: MatMul 2 -> 8"


def test_a_result_that_passed_is_not_profiled() -> None:
    result = ab_result(1.0, threshold=0.5)
    assert not result.failed

    def never() -> tuple[OpProfile, OpProfile]:
        raise AssertionError("a check that passed pays for no profile")

    assert explained(result, "x", never) is result


def test_a_failure_on_an_improvement_says_what_fell() -> None:
    result = ab_result(0.5, fail_on_improvement=True)
    assert result.failed
    lines = explained(result, "profiled runs of both sides", profiles(BIG, SMALL)).message.splitlines()
    at = lines.index(SECTION)
    assert lines[at + 1].startswith(
        "    op types whose time fell most: MatMul 0.400 -> 0.100 ms/run (-75%, 100% of the change)"
    )
    assert "mm2 0.050 -> 0.000 ms/run (gone, " in lines[at + 2]
    assert lines[at + 3] == "    node count per op type changed after optimization: MatMul 8 -> 2"


def test_identical_profiles_say_nothing_changed_at_operator_level() -> None:
    lines = explained(ab_result(2.0), "p", profiles(SMALL, SMALL)).message.splitlines()
    assert lines[-1] == "    no op type, node, provider or node count changed beyond run-to-run noise"


def test_profiled_runs_that_read_against_the_measurement_are_taken_again_and_keep_the_fastest() -> None:
    """A neighbour ran through the reference's profiled turns: it read slower than the current side
    of a regression. The second profiling reads it as it is, and each side keeps its fastest."""
    slow_reference = OpProfile(
        5, {"MatMul": (900.0, 2)}, {f"mm{i}": ("MatMul", CPU, 450.0) for i in range(2)}
    )
    taken = iter([(slow_reference, BIG), (SMALL, BIG)])
    calls: list[int] = []

    def in_turn() -> tuple[OpProfile, OpProfile]:
        calls.append(1)
        return next(taken)

    lines = explained(ab_result(2.0), "p", in_turn).message.splitlines()
    assert len(calls) == 2
    assert any("MatMul 0.100 -> 0.400 ms/run (+300%" in line for line in lines)
    assert not any("read with care" in line for line in lines)


def test_profiled_runs_that_agree_with_the_measurement_are_taken_once() -> None:
    calls: list[int] = []

    def in_turn() -> tuple[OpProfile, OpProfile]:
        calls.append(1)
        return SMALL, BIG

    explained(ab_result(2.0), "p", in_turn)
    assert len(calls) == 1


def test_profiled_runs_that_read_against_it_twice_say_so() -> None:
    lines = explained(ab_result(2.0, accept=RECORD), "p", profiles(BIG, SMALL)).message.splitlines()
    assert lines[-2] == (
        "    read with care: the profiled runs, taken twice, still read faster in total than the reference"
        " (0.400 -> 0.100 ms/run) where the measurement decided otherwise; the machine was busier while"
        " one side was profiled"
    )
    assert lines[-1] == f"  to accept the new latency: {RECORD}"


@pytest.mark.parametrize("error", [OrtperfError("the run failed"), OSError("disk full")])
def test_profiled_runs_that_fail_never_hide_the_verdict(error: Exception) -> None:
    def failing() -> tuple[OpProfile, OpProfile]:
        raise error

    result = explained(ab_result(2.0, accept=RECORD), "p", failing)
    lines = result.message.splitlines()
    assert lines[0].startswith(f"latency regression in {TEST}")
    assert lines[-2] == f"    not available: the profiled runs failed ({error})"
    assert lines[-1] == f"  to accept the new latency: {RECORD}"


def test_against_stored_figures_an_improvement_failure_is_explained_too(tmp_path: Path) -> None:
    root = tmp_path / "baselines"
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, profile=BIG))
    store.write()
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    result = check_latency(
        lambda: None,
        key=KEY,
        plan=choose(entry, ENV, KEY.machine, update=False),
        entry=EntryState(),
        policy=CheckPolicy(measure=MEASURE, fail_on_improvement=True),
        environment=ENV,
        today="2025-06-01",
        measure_fn=FakeMeasure(stats(7.0, seed=2)),
        explain_fn=lambda: SMALL,
    )
    assert result.failed
    lines = result.message.splitlines()
    assert "  at operator level (profiled runs vs the baseline's):" in lines
    assert any(line.startswith("    op types whose time fell most: MatMul") for line in lines)
    assert lines[-1] == f"  to accept the new latency: {RECORD}"


def stored_check(tmp_path: Path, now: float, *, profile: OpProfile | None, explain: Callable[[], OpProfile]):
    root = tmp_path / "baselines"
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, profile=profile))
    store.write()
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    return check_latency(
        lambda: None,
        key=KEY,
        plan=choose(entry, ENV, KEY.machine, update=False),
        entry=EntryState(),
        policy=CheckPolicy(
            measure=MEASURE, threshold=0.10
        ),  # the stored route at the threshold it was validated at
        environment=ENV,
        today="2025-06-01",
        measure_fn=FakeMeasure(stats(now, seed=2), stats(now, seed=3)),  # a regression is confirmed
        explain_fn=explain,
    )


def test_a_passing_check_never_pays_for_profiled_runs(tmp_path: Path) -> None:
    def profiled() -> OpProfile:
        raise AssertionError("a pass must not profile")

    result = stored_check(tmp_path, 10.0, profile=BIG, explain=profiled)
    assert not result.failed
    assert result.explanations == ()
    assert result.operators is None


def test_a_regression_without_ort_profile_is_explained_against_the_stored_profile(tmp_path: Path) -> None:
    result = stored_check(tmp_path, 14.0, profile=SMALL, explain=lambda: BIG)
    assert result.failed
    (title, lines), *_ = result.explanations
    assert title == "at operator level (profiled runs vs the baseline's)"
    assert lines[0].startswith("op types whose time grew most: MatMul")
    assert result.operators is not None
    record = latency_record(result, "t.py::test_squeezenet[cpu-all]")
    assert record["explanations"][0]["title"] == title
    assert record["operators"]["before"] == SMALL.as_dict()


def test_stored_figures_without_a_profile_say_the_cause_is_not_available_and_why(tmp_path: Path) -> None:
    result = stored_check(tmp_path, 14.0, profile=None, explain=lambda: BIG)
    assert result.failed
    assert result.explanations == (
        (
            "at operator level",
            (
                "not available: the stored figures were recorded without an operator profile (a test "
                "marked ort_profile keeps one)",
            ),
        ),
    )
    assert "  at operator level:" in result.message.splitlines()
