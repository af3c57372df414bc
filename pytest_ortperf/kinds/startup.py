"""The start-up check: session creation and the first run, in fresh worker processes, both sides'
processes interleaved, on the routes of the latency check (``kinds/fresh_processes.py``); the figures and
their rule: ``footprint/startup_figures.py``."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_ortperf.checks.footprint_verdicts import STARTUP, PartFigures
from pytest_ortperf.footprint import startup_figures as startup
from pytest_ortperf.footprint.comparison import FigureComparison
from pytest_ortperf.footprint.startup_figures import StartupFigures, compare_startup
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.kinds.fresh_processes import FootprintCheck
from pytest_ortperf.ort.workers import Footprint


class StartupCheck(FootprintCheck):
    """``check_startup()``: timed, so it holds the run's timing lock while it measures."""

    kind = STARTUP
    processes = startup.PROCESSES
    glance_processes = startup.GLANCE_PROCESSES
    timed = True
    verdict_property, figures_property = "ortperf_startup_verdict", "ortperf_startup"

    def figures(self, footprints: Sequence[Footprint]) -> PartFigures:
        return StartupFigures.of(footprints)

    def compare(self, before: PartFigures, after: PartFigures, target: CheckTarget) -> list[FigureComparison]:
        assert isinstance(before, StartupFigures)
        assert isinstance(after, StartupFigures)
        return compare_startup(before, after, threshold=target.policy.startup_threshold)
