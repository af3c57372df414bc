"""The latency kind, as it is registered: its name, baseline part, terminal table, record, row,
pytest-benchmark entry and drawing. Its check (``latency_check.py``) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import LATENCY_TABLE

CHECK = "pytest_ortperf.kinds.latency_check"

KIND = CheckKind(
    name="latency",
    make=later(CHECK, "LatencyCheck"),
    summary="run time of ort_session, side by side with the recorded reference rebuilt, or stored figures",
    default=True,
    timed=True,
    part="latency",
    part_decoder=later("pytest_ortperf.checks.latency_figures", "LatencyFigures.from_dict"),
    not_timed=later("pytest_ortperf.checks.latency_verdicts", "not_timed"),
    record=later(CHECK, "record"),
    row=later("pytest_ortperf.reports.terminal", "latency_row"),
    table=LATENCY_TABLE,
    benchmark=later(CHECK, "row_medians"),
    properties=later(CHECK, "properties"),
    drawing=later("pytest_ortperf.reports.html.checks", "draw_latency"),
)
