"""The graph kind, as it is registered: its name, baseline part, terminal table, record, JUnit
properties and drawing. Its check (``graph_check.py``) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import TerminalTable

# The graph checks' terminal table.
TABLE = TerminalTable(
    "graphs",
    lambda rows, machine: (
        "graphs (what ONNX Runtime will run for each variant: its optimized graph's nodes and fusions, "
        "compared exactly; side by side: the recorded reference's graph built here)"
    ),
)

KIND = CheckKind(
    name="graph",
    make=later("pytest_ortperf.kinds.graph_check", "GraphCheck"),
    summary="the optimized graph ORT runs (op types, fusions, placement), compared exactly",
    default=True,
    part="graph",
    part_decoder=later("pytest_ortperf.graph.figures", "GraphFigures.from_dict"),
    record=later("pytest_ortperf.reports.ci_files", "footprint_record"),
    table=TABLE,
    properties=later("pytest_ortperf.kinds.fresh_processes", "figures_property"),
    drawing=later("pytest_ortperf.reports.html.checks", "draw_graph"),
)
