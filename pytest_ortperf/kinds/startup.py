"""The start-up kind, as it is registered: its name, option (threshold), threshold keyword, baseline
part, terminal table (memory's), record, JUnit properties, pytest-benchmark entry and drawing. Its
check (``startup_check.py``, measured in fresh processes) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf import defaults
from pytest_ortperf.gate.registry import CheckKind, KindOption
from pytest_ortperf.kinds.memory import FRESH_PROCESSES_TABLE, threshold
from pytest_ortperf.lazy import later

CHECK = "pytest_ortperf.kinds.startup_check"

KIND = CheckKind(
    name="startup",
    make=later(CHECK, "StartupCheck"),
    summary="session creation and the first run, in fresh worker processes",
    timed=True,
    part="startup",
    part_decoder=later("pytest_ortperf.footprint.startup_figures", "StartupFigures.from_dict"),
    not_timed=later(CHECK, "not_timed_outcome"),
    record=later("pytest_ortperf.reports.ci_files", "footprint_record"),
    table=FRESH_PROCESSES_TABLE,
    benchmark=later(CHECK, "benchmark_entry"),
    properties=later("pytest_ortperf.kinds.fresh_processes", "figures_property"),
    drawing=later("pytest_ortperf.reports.html.checks", "draw_startup"),
    options=(
        KindOption(
            "threshold",
            "Slowdown of session creation or of the first run, over fresh processes, that fails a start-up "
            "check when its whole interval lies beyond it "
            f"(default: {defaults.percent(defaults.STARTUP_THRESHOLD)}).",
            defaults.percent(defaults.STARTUP_THRESHOLD),
            parse=threshold,
        ),
    ),
    thresholds=("startup",),
    threshold_parse=threshold,
)
