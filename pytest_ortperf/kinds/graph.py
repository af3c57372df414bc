"""The graph kind, as it is registered: its name, its mode (``--ortperf-graph``), its threshold
keyword (``ort_thresholds(graph=...)``: a mode, or pinned op counts), baseline part, terminal table,
record, JUnit properties and drawing. Its check (``graph_check.py``) is loaded when a test first runs
it."""

from __future__ import annotations

from pytest_ortperf import defaults
from pytest_ortperf.gate.registry import CheckKind, KindOption
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import TerminalTable

DIFF = "pytest_ortperf.graph.diff"
KEYWORD = "graph"  # its ort_thresholds(...) keyword: a mode, or pinned op counts

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
    options=(
        KindOption(
            "",
            "What change of a variant's optimized graph fails a graph check: 'fusions' (a lost fusion, "
            "nodes moving off the requested provider, new copy nodes between providers; other changes "
            "inform), 'exact' (any change) or 'off' (none; the graph is still reported). "
            f"Default: {defaults.GRAPH_MODE}.",
            defaults.GRAPH_MODE,
            parse=later(DIFF, "mode_option"),
            metavar="MODE",
        ),
    ),
    thresholds=(KEYWORD,),
    threshold_parse=later(DIFF, "graph_threshold"),
    threshold_merge=later(DIFF, "merged_limits"),
)
