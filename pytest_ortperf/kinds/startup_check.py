"""The start-up check: session creation and the first run, in fresh worker processes, both sides'
processes interleaved, on the routes of the latency check (``kinds/fresh_processes.py``); the figures and
their rule: ``footprint/startup_figures.py``."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_ortperf.checks.footprint_verdicts import STARTUP, FootprintResult, PartFigures, not_timed
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.footprint import startup_figures as startup
from pytest_ortperf.footprint.comparison import FigureComparison
from pytest_ortperf.footprint.startup_figures import StartupFigures, compare_startup
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.gate.registry import BenchmarkEntry, Record
from pytest_ortperf.kinds.fresh_processes import FootprintCheck, benchmark_info
from pytest_ortperf.kinds.startup import KIND
from pytest_ortperf.ort.workers import Footprint
from pytest_ortperf.store.keys import CheckKey


class StartupCheck(FootprintCheck):
    """``check_startup()``: timed, so it holds the run's timing lock while it measures."""

    kind = STARTUP
    declaration = KIND
    processes = startup.PROCESSES
    glance_processes = startup.GLANCE_PROCESSES
    timed = True
    cold_first = True
    pair_looks = startup.PAIR_LOOKS

    def figures(self, footprints: Sequence[Footprint]) -> PartFigures:
        return StartupFigures.of(footprints)

    def compare(self, before: PartFigures, after: PartFigures, target: CheckTarget) -> list[FigureComparison]:
        assert isinstance(before, StartupFigures)
        assert isinstance(after, StartupFigures)
        return compare_startup(before, after, threshold=self.threshold(target))

    def compare_pairs(
        self, before: PartFigures, after: PartFigures, target: CheckTarget, *, look: int, looks: int
    ) -> list[FigureComparison]:
        assert isinstance(before, StartupFigures)
        assert isinstance(after, StartupFigures)
        return startup.compare_pairs(
            before,
            after,
            threshold=self.threshold(target),
            confidence=target.policy.confidence,
            look=look,
            looks=looks,
        )


def benchmark_entry(record: Record) -> BenchmarkEntry | None:
    """One pytest-benchmark entry (``<node id>::startup``, group ``ortperf-startup``): a fresh
    process's session creation per round."""
    current = CheckRecord.of(record).current
    if current is None or not current.get("create_ms"):
        return None
    figures = StartupFigures.from_dict(current)
    return BenchmarkEntry(
        round_medians_ms=list(figures.create_ms),
        runs_per_round=1,
        group="ortperf-startup",
        suffix="::startup",
        extra_info={
            **benchmark_info(record),
            "first_run_ms": figures.median("first_run_ms"),
            "steady_run_ms": figures.median("steady_run_ms"),
            **({"engine_cache": figures.engine_cache} if figures.engine_cache else {}),
        },
    )


def not_timed_outcome(key: CheckKey) -> FootprintResult:
    """The outcome of a start-up check under ``--ortperf-timing=off``."""
    return not_timed(STARTUP, key)
