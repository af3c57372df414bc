"""Start-up figures: what is stored and how two sets of fresh processes compare."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from pytest_ortperf.footprint.comparison import worst
from pytest_ortperf.footprint.startup_figures import StartupFigures, compare_startup
from pytest_ortperf.latency.decision import Verdict


def figures(create: list[float], first: list[float] | None = None) -> StartupFigures:
    first = first or [0.3] * len(create)
    return StartupFigures(tuple(create), tuple(first), tuple(0.05 for _ in create))


BASE = [8.1, 8.4, 8.2, 8.9, 8.3, 8.6, 8.0]


def test_the_same_start_up_is_not_a_regression() -> None:
    compared = compare_startup(figures(BASE), figures([v * 1.03 for v in reversed(BASE)]))
    assert [c.figure for c in compared] == ["session creation", "first run"]
    assert worst(compared) in (Verdict.OK, Verdict.INCONCLUSIVE)


def test_a_session_that_takes_twice_as_long_to_create_regresses() -> None:
    compared = compare_startup(figures(BASE), figures([v * 2 for v in BASE]))
    assert compared[0].verdict is Verdict.REGRESSION
    assert worst(compared) is Verdict.REGRESSION
    assert compared[0].describe().startswith("+100.0% (8.3 ms -> 16.6 ms)")
    assert "over 7 vs 7 processes" in compared[0].rule


def test_a_slower_first_run_alone_regresses() -> None:
    compared = compare_startup(figures(BASE, [0.3] * 7), figures(BASE, [0.9] * 7))
    assert [c.verdict for c in compared][1] is Verdict.REGRESSION


def test_a_threshold_wider_than_the_change_passes() -> None:
    compared = compare_startup(figures(BASE), figures([v * 1.5 for v in BASE]), threshold=0.8)
    assert worst(compared) in (Verdict.OK, Verdict.INCONCLUSIVE)


def test_figures_of_fresh_processes_and_their_engine_cache() -> None:
    prints = [
        SimpleNamespace(create_s=0.008, first_run_s=0.0003, steady_run_s=0.00005, engine_cache="hit"),
        SimpleNamespace(create_s=0.010, first_run_s=0.0004, steady_run_s=0.00005, engine_cache="miss"),
    ]
    made = StartupFigures.of(prints)
    assert made.create_ms == pytest.approx((8.0, 10.0))
    assert made.engine_cache == "mixed"
    assert made.first_run_factor == pytest.approx(7.0)
    assert made.cache == ("hit", "miss")
    assert made.warm_misses() == [2]
    assert made.describe().endswith("warm start missed its cache in process 2")


def test_a_cold_first_process_then_warm_ones_is_no_miss() -> None:
    """The first process compiles into an empty cache of its own; the second may fill the configured
    one (a cold start too); a third that compiles again missed it."""
    made = StartupFigures(
        (90.0, 80.0, 9.0), (0.3,) * 3, (0.05,) * 3, engine_cache="mixed", cache=("cold", "miss", "hit")
    )
    assert made.warm_misses() == []
    assert (
        made.cache_text() == "compile cache: cold in 2 of 3 processes (compiled), warm in 1 (loaded from it)"
    )
    assert made.cache_text() in made.lines()
    missed = replace(made, cache=("cold", "hit", "miss"))
    assert missed.warm_misses() == [3]
    assert missed.cache_text().endswith(
        "cold in 1 of 3 processes (compiled), warm in 1 (loaded from it); warm start missed its cache in process 3"
    )
    unused = replace(made, cache=("unused", "hit", "hit"))
    assert unused.cache_text() == "compile cache unused: a process given an empty one wrote nothing there"


def test_without_a_compile_cache_nothing_is_said_of_one() -> None:
    prints = [SimpleNamespace(create_s=0.008, first_run_s=0.0003, steady_run_s=0.00005, engine_cache="")]
    made = StartupFigures.of(prints)
    assert (made.engine_cache, made.cache, made.cache_text()) == ("", (), "")
    assert "cache" not in made.describe()
    assert "cache" not in made.as_dict()


def test_figures_round_trip_and_damaged_ones_are_refused() -> None:
    made = StartupFigures((8.0, 9.0), (0.3, 0.4), (0.05, 0.05), engine_cache="hit", cache=("cold", "hit"))
    assert StartupFigures.from_dict(made.as_dict()) == made
    older = {k: v for k, v in made.as_dict().items() if k != "cache"}  # recorded before per-process states
    assert StartupFigures.from_dict(older).cache_text() == "compile cache hit"
    good = made.as_dict()
    for damaged in (
        {k: v for k, v in good.items() if k != "create_ms"},
        {**good, "create_ms": []},
        {**good, "create_ms": [1.0]},  # one value where the others have two
        {**good, "first_run_ms": [-1.0, 1.0]},
        {**good, "steady_run_ms": ["x", 1.0]},
        {**good, "engine_cache": 3},
        {**good, "cache": ["hit"]},  # one state where there are two processes
        {**good, "cache": ["hit", "warm"]},
        "create",
    ):
        with pytest.raises((KeyError, TypeError, ValueError)):
            StartupFigures.from_dict(damaged)


def test_worst_of_several_figures() -> None:
    def c(verdict: Verdict) -> SimpleNamespace:
        return SimpleNamespace(verdict=verdict)

    assert worst([c(Verdict.OK), c(Verdict.REGRESSION), c(Verdict.IMPROVED)]) is Verdict.REGRESSION  # type: ignore[list-item]
    assert worst([c(Verdict.OK), c(Verdict.INCONCLUSIVE)]) is Verdict.INCONCLUSIVE  # type: ignore[list-item]
    assert worst([c(Verdict.OK)]) is Verdict.OK  # type: ignore[list-item]
